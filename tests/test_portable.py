"""cmab_milp.portable: fixed-order arithmetic, checked against exact sums and numpy's own results."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from cmab_milp import portable
from cmab_milp.nonlinear.rewards import _integer_power


def left_to_right(values) -> float:
    total = None
    for v in values:
        total = float(v) if total is None else total + float(v)
    return 0.0 if total is None else total


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 65, 300])
def test_sums_are_left_to_right_whatever_the_representation(n):
    rng = np.random.default_rng(n)
    w = rng.normal(size=n) * 10.0 ** rng.uniform(-6, 6, n)
    acts = rng.random((20, n)) < 0.4
    dense = portable.selected_sums(acts, w)
    width = max(1, int(acts.sum(axis=1).max(initial=0)))
    index = np.full((20, width), n)
    for r, row in enumerate(acts):
        index[r, : row.sum()] = np.flatnonzero(row)
    gathered = portable.gathered_sums(index, np.r_[w, 0.0])
    for r, row in enumerate(acts):
        expected = left_to_right(w[row])
        assert dense[r] == expected and gathered[r] == expected and portable.selected_sum(row, w) == expected
    y = rng.normal(size=n)
    assert portable.dot(w, y) == left_to_right(w * y)


def test_products_are_within_the_rounding_bound_of_the_exact_value():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(5, 7)), rng.normal(size=(7, 4))
    got = portable.matmul(A, B)
    for i in range(5):
        for j in range(4):
            exact = sum(Fraction(A[i, k]) * Fraction(B[k, j]) for k in range(7))
            bound = 7 * 2.0**-52 * float(np.abs(A[i]) @ np.abs(B[:, j]))
            assert abs(got[i, j] - float(exact)) <= bound
    G = portable.gram(A)
    assert np.array_equal(G, G.T) and np.allclose(G, A.T @ A, rtol=0, atol=1e-13)
    assert np.allclose(portable.matvec(A, B[:, 0]), A @ B[:, 0], rtol=0, atol=1e-14)


def test_the_symmetric_square_root_squares_back_and_clips_rounding_negatives():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 3))
    S = X @ X.T  # rank 3: PSD and singular
    L = portable.symmetric_sqrt(S)
    assert np.abs(L - L.T).max() < 1e-15 * np.abs(L).max() * 8  # V diag(r) V^T, each entry rounded on its own
    assert np.abs(portable.matmul(L, L) - S).max() < 1e-12 * np.abs(S).max()
    vals, vecs = np.linalg.eigh(S)
    assert np.allclose(L, (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T, atol=1e-7)
    assert np.array_equal(portable.symmetric_sqrt(np.zeros((2, 2))), np.zeros((2, 2)))


def test_log_and_exp_are_the_math_modules():
    x = np.array([[1e-300, 0.5], [1.0, 7.25]])
    assert portable.log(x).tolist() == [[math.log(v) for v in row] for row in x.tolist()]
    assert portable.log(np.array([0.0]))[0] == -math.inf
    z = np.array([-800.0, -1.5, 0.0, 2.0, 800.0])
    assert portable.exp(z).tolist() == [0.0, math.exp(-1.5), 1.0, math.exp(2.0), math.inf]


def test_integer_powers_are_within_the_rounding_bound_of_n_products():
    for base in (0.3, 0.999, 1.0, 0.0, 0.12345):
        for n in (1, 2, 3, 7, 64, 1000):
            exact = float(Fraction(base) ** n)
            got = float(_integer_power(np.array([base]), n)[0])
            assert abs(got - exact) <= (n - 1) * 2.0**-53 * 1.01 * exact + 1e-320  # gamma_(n-1), the product bound


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: portable.matmul(np.ones((2, 3)), np.ones((2, 3))), "inner sides"),
        (lambda: portable.log(np.array([1.0, -1.0])), "non-negative"),
        (lambda: portable.symmetric_sqrt(np.ones((2, 3))), "square"),
        (lambda: portable.symmetric_sqrt(np.array([[1.0, np.nan], [np.nan, 1.0]])), "finite"),
    ],
)
def test_bad_input_is_refused(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()
