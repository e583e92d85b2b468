"""The tie rule on matroids (``oracles/core/ties_matroids.py``): the greedy pass, and the exchanges from any optimum.

Truth: brute force over every action with exact values (``fractions``): among the optimal actions the one of least
binary number ``sum_i 2^i x_i``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm
from cmab_milp.oracles.core.queries import make_restrictions
from cmab_milp.oracles.core.ties import open_arms
from cmab_milp.oracles.core.ties_matroids import exchanges, greedy

POOL = [math.sqrt(p) / 4 for p in (2, 3, 5)]
FAMILIES = ["cardinality", "cardinality-exact", "partition", "graphic", "spanning-trees"]


def optima(actions: np.ndarray, weights, res) -> list[tuple]:
    rows = [tuple(bool(x) for x in row) for row in actions if res.admits(row)]
    values = [sum((Fraction(float(w)) for w, h in zip(weights, row, strict=True) if h), Fraction(0)) for row in rows]
    return [row for row, v in zip(rows, values, strict=True) if v == max(values)] if rows else []


def least_binary(rows: list[tuple]) -> tuple:
    return min(rows, key=lambda row: sum(1 << i for i, held in enumerate(row) if held))


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_and_exchanges_give_the_least_binary_optimum_from_every_optimum(family: str) -> None:
    """Weights from a few values with zeros and negatives, random include / exclude: the greedy pass is the rule's
    action, and so is the end of the exchanges from each optimal action (they keep the value at every move)."""
    space = SPACES[family]()
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(len(family) + 5)
    starts = 0
    for k in range(25):
        weights = rng.choice([*POOL[: 1 + k % 3], 0.0, 0.0, -POOL[2]], size=space.d).tolist()
        arms = rng.permutation(space.d).tolist()
        res = make_restrictions(space.d, arms[:1] if k % 4 == 1 else (), arms[1:3] if k % 4 == 2 else (), ())
        best = optima(actions, weights, res)
        if not best:
            continue
        truth = least_binary(best)
        assert tuple(greedy(space, res, weights)) == truth, k
        for start in best:
            order, classes, _ = open_arms(weights, list(start))
            assert tuple(exchanges(space, res, list(start), order, classes)) == truth, (k, start)
            starts += 1
    assert starts > 40


def test_greedy_refuses_dependent_included_arms() -> None:
    space = cm.Cardinality(4, 1)
    assert greedy(space, make_restrictions(4, (0, 1), (), ()), [0.5, 0.5, 0.5, 0.5]) is None
