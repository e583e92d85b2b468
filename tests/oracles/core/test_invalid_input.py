"""One table of invalid oracle input: what is passed, the error raised, a fragment of its message.

Each case is refused before any solver work, on every backend it applies to.
"""

from __future__ import annotations

import importlib.util
import math
import re

import numpy as np
import pytest

import cmab_milp as cm

D = 6
ONES = np.ones(D)
EYE = np.eye(D)


def _linear(**kwargs):
    return lambda oracle: oracle.argmax(**{"weights": ONES, **kwargs})


def _norm(**kwargs):
    return lambda oracle: oracle.argmax_norm(**{"mu": ONES, "M": EYE, "f": 1.0, **kwargs})


def _batch(entry):
    return lambda oracle: oracle.argmax_batch([{"weights": ONES}, entry])


#: (id, call on an oracle of Cardinality(6, 2), error type, message fragment)
INVALID = [
    ("weights-strings", _linear(weights=["1"] * D), ValueError, "weights must be real numbers"),
    ("weights-complex", _linear(weights=ONES + 1j), ValueError, "weights must be real numbers"),
    ("weights-objects", _linear(weights=[1.0, None, 1.0, 1.0, 1.0, 1.0]), ValueError, "weights must be real"),
    ("weights-shape", _linear(weights=np.ones(3)), ValueError, "shape"),
    ("weights-nan", _linear(weights=np.r_[np.ones(5), np.nan]), ValueError, "finite"),
    ("weights-inf", _linear(weights=np.r_[np.ones(5), -np.inf]), ValueError, "finite"),
    ("include-int", _linear(include=3), ValueError, "write include=[3]"),
    ("exclude-int", _linear(exclude=np.int64(2)), ValueError, "sequence of arm indices"),
    ("include-string", _linear(include="12"), ValueError, "sequence of arm indices"),
    ("include-float", _linear(include=[1.5]), ValueError, r"unknown arm 1.5; arms are integer indices"),
    ("include-bool", _linear(include=[True]), ValueError, "integer arm indices"),
    ("include-range", _linear(include=[D]), ValueError, "out of range"),
    ("forbid-int", _linear(forbid_pairs=3), ValueError, "sequence of pairs"),
    ("forbid-same", _linear(forbid_pairs=[(1, 1)]), ValueError, "two different arms"),
    ("forbid-triple", _linear(forbid_pairs=[(1, 2, 3)]), ValueError, "pairs"),
    ("mu-strings", _norm(mu=["0.5"] * D), ValueError, "mu must be real numbers"),
    ("M-complex", _norm(M=EYE * (1 + 1j)), ValueError, "M must be real numbers"),
    ("M-asymmetric", _norm(M=np.triu(np.ones((D, D)))), ValueError, "symmetric"),
    ("mu-shape", _norm(mu=np.ones(D + 1)), ValueError, f"mu must have shape ({D},)"),
    ("mu-nan", _norm(mu=np.r_[np.ones(D - 1), np.nan]), ValueError, "mu and M must be finite"),
    ("mu-inf", _norm(mu=np.r_[np.ones(D - 1), np.inf]), ValueError, "mu and M must be finite"),
    ("mu-overflowing-sum-of-nan", _norm(mu=np.r_[np.full(D - 1, 1e308), np.nan]), ValueError, "must be finite"),
    ("M-shape", _norm(M=np.eye(D + 1)), ValueError, f"M must have shape ({D}, {D})"),
    ("M-nan", _norm(M=np.where(EYE > 0, np.nan, 0.0)), ValueError, "mu and M must be finite"),
    ("M-inf-symmetric", _norm(M=np.full((D, D), np.inf)), ValueError, "mu and M must be finite"),
    ("M-nearly-symmetric", _norm(M=EYE + np.triu(np.full((D, D), 1e-6), 1)), ValueError, "symmetric"),
    ("f-string", _norm(f="1"), ValueError, "f must be a real number"),
    ("f-bool", _norm(f=True), ValueError, "f must be a real number"),
    ("f-negative", _norm(f=-1.0), ValueError, "f must be"),
    ("f-nan", _norm(f=math.nan), ValueError, "f must be"),
    ("sign-true", _norm(sign=True), ValueError, "sign must be"),
    ("sign-string", _norm(sign="1"), ValueError, "sign must be"),
    ("sign-zero", _norm(sign=0), ValueError, "sign must be"),
    ("sign-half", _norm(sign=0.5), ValueError, "sign must be"),
    ("f-inf", _norm(f=math.inf), ValueError, "f must be a finite number"),
    ("carry-dict", _norm(carry={}), ValueError, "carry must be a NormCarry or None"),
    ("hints-one-vector", _norm(hints=np.zeros(D, bool)), ValueError, "not one vector"),
    ("hints-shape", _norm(hints=[np.zeros(D + 1, bool)]), ValueError, "hints[0] must have shape"),
    ("hints-values", _norm(hints=[np.full(D, 2.0)]), ValueError, "hints[0] must hold only 0/1 values"),
    ("batch-kind", _batch({"kind": "cubic", "weights": ONES}), ValueError, "kind must be"),
    ("batch-weights", _batch({"weights": ["a"] * D}), ValueError, "weights must be real numbers"),
    ("batch-unknown-key", _batch({"weights": ONES, "exclude_arms": [1]}), ValueError, "batch query 1"),
]

BACKENDS = ["highs", "enumerate", "combinatorial", "auto", "scip", "pulp:HiGHS"]


def _oracle(backend: str) -> cm.Oracle:
    module = {"scip": "pyscipopt", "pulp:HiGHS": "pulp"}.get(backend)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    return cm.make_oracle(cm.Cardinality(D, 2), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("call", "error", "message"), [pytest.param(*c[1:], id=c[0]) for c in INVALID])
def test_invalid_queries_are_refused(backend: str, call, error: type, message: str) -> None:
    oracle = _oracle(backend)
    with pytest.raises(error, match=re.escape(message)):
        call(oracle)
    assert oracle.ledger.queries == 0  # refused before any work


BAD_TIME_LIMITS = [-1, 0, 0.0, math.nan, math.inf, -math.inf, "10", True]


@pytest.mark.parametrize("backend", ["highs", "scip", "pulp:HiGHS", "pulp:PULP_CBC_CMD"])
@pytest.mark.parametrize("time_limit", BAD_TIME_LIMITS, ids=repr)
def test_time_limits_must_be_positive_and_finite(backend: str, time_limit) -> None:
    """HiGHS ignored -1 and NaN and failed every query with 0: all refused at construction now."""
    if backend != "highs":
        _oracle(backend)  # skips when the solver is missing
    with pytest.raises(ValueError, match="time_limit must be a positive, finite number"):
        cm.make_oracle(cm.Cardinality(D, 2), backend, time_limit=time_limit)


def test_a_valid_time_limit_is_applied() -> None:
    oracle = cm.make_oracle(cm.Cardinality(D, 2), "highs", time_limit=5)
    assert oracle.time_limit == 5.0
    assert oracle.model().h.getOptionValue("time_limit")[1] == 5.0
    assert oracle.argmax(np.arange(D, dtype=float)).astype(int).tolist() == [0, 0, 0, 0, 1, 1]


def test_real_inputs_of_other_types_are_accepted() -> None:
    """Integer and bool arrays, numpy scalars and lists of Python numbers stay accepted."""
    oracle = cm.make_oracle(cm.Cardinality(D, 2), "highs")
    expected = [0, 0, 0, 0, 1, 1]
    assert oracle.argmax(np.arange(D)).astype(int).tolist() == expected
    assert oracle.argmax(list(range(D))).astype(int).tolist() == expected
    assert oracle.argmax(np.arange(D, dtype=np.float32)).astype(int).tolist() == expected
    assert oracle.argmax(np.array([0, 0, 0, 0, 1, 1], bool)).astype(int).tolist() == expected
    answer = oracle.argmax_norm(np.arange(D), EYE, np.float64(0.5), sign=np.int64(-1), include=np.array([0]))
    assert answer[0] and answer.sum() <= 2
