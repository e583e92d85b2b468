"""The ``enumerate`` backend's norm path: a diagonal ``M`` takes the short path, with the same bits and answers."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles import norm_objective
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.backends.enumerate_norm import FlatTable, PrefixTree

SPACES = {
    "cardinality": lambda: cm.Cardinality(9, 4),
    "trees": lambda: cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))),
    "explicit": lambda: cm.ExplicitActions(np.random.default_rng(3).random((40, 8)) < 0.4),
}


def _diagonal(d: int, rng: np.random.Generator) -> np.ndarray:
    """A diagonal with positive, negative, zero and tiny entries (ties and sign changes)."""
    values = rng.choice([0.0, 1e-12, -0.3, 0.25, 0.5, 1.0, 3.0], size=d) * rng.uniform(0.5, 1.5, d)
    return np.diag(values)


@pytest.mark.parametrize("family", list(SPACES))
def test_diagonal_forms_are_the_sums_of_the_diagonal_in_arm_order(family: str) -> None:
    space = SPACES[family]()
    oracle = EnumerateOracle(space)
    M = _diagonal(space.d, np.random.default_rng(1))
    expected = []
    for action in oracle.actions:
        total = 0.0
        for i in np.flatnonzero(action):  # the order the gathers add in
            total += float(M[i, i])
        expected.append(total)
    assert np.array_equal(oracle.quadratic_forms(M), np.array(expected))


@pytest.mark.parametrize("family", list(SPACES))
@pytest.mark.parametrize("sign", [1, -1])
def test_diagonal_norm_queries_match_brute_force(family: str, sign: int) -> None:
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "enumerate")
    actions = space.enumerate()
    rng = np.random.default_rng(2)
    for trial in range(6):
        M = _diagonal(space.d, rng)
        mu = np.round(rng.uniform(-1, 1, space.d) * 4) / 4  # ties
        exclude = [int(trial % space.d)] if trial % 2 else []
        answer = oracle.argmax_norm(mu, M, 0.7, sign, exclude=exclude)
        allowed = [a for a in actions if not a[exclude].any()]
        best = max(norm_objective(mu, M, 0.7, sign, a) for a in allowed)
        assert not answer[exclude].any() and space.contains(answer)
        assert norm_objective(mu, M, 0.7, sign, answer) == pytest.approx(best, abs=1e-12)


def test_a_matrix_with_one_off_diagonal_entry_takes_the_full_path() -> None:
    space = cm.Cardinality(5, 3)
    oracle = EnumerateOracle(space)
    M = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    M[0, 4] = M[4, 0] = -2.0
    quad = oracle.quadratic_forms(M)
    assert np.allclose(quad, np.einsum("ni,ij,nj->n", oracle._dense, M, oracle._dense), rtol=0, atol=1e-12)


# ------------------------------------------------- the prefix tree (no BLAS) and its certified settling
TREE_SPACES = {
    **SPACES,
    "partition": lambda: cm.PartitionMatroid([[0, 1, 2], [3, 4, 5, 6], [7, 8]], [2, 2, 1]),
    "matchings": lambda: cm.Matchings(nx.complete_graph(6)),
    "paths": lambda: cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11),
    "exact": lambda: cm.Cardinality(10, 3, exact=True),
}


def _portable_values(oracle: EnumerateOracle, mu: np.ndarray, M: np.ndarray, f: float, sign: int) -> np.ndarray:
    """Every action's portable value: arm-order sums of ``mu`` plus the radius of :meth:`quadratic_forms`."""
    linear = np.array([sum_left_to_right(mu[np.flatnonzero(a)]) for a in oracle.actions])
    return linear + sign * f * np.sqrt(np.maximum(oracle.quadratic_forms(M), 0.0))


def sum_left_to_right(values: np.ndarray) -> float:
    total = 0.0
    for v in values.tolist():
        total += v
    return total


def _symmetric(d: int, rng: np.random.Generator, kind: int) -> np.ndarray:
    B = rng.normal(size=(d, d))
    if kind == 0:  # equal off-diagonal entries: whole classes of actions tie
        return np.full((d, d), 0.25) + 0.5 * np.eye(d)
    if kind == 1:  # coarse entries: exact ties and cancellations
        return np.round(B + B.T) / 8
    return (B @ B.T) / d * 10.0 ** rng.uniform(-4, 3)


SCREENS = {  # the flat table's two layouts, each on every space
    "tree": PrefixTree,
    "flat": lambda index, d: FlatTable(index, d, stacked_entries=0),
    "stacked": lambda index, d: FlatTable(index, d, stacked_entries=10**9),
}


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("family", list(TREE_SPACES))
def test_screened_values_are_within_their_bound_of_the_portable_values(family: str, screen: str) -> None:
    space = TREE_SPACES[family]()
    oracle = EnumerateOracle(space)
    tree = SCREENS[screen](oracle._index, space.d)
    rng = np.random.default_rng(5)
    for kind in range(3):
        mu, M = rng.normal(size=space.d), _symmetric(space.d, rng, kind)
        for sign in (1, -1):
            values, bound = tree.screen(mu, M, 0.8, sign)
            portable = _portable_values(oracle, mu, M, 0.8, sign)
            exact = np.array([norm_objective(mu, M, 0.8, sign, a) for a in oracle.actions])
            assert 0.0 < bound < 1e-5 * (1.0 + np.abs(portable).max())
            assert np.abs(values - portable).max() <= bound
            assert np.allclose(values, exact, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("family", list(TREE_SPACES))
def test_a_diagonal_matrix_gives_the_portable_bits_with_a_zero_bound(family: str) -> None:
    space = TREE_SPACES[family]()
    oracle = EnumerateOracle(space)
    rng = np.random.default_rng(6)
    mu, M = np.round(rng.normal(size=space.d) * 4) / 4, _diagonal(space.d, rng)
    values, bound = PrefixTree(oracle._index, space.d).screen(mu, M, 1.3, -1)
    assert bound == 0.0
    assert np.array_equal(values, _portable_values(oracle, mu, M, 1.3, -1))


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("family", list(TREE_SPACES))
def test_answers_are_the_first_action_of_largest_portable_value(family: str, screen: str) -> None:
    space = TREE_SPACES[family]()
    oracle = cm.make_oracle(space, "enumerate", ties="off")  # the screen under test, not the tie rule (f = 0 is linear)
    oracle._screen = SCREENS[screen](oracle._index, space.d)
    rng = np.random.default_rng(7)
    for trial in range(12):
        mu = np.round(rng.uniform(-1, 1, space.d) * 4) / 4 if trial % 2 else rng.normal(size=space.d)
        M, sign, f = _symmetric(space.d, rng, trial % 3), 1 - 2 * (trial % 4 // 2), float(trial % 3)
        exclude = [int(rng.integers(space.d))] if trial % 3 == 1 else []
        got = oracle.argmax_norm(mu, M, f, sign, exclude=exclude)
        values = _portable_values(oracle, mu, oracle.norm_query(mu, M, f).M, f, sign)
        allowed = ~oracle.actions[:, exclude].any(axis=1)
        expected = oracle.actions[int(np.argmax(np.where(allowed, values, -np.inf)))]
        assert np.array_equal(got, expected), trial


@pytest.mark.parametrize("screen", list(SCREENS))
def test_any_screen_within_its_bound_gives_the_same_answers(monkeypatch: pytest.MonkeyPatch, screen: str) -> None:
    """The settling does not trust the screen's last bits: noise up to the bound changes no answer."""
    space = cm.Cardinality(9, 4)
    plain, noisy = cm.make_oracle(space, "enumerate"), cm.make_oracle(space, "enumerate")
    noisy._screen = SCREENS[screen](noisy._index, space.d)
    screen_values = noisy._screen.screen
    rng = np.random.default_rng(8)

    def shaken(mu, M, f, sign):
        values, bound = screen_values(mu, M, f, sign)
        return values + rng.uniform(-bound, bound, len(values)), bound

    monkeypatch.setattr(noisy._screen, "screen", shaken)
    for trial in range(40):
        mu = np.round(rng.uniform(-1, 1, 9) * 2) / 2  # many exact ties
        M = _symmetric(9, rng, trial % 2)
        assert np.array_equal(plain.argmax_norm(mu, M, 1.0), noisy.argmax_norm(mu, M, 1.0)), trial


def test_magnitudes_near_overflow_are_valued_the_portable_way() -> None:
    space = cm.Cardinality(6, 2)
    oracle = EnumerateOracle(space)
    mu = np.array([1e300, -1e300, 2.0, 3.0, 1e299, 0.0])
    M = np.full((6, 6), 1e295) + np.eye(6)
    for screen in SCREENS.values():
        assert screen(oracle._index, 6).screen(mu, M, 1.0, 1)[1] == np.inf
    values = _portable_values(oracle, mu, M, 1.0, 1)
    assert np.array_equal(oracle.argmax_norm(mu, M, 1.0), oracle.actions[int(np.argmax(values))])


def test_a_subset_of_rows_gets_the_same_quadratic_form_bits() -> None:
    oracle = EnumerateOracle(cm.Cardinality(12, 5))
    rng = np.random.default_rng(9)
    M = _symmetric(12, rng, 2)
    rows = np.sort(rng.choice(len(oracle.actions), 50, replace=False))
    assert np.array_equal(oracle.quadratic_forms(M, rows), oracle.quadratic_forms(M)[rows])


def test_the_tree_refuses_a_table_that_is_not_increasing_arms() -> None:
    with pytest.raises(ValueError, match="increasing"):
        PrefixTree(np.array([[2, 1]]), 3)
    with pytest.raises(ValueError, match=r"arms in \[0, 3\]"):
        PrefixTree(np.array([[0, 4]]), 3)
