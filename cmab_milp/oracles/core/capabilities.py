"""What a backend declares it can do (:class:`Capabilities`), read by ``make_oracle``, ``auto`` and the kits.

>>> Capabilities(norm=False).norm
False
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...spaces.base import ActionSpace

__all__ = ["SCIP_TIME_LIMIT", "Capabilities"]

#: The ``time_limit`` SCIP takes (its ``limits/time``, at most 1e20 seconds), a ``ranges`` entry of the
#: ``scip`` backend and of ``auto``, which may hand its limit to scip; values <= 0 are refused by every
#: backend's own check (:func:`~cmab_milp.oracles.core.option_checks.check_time_limit`).
SCIP_TIME_LIMIT = ("time_limit", -math.inf, 1e20, "SCIP's limits/time")


def _resolve(target: Any) -> Any:
    """A callable given as itself or as ``"module:attr"`` (imported on first use)."""
    if target is None or callable(target):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Capabilities:
    """What a backend answers and accepts; the defaults describe a full exact backend.

    Callables may be given as ``"module:attr"`` strings, imported only when used
    (so a backend is described without importing its solver).

    Parameters
    ----------
    linear, norm:
        Whether it answers ``argmax`` / ``argmax_norm`` queries.
    distribution:
        Whether it answers the general-reward (distribution) index.
    forbid_pairs:
        Whether it answers queries with ``forbid_pairs``.
    time_limit:
        Whether it takes a ``time_limit`` option (seconds per solve).
    exact:
        Whether its answers are optimal within ``tolerance``.
    approximate, approximate_solvers:
        Whether it takes ``gap=`` (the certified approximate mode: answers not
        proven optimal carry a proven ratio, see :mod:`~cmab_milp.oracles.core.pipeline`);
        it needs a solver with a dual bound. ``approximate_solvers`` (with
        ``takes_solver``) names the solvers for which it holds (``None``: all).
    tolerance, norm_tolerance:
        Declared optimality tolerance: an answer's value is at least
        ``optimum - tolerance * (1 + |optimum|)`` (``norm_tolerance``, default
        ``tolerance``, for norm queries).
    accepts:
        ``accepts(space) -> bool``: the spaces it takes (``None``: every space);
        ``spaces`` describes them in words for the refusal message.
    may_decline:
        ``may_decline(space) -> bool`` (or a bool): it may raise
        :class:`~cmab_milp.UnsupportedQuery` for some queries it declares on
        this space (an NP-hard case of a specialised algorithm).
    requires:
        Modules that must be importable.
    takes_solver, solvers:
        Whether ``"name:SOLVER"`` is allowed, and ``solvers() -> list[str]``,
        the solver names usable here (``solver_label`` names them in messages).
    options:
        Keyword options the factory takes; ``None``: read from its signature. Every
        backend also takes the options of :data:`COMMON_OPTIONS`, which :func:`make_oracle`
        applies itself (``workers``: the threads of ``argmax_batch``, see
        :attr:`~cmab_milp.oracles.core.base.Oracle.workers`).
    cost:
        ``cost(space, shape, facts) -> float``: estimated seconds per query
        (``math.inf``: cannot answer), see :mod:`cmab_milp.oracles.core.auto_costs`;
        ``None``: ``auto`` never picks this backend.
    ranges:
        ``(option, low, high, what)``: the values its solver takes for an option it passes on (``what`` names
        the solver's parameter), checked by :func:`make_oracle` and problem-file validation.
    tuning:
        The typed record of its ``tuning=`` option (a class whose ``of(value)`` reads
        ``None``, a record or a mapping of its fields, ``ValueError`` otherwise), e.g.
        :class:`~cmab_milp.oracles.mip.tuning.HighsTuning`; ``None``: no such option.

    Examples
    --------
    >>> from cmab_milp.oracles.core.registry import capabilities
    >>> capabilities("highs").norm, capabilities("ortools").norm, capabilities("ortools").requires
    (True, False, ('ortools',))
    """

    linear: bool = True
    norm: bool = True
    distribution: bool = False
    forbid_pairs: bool = True
    time_limit: bool = False
    exact: bool = True
    approximate: bool = False
    approximate_solvers: tuple[str, ...] | None = None
    tolerance: float = 1e-9
    norm_tolerance: float | None = None
    accepts: str | Callable[[ActionSpace], bool] | None = None
    spaces: str = "every space"
    may_decline: bool | str | Callable[[ActionSpace], bool] = False
    requires: tuple[str, ...] = ()
    takes_solver: bool = False
    solvers: str | Callable[[], Sequence[str]] | None = None
    solver_label: str = ""
    options: tuple[str, ...] | None = None
    cost: str | Callable[..., float] | None = None
    tuning: str | type | None = None
    ranges: tuple[tuple[str, float, float, str], ...] = ()

    def accepts_space(self, space: ActionSpace) -> bool:
        """Whether this backend takes ``space``."""
        check = _resolve(self.accepts)
        return True if check is None else bool(check(space))

    def declines_some(self, space: ActionSpace) -> bool:
        """Whether it may raise ``UnsupportedQuery`` for declared queries on ``space``."""
        flag = self.may_decline
        return bool(_resolve(flag)(space)) if isinstance(flag, str) or callable(flag) else bool(flag)

    def tolerance_for(self, kind: str) -> float:
        """The declared relative tolerance for ``"linear"`` or ``"norm"`` queries."""
        if kind == "norm" and self.norm_tolerance is not None:
            return self.norm_tolerance
        return self.tolerance

    def check_tuning(self, value: Any) -> Any:
        """The backend's tuning record read from ``value`` (``ValueError`` for unknown options or bad values)."""
        record = _resolve(self.tuning)
        if record is None:
            raise ValueError("this backend takes no tuning option")
        return record.of(value)

    def out_of_range(self, options: dict[str, Any]) -> tuple[str, str] | None:
        """``(key, why)`` for the first option whose value the solver does not accept (see ``ranges``), else None.

        Only finite numbers are compared (other values are the backend's own checks to refuse).

        >>> from cmab_milp.oracles.core.registry import capabilities
        >>> capabilities("scip").out_of_range({"time_limit": 1e21})
        ('time_limit', "1e+21 is above 1e+20, the largest value of SCIP's limits/time")
        """
        for key, low, high, what in self.ranges:
            value = options.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                if not low <= value <= high:
                    side = ("above", high, "largest") if value > high else ("below", low, "smallest")
                    return key, f"{value!r} is {side[0]} {side[1]:g}, the {side[2]} value of {what}"
        return None

    def missing_modules(self) -> list[str]:
        return [mod for mod in self.requires if importlib.util.find_spec(mod) is None]
