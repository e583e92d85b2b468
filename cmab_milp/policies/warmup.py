"""Warm-up covers: actions that hold every arm or pair, found with few oracle queries.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

The covariance-adaptive policies start by playing, for every unit (an arm, or a
pair ``(i, j)``), some action that holds it (Algorithm 3's and 4's warm-up).
:func:`unit_cover` asks one query per unit in one batch (one adaptivity round);
:func:`shared_cover` asks only for units no earlier answer holds (any action
holding a unit is a valid warm-up action for it), a few at a time;
:func:`pair_cover` is :func:`unit_cover` over :func:`all_pairs`.

Example
-------
>>> all_pairs(3)
[(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
"""

from __future__ import annotations

import numpy as np

from ..oracles import Oracle
from .base import Index

__all__ = ["all_pairs", "pair_cover", "shared_cover", "unit_cover"]


def all_pairs(d: int) -> list[tuple[int, int]]:
    """The ``d (d + 1) / 2`` pairs ``(i, j)``, ``i <= j``, in the fixed order of the warm-up.

    >>> all_pairs(2)
    [(0, 0), (0, 1), (1, 1)]
    """
    return [(i, j) for i in range(d) for j in range(i, d)]


def unit_cover(index: Index, oracle: Oracle, units: list[tuple[int, ...]]) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """One action per unit that some action holds: the warm-up of a schedule.

    "Any action holding the unit's arms": here the one with the most arms
    (weight 1 on every arm, ``include`` = the unit), all asked in one batch
    (one adaptivity round, ``len(units)`` queries). Units no action holds are
    left out; returns the units kept and their actions.

    >>> import cmab_milp as cm
    >>> from cmab_milp.policies.linear import LinearIndex
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
    >>> units, actions = unit_cover(LinearIndex(3), oracle, [(0,), (1,), (2,)])
    >>> units, actions.sum(axis=1).tolist()
    ([(0,), (1,), (2,)], [2, 2, 2])
    """
    ones = np.ones(index.d)
    answers = index.ask(oracle, [{"kind": "linear", "weights": ones, "include": sorted(set(u))} for u in units])
    kept = [(unit, a) for unit, a in zip(units, answers, strict=True) if a is not None]
    if not kept:
        raise RuntimeError("no feasible action holds any arm: the space has only the empty action")
    return [u for u, _ in kept], np.array([a for _, a in kept], dtype=bool)


def shared_cover(
    index: Index, oracle: Oracle, units: list[tuple[int, ...]], chunk: int = 8
) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Like :func:`unit_cover`, asking only for units no earlier answer holds, and spreading the plays.

    A warm-up round may play *any* action holding its unit, so an earlier
    answer that holds it is already an answer. One pass over ``units``: the
    ones no answer holds yet are asked in batches of ``chunk`` (one adaptivity
    round each) for an action holding them that favours arms in pairs still
    uncovered (weight ``1 +`` that count); a ``None`` answer drops the unit.
    Then each unit gets, among the answers holding it, the one given to the
    fewest units so far, so every pair is played about evenly (the plain cover
    plays many pairs once per pass). Returns the units kept and their actions.

    >>> import cmab_milp as cm
    >>> from cmab_milp.policies.covariance import CovarianceIndex
    >>> oracle = cm.make_oracle(cm.Cardinality(4, 3, exact=True), "enumerate")
    >>> units, actions = shared_cover(CovarianceIndex(4), oracle, all_pairs(4))
    >>> len(units), all(actions[k][list(u)].all() for k, u in enumerate(units)), oracle.ledger.queries < len(units)
    (10, True, True)
    """
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    d = index.d
    held = np.zeros((d, d), bool)  # pairs (and arms, on the diagonal) some answer holds
    answers: list[np.ndarray] = []
    dropped: set[tuple[int, ...]] = set()
    batch: list[tuple[int, ...]] = []

    def ask() -> None:
        weights = 1.0 + (~held).sum(axis=1)
        queries = [{"kind": "linear", "weights": weights, "include": sorted(set(u))} for u in batch]
        for unit, action in zip(batch, index.ask(oracle, queries), strict=True):
            if action is None:
                dropped.add(unit)
            else:
                answers.append(action)
                held[np.ix_(action, action)] = True
        batch.clear()

    for unit in units:
        if not held[np.ix_(unit, unit)].all():
            batch.append(unit)
            if len(batch) >= chunk:
                ask()
    if batch:
        ask()
    kept = [u for u in units if u not in dropped]
    if not kept:
        raise RuntimeError("no feasible action holds any arm: the space has only the empty action")
    table = np.array(answers, dtype=bool)
    plays = np.zeros(len(table), np.int64)
    rows = []
    for unit in kept:
        holding = np.flatnonzero(table[:, list(unit)].all(axis=1))
        k = holding[np.argmin(plays[holding])]
        plays[k] += 1
        rows.append(table[k])
    return kept, np.array(rows, dtype=bool)


def pair_cover(index: Index, oracle: Oracle) -> tuple[list[tuple[int, int]], np.ndarray]:
    """One action per feasible pair ``(i, j)``, ``i <= j``: the warm-up of Algorithms 3 and 4.

    :func:`unit_cover` over :func:`all_pairs` (``d (d + 1) / 2`` queries in one batch).

    >>> import cmab_milp as cm
    >>> from cmab_milp.policies.covariance import CovarianceIndex
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2, exact=True), "enumerate")
    >>> pairs, actions = pair_cover(CovarianceIndex(3), oracle)
    >>> pairs, actions.sum(axis=1).tolist()
    ([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], [2, 2, 2, 2, 2, 2])
    """
    return unit_cover(index, oracle, all_pairs(index.d))  # type: ignore[return-value]
