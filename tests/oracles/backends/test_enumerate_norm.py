"""The ``enumerate`` backend's norm path: a diagonal ``M`` takes the short path, with the same bits and answers."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles import norm_objective
from cmab_milp.oracles.backends.enumerate import EnumerateOracle

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
