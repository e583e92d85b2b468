"""The enumerate backend's answer is the first action of largest portable value (issue 36), then the tie rule.

Its BLAS product only screens: the answer must equal a brute-force argmax over every action's
:func:`cmab_milp.portable.selected_sums` (arm order, left to right), whatever the BLAS kernel,
also where cancelling weights make summation orders disagree in their last bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.portable import selected_sums


def portable_argmax(actions: np.ndarray, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray | None:
    if mask is not None:
        if not mask.any():
            return None
        values = np.where(mask, values, -np.inf)
    return actions[int(np.argmax(values))]


@pytest.mark.parametrize("seed", range(6))
def test_linear_answers_are_the_first_portable_argmax(seed):
    rng = np.random.default_rng(seed)
    space = cm.Cardinality(9, 4)
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    actions = space.enumerate()
    for _ in range(40):
        # magnitudes 1e-3 .. 1e3 with signs, and exact repeats: near-ties and ties everywhere
        weights = rng.choice([-1, 1], 9) * 10.0 ** rng.uniform(-3, 3, 9)
        weights[rng.integers(0, 9, 3)] = weights[0]
        include = [int(rng.integers(9))] if rng.random() < 0.3 else []
        got = oracle.argmax(weights, include=include)
        mask = actions[:, include].all(axis=1) if include else None
        first = portable_argmax(actions, selected_sums(actions, weights), mask)
        assert np.array_equal(got, first_of_equal_value(actions, weights, first, mask))


def first_of_equal_value(actions: np.ndarray, weights: np.ndarray, found: np.ndarray, mask=None) -> np.ndarray:
    """The tie rule (oracles/core/ties.py, ``ties="classes"``) after the portable argmax ``found``: among the
    actions holding the same nonzero weights (the same exact value; their left-to-right sums may differ in
    the last bits), the 0/1 vector of least binary number ``sum_i 2^i x_i``."""
    target = sorted(w for w, h in zip(weights, found, strict=True) if h and w != 0.0)
    ok = np.ones(len(actions), bool) if mask is None else mask
    rows = [
        tuple(row)
        for row, keep in zip(actions, ok, strict=True)
        if keep and sorted(w for w, h in zip(weights, row, strict=True) if h and w != 0.0) == target
    ]
    return np.array(min(rows, key=lambda row: sum(1 << i for i, held in enumerate(row) if held)))


def test_cancelling_weights_are_decided_by_the_left_to_right_sums():
    # 1e16 + 1 + 1 - 1e16 is 0.0 left to right, 2.0 in another order: the portable rule is the left-to-right one
    weights = np.array([1e16, 1.0, 1.0, -1e16, 0.5])
    space = cm.ExplicitActions([[1, 1, 1, 1, 0], [0, 0, 0, 0, 1]])
    for backend in ("enumerate", "combinatorial"):
        got = cm.make_oracle(space, backend, ties="classes").argmax(weights)
        assert got.tolist() == [False, False, False, False, True], backend


def test_norm_answers_are_the_first_portable_argmax():
    rng = np.random.default_rng(3)
    space = cm.Cardinality(8, 3)
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    actions = space.enumerate()
    for _ in range(30):
        mu = rng.normal(size=8) * 10.0 ** rng.uniform(-2, 2)
        B = rng.normal(size=(8, 8))
        M = 0.01 * (B + B.T) + np.diag(rng.uniform(0.1, 1.0, 8))
        f, sign = float(rng.uniform(0, 2)), int(rng.choice([-1, 1]))
        quad = oracle.quadratic_forms(M)
        values = selected_sums(actions, mu) + sign * f * np.sqrt(np.maximum(quad, 0.0))
        assert np.array_equal(oracle.argmax_norm(mu, M, f, sign=sign), portable_argmax(actions, values))


class NoisyProduct:
    """Stands for a BLAS kernel: ``actions @ w`` off by up to the rounding bound of any summation order."""

    def __init__(self, dense: np.ndarray, rng: np.random.Generator):
        self.dense, self.rng = dense, rng

    def __matmul__(self, w: np.ndarray) -> np.ndarray:
        exact = selected_sums(self.dense.astype(bool), w)
        bound = (self.dense.shape[1] - 1) * 2.0**-53 * np.abs(w).sum()  # gamma_(d-1) sum |w|, to first order
        return exact + self.rng.uniform(-bound, bound, len(exact))


@pytest.mark.parametrize("seed", range(4))
def test_any_kernel_within_the_rounding_bound_gives_the_same_answer(seed):
    rng = np.random.default_rng(seed)
    space = cm.Cardinality(7, 3)
    actions = space.enumerate()
    plain, noisy = (
        cm.make_oracle(space, "enumerate", ties="classes"),
        cm.make_oracle(space, "enumerate", ties="classes"),
    )
    noisy._dense = NoisyProduct(noisy._dense, rng)
    for _ in range(50):
        w = np.round(rng.uniform(-1, 1, 7), 1)  # many exact ties, so the noise reorders the BLAS values
        expected = first_of_equal_value(actions, w, portable_argmax(actions, selected_sums(actions, w)))
        assert np.array_equal(plain.argmax(w), expected) and np.array_equal(noisy.argmax(w), expected)
