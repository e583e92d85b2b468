"""``ties="exact"``'s certificates of a unique optimum (``oracles/core/ties_unique.py``): sound, and they fire.

Truth: brute force over every action with exact values (``fractions``): the action of least binary number
``sum_i 2^i x_i`` within ``1e-9 (1 + |best|)`` of the best (the rule of ``"exact"``). Weights: distinct floats
(no tie: the certificates should fire), eighths (equal sums of different weights everywhere: 1 + 3 = 2 + 2), and
distinct floats with a planted equal sum or a planted near tie (a second action within the tolerance, not equal).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm
from cmab_milp.oracles.core.ties_unique import exact_margin, proves_unique, sorted_gap

FAMILIES = ["cardinality", "cardinality-exact", "partition", "graphic", "spanning-trees", "paths-dag"]
FAMILIES += ["matchings-bipartite", "perfect-bipartite", "matchings-general"]


def exact_values(actions: np.ndarray, weights: np.ndarray) -> list[Fraction]:
    return [sum((Fraction(float(w)) for w, h in zip(weights, row, strict=True) if h), Fraction(0)) for row in actions]


def first_within(actions: np.ndarray, values: list[Fraction]) -> tuple:
    best = max(values)
    floor = best - Fraction(1e-9) * (1 + abs(best))
    rows = (tuple(row.tolist()) for row, v in zip(actions, values, strict=True) if v >= floor)
    return min(rows, key=lambda row: sum(1 << i for i, held in enumerate(row) if held))


def planted(rng: np.random.Generator, actions: np.ndarray, kind: int) -> np.ndarray:
    """Kind 0: distinct uniform weights; 1: eighths (signed); 2: the best action's value matched exactly by
    another action (equal sums of different weights); 3: matched within 1e-11 (a near tie inside the tolerance)."""
    d = actions.shape[1]
    if kind == 1:
        return rng.integers(-2, 8, d) / 8
    w = rng.uniform(0.05, 1.0, d)
    if kind in (2, 3):
        values = actions.astype(float) @ w
        order = np.argsort(-values, kind="stable")
        best, other = actions[order[0]], actions[order[1]]
        arm = int(np.flatnonzero(other & ~best)[0]) if (other & ~best).any() else int(np.flatnonzero(best)[0])
        gap = float(sum(Fraction(float(x)) for x in w[best]) - sum(Fraction(float(x)) for x in w[other]))
        w[arm] += gap if other[arm] else -gap  # now both sum to the same (up to one rounding of w[arm])
        if kind == 3:
            w[arm] -= 1e-11 if not other[arm] else -1e-11
    return w


@pytest.mark.parametrize("family", FAMILIES)
def test_exact_answers_are_the_first_within_the_tolerance(family: str) -> None:
    """Every backend's ``"exact"`` answer is the brute-force rule's action; a certificate that holds leaves no
    other action within the tolerance (exact values); untied weights are certified (it fires)."""
    space = SPACES[family]()
    actions = cm.make_oracle(space, "enumerate").actions
    oracles = {b: cm.make_oracle(space, b, ties="exact") for b in ("combinatorial", "enumerate", "auto", "highs")}
    rng = np.random.default_rng(len(family) + 100)
    certified = {b: 0 for b in oracles}
    for k in range(24):
        w = planted(rng, actions, k % 4)
        values = exact_values(actions, w)
        truth = first_within(actions, values)
        for name, oracle in oracles.items():
            answer, ruled = oracle._linear_ruled(oracle.linear_query(w))
            if proves_unique(ruled):
                value = values[[tuple(r.tolist()) for r in actions].index(tuple(answer.tolist()))]
                tol = Fraction(1e-9) * (1 + abs(value))
                others = [v for r, v in zip(actions, values, strict=True) if not np.array_equal(r, answer)]
                assert all(v < value - tol for v in others), (name, k)
                certified[name] += 1
            assert tuple(oracle.argmax(w).tolist()) == truth, (name, k)
    expected = {"combinatorial": 5, "enumerate": 5, "auto": 5, "highs": 0}
    if family == "matchings-general":
        expected.update(combinatorial=0, auto=0)  # no certificate there: the generic shifted solve
    assert all(certified[b] >= n for b, n in expected.items()), certified


def test_near_ties_are_not_certified() -> None:
    """A gap within the margin proves nothing: cardinality with two weights 1e-12 apart at the boundary."""
    space = cm.Cardinality(6, 2)
    oracle = cm.make_oracle(space, "combinatorial", ties="exact")
    w = np.array([0.9, 0.5, 0.5 - 1e-12, 0.1, 0.2, 0.3])
    _, ruled = oracle._linear_ruled(oracle.linear_query(w))
    assert ruled and not proves_unique(ruled)  # the rule's action for "classes", no certificate for "exact"
    assert oracle.argmax(w).nonzero()[0].tolist() == [0, 1]  # 0.9 + 0.5 and 0.9 + (0.5 - 1e-12): the first


@pytest.mark.parametrize(
    ("ranked", "room", "exact", "gap"),
    [
        ([0.75, 0.5, 0.25], 1, False, 0.25),  # swap 0.75 for 0.5
        ([0.75, 0.5, -0.25], 3, False, 0.25),  # room for a third: adding -0.25 loses 0.25
        ([0.75, 0.0], 1, True, 0.75),
        ([0.75, 0.0], 2, False, 0.0),  # an arm of weight 0 is optional: no gap
        ([-0.5, -0.75], 1, False, 0.5),  # nothing held; adding -0.5 loses 0.5
        ([-0.5, -0.75], 1, True, 0.25),  # exactly one: -0.5 against -0.75
    ],
)
def test_sorted_gap_is_the_brute_force_second_best(ranked, room, exact, gap) -> None:
    assert sorted_gap(ranked, room, exact) == gap
    space = cm.Cardinality(len(ranked), room, exact=exact)
    actions = cm.make_oracle(space, "enumerate").actions
    values = sorted(exact_values(actions, np.array(ranked)), reverse=True)
    assert values[0] - values[1] == Fraction(gap)


def test_margin_grows_with_the_weights_and_terms() -> None:
    assert exact_margin(1.0, 10) > 2e-9 and exact_margin(0.0, 0) == 1e-9
