"""Glover's row bounds from the combinatorial linear oracle (:func:`cmab_milp.oracles.norm.lifting.exact_row_bounds`).

Truth: every action of small spaces, with the query's include and exclude. ``near_i`` must be at least
(sign +1) the largest ``g_i(a) = sum_{j != i} M_ij a_j`` over the admitted actions holding ``i``, and
equal to it up to the rounding slack; ``far_i`` at most the least over those without ``i``; mirrored
for sign -1. Sign +1 answers with and without the exact bounds agree with brute force.
"""

from __future__ import annotations

import numpy as np
import pytest
from instances import admitted, oracle_and_actions

from cmab_milp.oracles.core.queries import Restrictions
from cmab_milp.oracles.norm.lifting import exact_row_bounds

CHEAP = ["partition", "graphic", "spanning-trees", "paths-dag", "matchings-bipartite", "perfect-bipartite"]
NOT_CHEAP = ["cardinality", "matchings-general", "explicit", "paths-cyclic-undirected", "with-constraint"]


def _query(rng, actions):
    d = actions.shape[1]
    include = [int(np.flatnonzero(actions[rng.integers(len(actions))])[0])] if rng.random() < 0.5 else []
    exclude = [int(i) for i in rng.choice(d, size=int(rng.integers(0, 3)), replace=False) if i not in include]
    return include, exclude


@pytest.mark.parametrize("family", CHEAP)
@pytest.mark.parametrize("upper", [True, False])
def test_bounds_are_the_extremes_over_the_admitted_actions(family, upper):
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([len(family), int(upper)])
    d = oracle.d
    for _ in range(6):
        a = rng.normal(size=(d, d))
        M = a @ a.T / d
        include, exclude = _query(rng, actions)
        ok = admitted(actions, include, exclude)
        arms = np.setdiff1d(np.arange(d), exclude)
        sub = M[np.ix_(arms, arms)]
        off = sub - np.diag(np.diag(sub))
        near, far = exact_row_bounds(oracle.space, arms, Restrictions(tuple(include), tuple(exclude)), off, upper)
        x = actions[ok][:, arms].astype(float)
        g = x @ off.T  # g[n, k] = g_{arms[k]}(action n)
        for k in range(len(arms)):
            held, without = x[:, k] > 0.5, x[:, k] < 0.5
            if held.any():
                extreme = g[held, k].max() if upper else g[held, k].min()
                assert (near[k] >= extreme - 1e-12) if upper else (near[k] <= extreme + 1e-12)
                assert near[k] == pytest.approx(extreme, abs=1e-9)
            if without.any():
                extreme = g[without, k].min() if upper else g[without, k].max()
                assert (far[k] <= extreme + 1e-12) if upper else (far[k] >= extreme - 1e-12)
                assert far[k] == pytest.approx(extreme, abs=1e-9)


@pytest.mark.parametrize("family", NOT_CHEAP)
def test_spaces_without_a_cheap_algorithm_keep_the_sorted_rows(family):
    oracle, _ = oracle_and_actions(family)
    d = oracle.d
    assert exact_row_bounds(oracle.space, np.arange(d), Restrictions(), np.zeros((d, d)), True) is None


@pytest.mark.parametrize("family", ["matchings-bipartite", "partition", "spanning-trees"])
def test_sign_plus_answers_match_brute_force_with_either_bounds(family):

    rng = np.random.default_rng([len(family), 9])
    for exact in (True, False):  # plus_branch off: the outer approximation, the lifting's user
        oracle, actions = oracle_and_actions(family, plus_branch=False, exact_row_bounds=exact)
        for f in (0.3, 1.0, 3.0):
            a = rng.normal(size=(oracle.d, oracle.d))
            mu, M = rng.uniform(-0.5, 1, oracle.d), a @ a.T / oracle.d + 0.1 * np.eye(oracle.d)
            include, exclude = _query(rng, actions)
            ok = admitted(actions, include, exclude)
            answer = oracle.argmax_norm(mu, M, f, 1, include=include, exclude=exclude)
            x = actions[ok].astype(float)
            truth = x @ mu + f * np.sqrt(np.einsum("ni,ij,nj->n", x, M, x))
            got = float(answer @ mu + f * np.sqrt(answer @ M @ answer))
            assert got >= truth.max() - 1e-9 * (1 + abs(truth.max()))
