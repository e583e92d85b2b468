"""Random parameter values a problem file asks for (``{ draw = "uniform", seed = 1 }``), by name.

>>> resolve_parameter([0.1, 0.2], "environment.means", "x.toml", 2)
[0.1, 0.2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .limits import Limits
from .registry import check_name
from .schema import ProblemError, Table, check_number, join_key


# ------------------------------------------------------------------- draws
def _bounds(table: Table, low: float, high: float) -> tuple[float, float]:
    low, high = table.number("low", low), table.number("high", high)
    if not low < high:
        raise table.error("high", f"needs low < high, got low={low}, high={high}")
    if not high - low < np.finfo(float).max:
        raise table.error("high", f"high - low must be a finite number, got low={low}, high={high}")
    return low, high


def _draw_uniform(table: Table, d: int) -> np.ndarray:
    low, high = _bounds(table, 0.0, 1.0)
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    return np.random.default_rng(seed).uniform(low, high, size=size)


def _draw_integers(table: Table, d: int) -> np.ndarray:
    """Integers uniform in ``[low, high]`` (both included)."""
    low, high = table.integer("low", 0), table.integer("high")
    if not low <= high:
        raise table.error("high", f"needs low <= high, got low={low}, high={high}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if high - low >= 2**63:
        raise table.error("high", "high - low must be below 2**63")
    return np.random.default_rng(seed).integers(low, high, size=size, endpoint=True)


def _draw_normal(table: Table, d: int) -> np.ndarray:
    """Gaussian values: ``mean`` (default 0) and ``std`` (> 0, default 1)."""
    mean, std = table.number("mean", 0.0), table.number("std", 1.0)
    if not std > 0:
        raise table.error("std", f"must be > 0, got {std}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    return np.random.default_rng(seed).normal(mean, std, size=size)


def _draw_dirichlet(table: Table, d: int) -> np.ndarray:
    """One probability vector per row (``size`` rows, default d): a probability table per arm."""
    alpha = [check_number(a, join_key(table.path("alpha"), k), table.file) for k, a in enumerate(table.array("alpha"))]
    if len(alpha) < 2 or len(alpha) > 10_000:
        raise table.error("alpha", f"needs between 2 and 10000 concentrations, got {len(alpha)}")
    for k, a in enumerate(alpha):
        if not a > 0:
            raise ProblemError(table.file, join_key(table.path("alpha"), k), f"must be > 0, got {a}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if size * len(alpha) > 10**7:
        raise table.error("size", f"{size} rows x {len(alpha)} entries is too many values (more than 10^7)")
    return np.random.default_rng(seed).dirichlet(alpha, size=size)


def _draw_choice(table: Table, d: int) -> np.ndarray:
    """Values picked from ``values`` (numbers), with probabilities ``p`` (default uniform)."""
    values = [
        check_number(v, join_key(table.path("values"), k), table.file) for k, v in enumerate(table.array("values"))
    ]
    if not values:
        raise table.error("values", "needs at least one value")
    p = None
    if "p" in table:
        p = [check_number(v, join_key(table.path("p"), k), table.file) for k, v in enumerate(table.array("p"))]
        if len(p) != len(values) or min(p) < 0 or not np.isclose(sum(p), 1.0):
            raise table.error("p", f"needs {len(values)} probabilities >= 0 summing to 1, got {p}")
        p = np.asarray(p) / sum(p)
    replace = table.boolean("replace", True)
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if not replace and size > len(values):
        raise table.error("size", f"cannot pick {size} of {len(values)} values without replacement")
    return np.random.default_rng(seed).choice(np.asarray(values), size=size, replace=replace, p=p)


#: Random parameter draws ``{ draw = NAME, ..., seed = S }``: name -> ``f(table, d) -> array``.
#: Each draw reads its own keys from ``table`` (and calls ``table.finish()``); its ``size``
#: (default d) is checked against the limits before it is called.
DRAWS: dict[str, Callable[[Table, int], np.ndarray]] = {
    "uniform": _draw_uniform,
    "integers": _draw_integers,
    "normal": _draw_normal,
    "dirichlet": _draw_dirichlet,
    "choice": _draw_choice,
}


def register_draw(name: str, draw: Callable[[Table, int], np.ndarray]) -> None:
    """Make ``{ draw = name, ... }`` call ``draw(table, d)`` (it reads its keys from ``table``)."""
    check_name(name)
    if not callable(draw):
        raise ValueError(f"draw must be a callable, got {type(draw).__name__}")
    DRAWS[name] = draw


def resolve_parameter(value: Any, key: str, file: str, d: int, limits: Limits | None = None) -> Any:
    """A parameter value with every ``{ draw = ... }`` table replaced by its drawn values (a list).

    >>> resolve_parameter({"draw": "uniform", "seed": 7, "size": 2}, "environment.means", "x.toml", 5)
    [0.625095466604667, 0.8972138009695755]
    """
    if isinstance(value, dict) and "draw" in value:
        limits = Limits() if limits is None else limits
        table = Table(dict(value), key, file)
        name = table.string("draw")
        if name not in DRAWS:
            try:
                check_name(name)
            except ValueError as exc:
                raise table.error("draw", f"refused: {exc}") from None
            raise table.error("draw", f"unknown draw {name!r}; expected one of: {', '.join(sorted(DRAWS))}")
        size = value.get("size", d)
        if isinstance(size, int) and not isinstance(size, bool):
            limits.check("draw_size", size, table.path("size") if "size" in value else key, file)
        return np.asarray(DRAWS[name](table, d)).tolist()
    return value
