"""The sign +1 branch's tuned diagonal and lowered node forms (:meth:`ConcaveBranch.tune`, ``node_form``).

Truth is every action of a small space: a weighted diagonal must lie above its matrix; a tuned root and
every node form made from it must bound every action of their node; the search with tuning forced from
its first node must answer like enumeration.
"""

from __future__ import annotations

import numpy as np
import pytest
from instances import (
    check_norm_answer,
    correlated,
    norm_values,
    oracle_and_actions,
    random_node,
    random_restrictions,
)

from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.branch import plus as plus_branch
from cmab_milp.oracles.norm.branch.minus import _Node
from cmab_milp.oracles.norm.branch.plus import ConcaveBranch
from cmab_milp.oracles.norm.shifts import diagonal_shift, weighted_diagonal
from cmab_milp.oracles.norm.solver import last_stats

FAMILIES = ["graphic", "spanning-trees", "matchings-bipartite", "matchings-general", "perfect-bipartite"]


@pytest.mark.parametrize("seed", range(6))
def test_a_weighted_diagonal_lies_above_its_matrix_and_is_cheap_where_weighted(seed):
    rng = np.random.default_rng([seed, 3])
    d = int(rng.integers(2, 30))
    B = correlated(rng, d) if seed % 2 else rng.normal(size=(d, d))
    B = (B + B.T) / 2
    arms = np.sort(rng.choice(d, size=max(1, d - seed), replace=False))
    weights = rng.uniform(0, 1, d) ** 3  # skewed: a few arms carry the weight
    weights[rng.integers(d)] = 0.0
    w = weighted_diagonal(B, arms, weights)
    assert (w[np.setdiff1d(np.arange(d), arms)] == 0).all()
    sub = np.diag(w[arms]) - B[np.ix_(arms, arms)]
    assert np.linalg.eigvalsh(sub)[0] >= -1e-12 * np.abs(B).max()
    if len(arms) > 2:  # the trace-least diagonal is feasible for the weighted problem: never much cheaper
        trace_least = diagonal_shift(B, arms, above=True)
        assert weights[arms] @ w[arms] <= 1.02 * (weights[arms] @ trace_least[arms]) + 1e-9


def test_a_weighted_diagonal_without_weight_is_the_largest_eigenvalue():
    B = np.array([[2.0, 1.0], [1.0, 2.0]])
    assert np.allclose(weighted_diagonal(B, np.arange(2), np.zeros(2)), 3.0)
    assert (weighted_diagonal(B, np.array([], int), np.ones(2)) == 0).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_the_tuned_root_and_its_node_forms_bound_every_action_of_their_node(family):
    """The tuned root bound lies between the best action and the untuned bound; each node's form (the
    tuned root lowered on the node's free arms) bounds the node's actions (brute force)."""
    oracle, actions = oracle_and_actions(family)
    d = oracle.d
    rng = np.random.default_rng([len(family), 17])
    lowered = 0
    for trial in range(8):
        mu, M, f = rng.uniform(-0.2, 1, d), correlated(rng, d), float(rng.choice([0.3, 1.0, 3.0]))
        best = float(norm_values(actions, mu, M, f, 1).max())
        query = oracle.norm_query(mu, M, f, 1)
        search = ConcaveBranch(oracle.space, query, np.arange(d), None, None, HighsTuning(concave_reform=0.99))
        root = _Node(-np.inf, 0, np.zeros(d, bool), np.zeros(d, bool))
        before, _ = search.relax(root, early=False, steps=plus_branch._TUNE_STEPS)
        search.tune()
        assert search.generation == 1 and search.root_form[4] == 1
        after, _ = search.relax(_Node(-np.inf, 0, np.zeros(d, bool), np.zeros(d, bool)), early=False, steps=100)
        assert best - 1e-9 * (1 + abs(best)) <= after
        assert after <= before + 1e-9 * (1 + abs(before))
        for _ in range(6):
            include, exclude, ok = random_node(rng, actions, 1 + trial % 3)
            reforms = search.reforms
            bound, _ = search.relax(_Node(-np.inf, 1, include, exclude))
            lowered += search.reforms - reforms
            if not ok.any():
                assert bound == -np.inf
                continue
            assert bound >= float(norm_values(actions[ok], mu, M, f, 1).max()) - 1e-12
    assert lowered >= 5


@pytest.mark.parametrize("family", FAMILIES)
def test_tuning_from_the_first_node_answers_like_enumeration(family):
    tuned = 0
    oracle, actions = oracle_and_actions(family, plus_branch="always", concave_tune_after=1)
    rng = np.random.default_rng([len(family), 23])
    for trial in range(10):
        mu, M, f = rng.uniform(-0.5, 1, oracle.d), correlated(rng, oracle.d), float(rng.choice([0.3, 1.0, 3.0, 10.0]))
        res = random_restrictions(rng, actions, trial % 3)
        check_norm_answer(actions, oracle.argmax_norm(mu, M, f, 1, **res), res, mu, M, f, 1, (family, trial))
        tuned += "tuned_at" in last_stats(oracle).extra
    assert tuned >= 3  # the searches that took a second node tuned


def test_a_non_concave_node_form_is_caught(monkeypatch):
    """The node test above can fail: lowering ``d`` too far (planted: by five of ``M``'s largest variances,
    ``q`` unchanged on actions) leaves the form convex along the node's arms and its bound below some of
    the node's actions."""
    original = ConcaveBranch._lower_on

    def too_low(self, arms):
        original(self, arms)
        A, b, c = self.A.copy(), 2.0 * self.h, 5.0 * np.abs(np.diag(self.q.M)).max()
        A[arms, arms] += c
        b[arms] -= c
        self.set_form(A, b)

    monkeypatch.setattr(ConcaveBranch, "_lower_on", too_low)
    with pytest.raises(AssertionError):
        test_the_tuned_root_and_its_node_forms_bound_every_action_of_their_node("matchings-bipartite")
