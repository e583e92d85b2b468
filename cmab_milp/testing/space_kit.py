"""``check_space`` / ``space_checks``: ``contains``, ``enumerate``, ``m`` and the formulation describe one set."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from functools import partial
from typing import Any

import numpy as np

from ..spaces import ActionSpace
from .common import Cases, Check, action_str, describe, run_checks

__all__ = ["SPACE_CASES", "check_space", "space_checks"]

SPACE_CASES = ("enumerate", "contains", "m", "formulation")


def _milp_optimum(space: ActionSpace, weights: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Maximise ``weights @ a`` over the formulation with scipy's MILP, separators as lazy cuts."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, vstack

    form = space.formulation()
    n = form.n_cols
    c = np.zeros(n)
    c[: space.d] = -weights
    integrality = np.r_[np.ones(space.d), form.aux_integer.astype(float)]
    bounds = Bounds(np.r_[np.zeros(space.d), form.aux_lb], np.r_[np.ones(space.d), form.aux_ub])
    a, lo, hi = form.matrix()
    extra: list = []
    for _ in range(500):
        rows = [a] + [csr_matrix((r.coefs, ([0] * len(r.cols), r.cols)), shape=(1, n)) for r in extra]
        lows = np.r_[lo, [r.lb for r in extra]]
        highs = np.r_[hi, [r.ub for r in extra]]
        cons = [LinearConstraint(vstack(rows).tocsr(), lows, highs)] if len(lows) else []
        res = milp(c, integrality=integrality, bounds=bounds, constraints=cons, options={"mip_rel_gap": 0.0})
        if res.status == 2:  # infeasible
            return None
        if res.x is None:
            raise AssertionError(f"scipy.optimize.milp failed on the formulation of {space!r}: {res.message}")
        action = res.x[: space.d] > 0.5
        cuts = form.violated_rows(action)
        if not cuts:
            return -float(res.fun), action
        extra.extend(cuts)
    raise AssertionError(f"the separators of {space!r} did not converge in 500 rounds")


def _space_case(space: ActionSpace, case: str, seed: int, n_weights: int) -> str:
    """Run one case of :func:`check_space`; its outcome."""
    cases = Cases(f"check_space({space!r})", [case], None, SPACE_CASES)
    rng = np.random.default_rng(seed)
    d = space.d
    where = "the space"
    actions = space.enumerate()
    if cases.wanted("enumerate"):
        if actions.dtype != bool or actions.ndim != 2 or actions.shape[1] != d:
            cases.fail("enumerate", where, f"expected a bool (n, {d}) array, got {actions.dtype} {actions.shape}")
        if len(np.unique(actions, axis=0)) != len(actions):
            cases.fail("enumerate", where, "enumerate() lists some action twice")
        for row in actions:
            if not space.contains(row):
                cases.fail("enumerate", where, f"enumerated {action_str(row)} is not contained")
        bound = space.count_upper_bound()
        if bound is not None and bound < len(actions):
            cases.fail("enumerate", where, f"count_upper_bound() = {bound} < {len(actions)} enumerated actions")
        if len(space.arms) != d:
            cases.fail("enumerate", where, f"{len(space.arms)} arm labels for d={d}")
        cases.passed("enumerate")
    listed = {row.tobytes() for row in actions}
    if cases.wanted("contains"):
        if d <= 14:
            grid = np.array(list(itertools.product([False, True], repeat=d)), bool).reshape(-1, d)
        else:
            flips = actions[rng.integers(len(actions), size=min(200, 4 * len(actions)))].copy()
            flips[np.arange(len(flips)), rng.integers(d, size=len(flips))] ^= True
            grid = (
                np.vstack([rng.random((300, d)) < rng.uniform(0.05, 0.5, (300, 1)), flips])
                if len(actions)
                else (rng.random((300, d)) < 0.3)
            )
        for x in grid:
            if space.contains(x) != (x.tobytes() in listed):
                state = "contains() accepts" if space.contains(x) else "contains() refuses"
                cases.fail(
                    "contains",
                    where,
                    f"{state} {action_str(x)}, which enumerate() {'omits' if space.contains(x) else 'lists'}",
                )
        cases.passed("contains")
    if cases.wanted("m"):
        expected = int(actions.sum(axis=1).max()) if len(actions) else 0
        if int(space.m) != expected:
            cases.fail("m", where, f"space.m = {space.m}, but the largest enumerated action has {expected} arms")
        cases.passed("m")
    if cases.wanted("formulation"):
        dense = actions.astype(float)
        weights = [np.ones(d), -np.ones(d)] + [rng.normal(size=d) for _ in range(n_weights)]
        for w in weights:
            found = _milp_optimum(space, w)
            if not len(actions):
                if found is not None:
                    cases.fail("formulation", where, "the formulation has a solution but enumerate() is empty")
                continue
            best = float((dense @ w).max())
            if found is None:
                cases.fail(
                    "formulation",
                    where,
                    f"weights {describe({'w': w})}: formulation infeasible, brute force optimum {best!r}",
                )
            value, action = found
            if abs(value - best) > 1e-7 * (1 + abs(best)) or not space.contains(action):
                cases.fail(
                    "formulation",
                    where,
                    f"weights {describe({'w': w})}: formulation optimum {value!r} "
                    f"at {action_str(action)}, brute force optimum {best!r}",
                )
        cases.passed("formulation")
    return cases.finish()[case]


def space_checks(
    space: ActionSpace,
    *,
    seed: int = 0,
    n_weights: int = 12,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> list[Check]:
    """The cases of :func:`check_space` as ``Check`` s (a name and a callable), one per case.

    >>> import cmab_milp as cm
    >>> [(c.name, c.run()) for c in space_checks(cm.Cardinality(4, 2), include=["m"])]
    [('m', 'passed')]
    """
    if not isinstance(space, ActionSpace):
        raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
    selected = Cases(f"check_space({space!r})", include, exclude, SPACE_CASES).selected
    return [Check(case, partial(_space_case, space, case, seed, n_weights)) for case in selected]


def check_space(space: ActionSpace, **kit: Any) -> dict[str, str]:
    """Check that ``enumerate``, ``contains``, ``m`` and the formulation describe one set (every case runs).

    Keyword arguments as :func:`space_checks`: ``seed``, ``n_weights`` (random weights for the
    formulation case), ``include`` and ``exclude`` (case names of :data:`SPACE_CASES`).

    The space must be small enough to enumerate. ``enumerate``: distinct bool
    rows of width ``d``, each contained; ``contains``: true exactly on those rows
    (every 0/1 vector for ``d <= 14``, else random vectors and one-arm flips of
    the rows); ``m``: the largest row size; ``formulation``: its optimum found
    by ``scipy.optimize.milp`` (with the lazy cuts) equals brute force for
    random weights, and the optimal vector is an action.

    >>> import cmab_milp as cm
    >>> check_space(cm.Cardinality(4, 2).with_constraint([1, 1, 0, 0], "<=", 1))
    {'enumerate': 'passed', 'contains': 'passed', 'm': 'passed', 'formulation': 'passed'}
    """
    return run_checks(f"check_space({space!r})", space_checks(space, **kit))
