"""The tangent rows' purge of the s-t path searches (options ``paths_purge_above``, ``paths_idle_lps``).

Deleting tangent rows leaves a relaxation (any subset of valid rows), so the answers stay exact however eagerly
the rows go: checked against brute force (every simple s-t path valued in numpy) with the purge at its most eager
(every idle row, after every node) and off in effect, on both signs.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest
from instances import check_norm_answer, psd, random_restrictions

import cmab_milp as cm
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.paths.minus import PathBranch
from cmab_milp.oracles.norm.paths.plus import ConcavePathBranch
from cmab_milp.oracles.norm.solver import last_stats

EAGER = {"paths_purge_above": 0, "paths_idle_lps": 0}  # every row without a price in the last LP, after each node
NEVER = {"paths_purge_above": 100_000}


def _space() -> cm.STPaths:
    return cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11)


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("tuning", [EAGER, NEVER], ids=["eager", "never"])
def test_answers_match_brute_force_however_eager_the_purge(sign, tuning):
    space = _space()
    paths = space.enumerate()
    oracle = cm.make_oracle(space, "highs", tuning=tuning)
    rng = np.random.default_rng([sign + 1, 43])
    for k, f in enumerate([0.3, 1.0, 3.0, 5.0]):
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, paths, k % 3)
        answer = oracle.argmax_norm(mu, M, f, sign, **res)
        assert last_stats(oracle).method == ("branch-path-concave" if sign > 0 else "branch-path-lp")
        check_norm_answer(paths, answer, res, mu, M, f, sign, (sign, k, f))


@pytest.mark.parametrize("kind", [PathBranch, ConcavePathBranch])
def test_the_eager_purge_deletes_rows_and_keeps_the_bound(kind):
    """The search itself: rows are deleted, and its bound still covers the best path (and equals the answer's)."""
    space = _space()
    paths = space.enumerate()
    oracle = cm.make_oracle(space, "highs")
    rng = np.random.default_rng(5)
    sign = 1 if kind is ConcavePathBranch else -1
    purged = 0
    for f in (1.0, 3.0):
        mu, M = rng.uniform(0.0, 1.0, space.d), psd(rng, space.d)
        q = oracle.norm_query(mu, M, f, sign)
        arms = np.arange(space.d)
        search = kind(space, q, arms, float(np.abs(M).sum()), None, time.perf_counter, HighsTuning.of(EAGER))
        _, value, bound = search.run(None, -np.inf)
        truth = float(max(q.value(a) for a in paths))
        assert value == pytest.approx(truth, abs=1e-9 * (1 + abs(truth)))
        assert bound >= truth - 1e-9 * (1 + abs(truth))
        purged += search.purged
    assert purged > 0


@pytest.mark.parametrize("name", ["paths_purge_above", "paths_idle_lps"])
def test_bad_values_are_refused_by_name(name):
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ValueError, match=name):
            HighsTuning.of({name: bad})
    assert getattr(HighsTuning.of({name: 7}).norm.paths, name.removeprefix("paths_")) == 7
