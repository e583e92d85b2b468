"""Oracles: exact restricted argmax over an action space (contract section 2)."""

from .base import Ledger, Oracle, OracleError, UnsupportedQuery, norm_objective
from .registry import (
    BACKENDS,
    Capabilities,
    available_backends,
    capabilities,
    check_backend_name,
    make_oracle,
    register_backend,
)

__all__ = [
    "BACKENDS",
    "Capabilities",
    "Ledger",
    "Oracle",
    "OracleError",
    "UnsupportedQuery",
    "available_backends",
    "capabilities",
    "check_backend_name",
    "make_oracle",
    "norm_objective",
    "register_backend",
]
