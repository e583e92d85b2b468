"""Sign +1 norm queries on s-t paths of cyclic graphs (cmab_milp.oracles.norm.paths.plus): brute force, node bounds,
the exact leaf, the time limit and the approximate mode."""

from __future__ import annotations

import time

import numpy as np
import pytest
from instances import check_norm_answer, norm_values, psd, random_restrictions
from test_minus_paths import GRAPHS, random_path_node, space_and_actions

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import LimitReached
from cmab_milp.oracles.core.certify import proven
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm import solver
from cmab_milp.oracles.norm.branch.overestimator import shifted_form
from cmab_milp.oracles.norm.lifting import quadratic_form_bounds
from cmab_milp.oracles.norm.paths.minus import _Node
from cmab_milp.oracles.norm.paths.plus import ConcavePathBranch, vertex_parts
from cmab_milp.oracles.norm.solver import last_stats


def values(actions: np.ndarray, mu, M, f) -> np.ndarray:
    return norm_values(actions, mu, M, f, 1)


def _correlated(rng: np.random.Generator, d: int) -> np.ndarray:
    """A definite covariance with a common component (positive off-diagonal mean: the size term is on)."""
    return psd(rng, d) + 0.5 * np.ones((d, d))


@pytest.mark.parametrize("name", list(GRAPHS))
def test_answers_match_brute_force(name):
    space, oracle, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 17])
    for k, f in enumerate([0.1, 0.3, 1.0, 3.0, 5.0, 0.5, 2.0, 0.2, 1.5, 10.0]):
        mu = rng.uniform(-0.3, 1.0, space.d) if k % 2 else rng.uniform(0.0, 1.0, space.d)
        M = _correlated(rng, space.d) if k % 4 == 1 else psd(rng, space.d)
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, 1, **res)
        assert last_stats(oracle).method == "branch-path-concave"
        check_norm_answer(actions, answer, res, mu, M, f, 1, (name, k, f))


def test_instances_of_the_shared_families():
    """The shared cyclic path families of tests/instances.py (one with a cycle off every path)."""
    from instances import oracle_and_actions

    rng = np.random.default_rng(12)
    for family in ("paths-cyclic-directed", "paths-cyclic-undirected"):
        oracle, actions = oracle_and_actions(family)
        for f in (0.1, 1.0, 5.0):
            mu, M = rng.uniform(-0.2, 1.0, oracle.d), psd(rng, oracle.d)
            answer = oracle.argmax_norm(mu, M, f, 1)
            assert last_stats(oracle).method == "branch-path-concave"
            best = float(values(actions, mu, M, f).max())
            assert float(values(answer[None, :], mu, M, f)[0]) >= best - 1e-9 * (1 + abs(best))


def _branch(space, mu, M, f, tuning: HighsTuning | None = None, **res) -> ConcavePathBranch:
    oracle = cm.make_oracle(space, "highs")
    q = oracle.norm_query(mu, M, f, 1, **res)
    arms = np.setdiff1d(np.arange(space.d), q.restrictions.exclude)
    _, hi = quadratic_form_bounds(q.M, space.m, arms)
    return ConcavePathBranch(space, q, arms, hi, None, time.perf_counter, tuning or HighsTuning())


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "digraph-a"])
def test_every_node_bound_is_at_least_its_best_action(name):
    """Random nodes (arms and, undirected, visited nodes fixed in or out): the relaxation bounds their actions."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 15])
    checked = 0
    for trial in range(30):
        f = [0.1, 1.0, 3.0][trial % 3]
        mu = rng.uniform(-0.2, 1.0, space.d)
        M = _correlated(rng, space.d) if trial % 2 else psd(rng, space.d)
        res = random_restrictions(rng, actions, trial % 3)
        search = _branch(space, mu, M, f, **res)
        include, exclude, ok = random_path_node(rng, search, actions, res)
        bound, x = search.kelley(_Node(-np.inf, 0, include, exclude), rounds=1 + trial % 4)
        if not ok.any():
            continue
        best = float(values(actions[ok], mu, M, f).max())
        assert x is not None and bound >= best - 1e-12, (name, trial, bound, best)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "wheel"])
def test_a_node_holding_one_action_is_bounded_by_its_index(name):
    """With an incumbent's plane in the LP, a node fixed to that path is proven no better than it, also when the
    covariance turns the size term on (it is not exact on paths shorter than ``m``: before, such nodes were never
    closed, and a query on the 8x8 grid at f = 0.01 took 343 nodes where it now takes 1)."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 16])
    for trial in range(8):
        f = [0.01, 0.3, 1.0, 3.0][trial % 4]
        mu, M = rng.uniform(0.0, 1.0, space.d), _correlated(rng, space.d)
        search = _branch(space, mu, M, f, HighsTuning(paths_plain_share=0.0))
        assert len(search.concave) == 3  # the forms exact on paths (with the stars, the diagonal alone), the size term
        a = actions[rng.integers(len(actions))]
        search.lp.add_tangent(*search.exact_tangent(a.astype(float)))  # what a new incumbent adds
        value = float(values(a[None, :], mu, M, f)[0])
        include, exclude = np.zeros(search.lp.n, bool), np.zeros(search.lp.n, bool)
        include[: space.d], exclude[: space.d] = a, ~a
        bound, _ = search.kelley(_Node(-np.inf, 0, include, exclude), rounds=1)  # one LP
        assert bound >= value - 1e-9 * (1 + abs(value))
        assert proven(value=value, bound=bound, measured_at="bound"), (name, trial, bound, value)


def test_the_8x8_grid_agrees_with_the_outer_approximation():
    """bench/norm_large.py's s-t family (d = 112), f = 0.1, restricted and not: the same values as the outer
    approximation's MILPs (the former method), with fewer than 100 nodes."""
    import networkx as nx

    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8)), 0, 63)
    rng = np.random.default_rng(4)
    for k in range(2):
        a = rng.normal(size=(space.d, space.d))
        mu, M = rng.uniform(0, 1, space.d), a @ a.T / space.d + 0.1 * np.eye(space.d)
        res = {"include": [5], "exclude": [7, 30], "forbid_pairs": [(40, 41)]} if k else {}
        oracle = cm.make_oracle(space, "highs")
        ours = oracle.argmax_norm(mu, M, 0.1, 1, **res)
        assert last_stats(oracle).method == "branch-path-concave" and last_stats(oracle).extra["nodes"] < 100
        plain = cm.make_oracle(space, "highs", tuning={"plus_paths": False})
        theirs = plain.argmax_norm(mu, M, 0.1, 1, **res)
        assert last_stats(plain).method == "oa-quadratic-form"
        got, want = (float(values(b[None, :], mu, M, 0.1)[0]) for b in (ours, theirs))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_indefinite_and_singular_M_are_bounded_on_the_psd_majorant(name):
    """The index ``mu @ a + f sqrt(max(a @ M @ a, 0))`` with ``M`` of rank 2 or with negative eigenvalues: the forms
    are made on :func:`~cmab_milp.oracles.norm.branch.plus.psd_majorant` and the answers match brute force (before,
    the outer approximation served these)."""
    from test_plus_branch import indefinite

    space, oracle, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 43])
    for k, f in enumerate([0.3, 1.0, 3.0, 0.5, 2.0, 10.0]):
        mu, M = rng.uniform(-0.3, 1.0, space.d), indefinite(rng, space.d)
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, 1, **res)
        if check_norm_answer(actions, answer, res, mu, M, f, 1, (name, k, f)):
            assert last_stats(oracle).method == "branch-path-concave"


def test_approximate_mode_returns_a_certified_path_on_its_time_limit(monkeypatch):
    """A clock that runs out after a few reads: the answer's proven ratio holds against brute force."""
    space, _, actions = space_and_actions("petersen")
    rng = np.random.default_rng(9)
    approximate = 0
    for reads in (3, 6, 10, 20, 40):
        ticks = iter(range(10**6))
        monkeypatch.setattr(solver, "_clock", lambda ticks=ticks: float(next(ticks)))
        mu, M, f = rng.uniform(0.5, 1.5, space.d), psd(rng, space.d), 3.0
        oracle = cm.make_oracle(space, "highs", time_limit=reads - 0.5, norm_gap=1e-6)
        try:
            answer = oracle.argmax_norm(mu, M, f, 1)
        except LimitReached:  # stopped before any path was found: nothing to certify
            continue
        assert last_stats(oracle).method == "branch-path-concave"
        best = float(values(actions, mu, M, f).max())
        value = float(values(answer[None, :], mu, M, f)[0])
        assert space.contains(answer) and 0.0 < oracle.proven_ratio <= 1.0
        assert value >= oracle.proven_ratio * best - 1e-9 * (1 + abs(best)), (reads, value, best)
        approximate += oracle.proven_ratio < 1.0
    assert approximate


@pytest.mark.parametrize("name", list(GRAPHS))
def test_the_star_terms_vanish_on_every_path_and_leave_forms_concave(name):
    """``vertex_parts``: ``a @ B @ a + l @ a = a @ M @ a`` on every path (brute force, directed and undirected, with
    arms excluded), and each form made from it is concave on the arms and exact on paths."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 18])
    paths = actions.astype(float)
    for tau in (0.3, 1.0, 4.0):
        M = _correlated(rng, space.d)
        arms = np.sort(rng.permutation(space.d)[: space.d - 2])
        kept = paths[~paths[:, np.setdiff1d(np.arange(space.d), arms)].any(axis=1)]
        B, linear = vertex_parts(space, M, arms, tau)
        quad = np.einsum("ni,ij,nj->n", kept, M, kept)
        assert np.allclose(np.einsum("ni,ij,nj->n", kept, B, kept) + kept @ linear, quad, rtol=1e-12, atol=1e-12)
        A, b = shifted_form(B, linear, arms)
        assert np.linalg.eigvalsh(A[np.ix_(arms, arms)])[-1] <= 1e-12
        assert np.allclose(np.einsum("ni,ij,nj->n", kept, A, kept) + kept @ b, quad, rtol=1e-12, atol=1e-12)


def test_a_wrong_star_count_is_caught():
    """The check above is not vacuous: ``r = 2`` at the source (a path leaves it once) breaks the identity."""
    space, _, actions = space_and_actions("grid-3x4")
    M = _correlated(np.random.default_rng(1), space.d)
    B, linear = vertex_parts(space, M, np.arange(space.d), 1.0)
    at_s = ((space.tail == space.s) | (space.head == space.s)).astype(float)
    wrong = linear + at_s  # tau (r_s + 1) on the source's edges
    paths = actions.astype(float)
    quad = np.einsum("ni,ij,nj->n", paths, M, paths)
    assert not np.allclose(np.einsum("ni,ij,nj->n", paths, B, paths) + paths @ wrong, quad)


def test_the_size_form_can_be_switched_off():
    space, _, actions = space_and_actions("grid-3x4")
    rng = np.random.default_rng(5)
    mu, M = rng.uniform(0, 1, space.d), _correlated(rng, space.d)
    tuning = HighsTuning(paths_size_form=False, paths_vertex_taus=())
    assert len(_branch(space, mu, M, 1.0, tuning).concave) == 1
    answer = cm.make_oracle(space, "highs", tuning=tuning).argmax_norm(mu, M, 1.0, 1)
    best = float(values(actions, mu, M, 1.0).max())
    assert float(values(answer[None, :], mu, M, 1.0)[0]) >= best - 1e-9 * (1 + abs(best))


def test_the_plain_and_size_forms_are_made_where_they_may_bind():
    """The plain form stays where the star form's diagonal is not much smaller (a diagonal ``M``: there the plain
    form is exact between paths too) and goes where it is (a Wishart ``M``); the size form needs a common
    component worth its size term (``M + 0.5``: kept; ``M + 1e-4``: not), and ``paths_plain_share = 0`` keeps
    the plain form always, as before."""
    space, _, actions = space_and_actions("grid-3x4")
    rng = np.random.default_rng(7)
    mu = rng.uniform(0, 1, space.d)
    a = rng.normal(size=(space.d, space.d))
    wishart = a @ a.T / space.d + 0.1 * np.eye(space.d)
    diagonal = np.diag(np.diag(wishart))
    assert len(_branch(space, mu, diagonal, 1.0).concave) == 2  # the stars and the plain form
    assert len(_branch(space, mu, wishart, 1.0).concave) == 1  # the stars alone
    assert len(_branch(space, mu, wishart, 1.0, HighsTuning(paths_plain_share=0.0)).concave) == 2
    assert len(_branch(space, mu, wishart + 0.5, 1.0).concave) == 2  # the stars and the size form
    assert len(_branch(space, mu, wishart + 1e-4, 1.0).concave) == 1
    alone = _branch(space, mu, wishart + 0.5, 1.0, HighsTuning(paths_vertex_taus=(), paths_plain=False))
    assert len(alone.concave) == 2  # without vertex forms the plain form comes first (exact on paths), then the size
    assert np.allclose(np.diag(alone.concave[0][0]) + 2 * alone.concave[0][1], np.diag(alone.q.M))
    for M in (diagonal, wishart, wishart + 0.5):  # the answers stay exact either way
        best = float(values(actions, mu, M, 1.0).max())
        for share in (0.0, 0.9, 1.0):
            answer = cm.make_oracle(space, "highs", tuning={"paths_plain_share": share}).argmax_norm(mu, M, 1.0, 1)
            assert abs(float(values(answer[None, :], mu, M, 1.0)[0]) - best) <= 1e-9 * (1 + abs(best))
