"""The chord form of :mod:`cmab_milp.oracles.norm.paths.chord` against brute force on small cyclic path spaces.

Truth: every simple s-t path (``STPaths.enumerate``) and ``sqrt(a @ M @ a)`` in numpy. The form must be at most the
norm on every path, its tangents below the norm on every path, convex, and exact where the chord meets ``sqrt``.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest
from instances import check_norm_answer, psd, random_restrictions

import cmab_milp as cm
from cmab_milp.oracles.norm.paths import minus as minus_paths
from cmab_milp.oracles.norm.paths.chord import ChordNorm, chord
from cmab_milp.oracles.norm.paths.cuts import shortest_length
from cmab_milp.oracles.norm.scaling import arms_bound
from cmab_milp.oracles.norm.solver import last_stats


def _digraph(seed: int) -> nx.DiGraph:
    g = nx.gnp_random_graph(7, 0.45, seed=seed, directed=True)
    g.add_edges_from([(0, 1), (1, 6), (0, 3), (3, 6)])
    g.remove_edges_from([(u, v) for u, v in list(g.edges()) if v == 0 or u == 6])
    return g


SPACES = {
    "grid-3x4": lambda: cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11),
    "wheel": lambda: cm.STPaths(nx.wheel_graph(7), 1, 4),
    "digraph": lambda: cm.STPaths(_digraph(1), 0, 6),
}
_CACHE: dict = {}


def space_and_paths(name: str):
    if name not in _CACHE:
        space = SPACES[name]()
        _CACHE[name] = (space, space.enumerate())
    return _CACHE[name]


def _norms(paths: np.ndarray, M: np.ndarray) -> np.ndarray:
    x = paths.astype(float)
    return np.sqrt(np.einsum("ni,ij,nj->n", x, M, x))


def test_chord_is_below_sqrt_and_meets_it_at_the_ends():
    for low, high in [(0.0, 4.0), (1.0, 9.0), (0.3, 0.31), (2.0, 2.0), (14 * 0.1, 63 * 0.1)]:
        alpha, beta = chord(low, high)
        p = np.linspace(low, high, 201)
        assert (alpha + beta * p <= np.sqrt(p)).all(), (low, high)
        assert abs(alpha + beta * low - np.sqrt(low)) < 1e-12 and abs(alpha + beta * high - np.sqrt(high)) < 1e-12
    for bad in [(-1.0, 1.0), (2.0, 1.0), (0.0, np.inf), (np.nan, 1.0)]:
        with pytest.raises(ValueError, match="chord"):
            chord(*bad)


@pytest.mark.parametrize("name", list(SPACES))
def test_form_and_its_tangents_are_below_the_norm_on_every_path(name):
    space, paths = space_and_paths(name)
    rng = np.random.default_rng([len(name), 1])
    sizes = paths.sum(axis=1)
    for trial in range(12):
        M = psd(rng, space.d, ridge=[0.1, 0.5, 0.01][trial % 3])
        excluded = rng.permutation(space.d)[: trial % 3]
        arms = np.setdiff1d(np.arange(space.d), excluded)
        ok = ~paths[:, excluded].any(axis=1)
        k_lo = shortest_length(space, arms)
        assert k_lo == sizes[ok].min()  # brute force: the fewest arms of a path avoiding the excluded ones
        form = ChordNorm(M, arms, k_lo, arms_bound(space))
        norms = _norms(paths[ok], M)
        R = np.array([form.value(a) for a in paths[ok].astype(float)])
        assert (R <= norms * (1 + 1e-12)).all(), (name, trial)
        for _ in range(10):  # tangents anywhere in the box (LP points, midpoints) are below n on every path
            x0 = rng.uniform(0, 1, space.d) * (rng.random(space.d) < 0.7)  # (read on the arms only)
            made = form.tangent(x0)
            if made is None:
                continue
            g, g0, value, allowance = made
            assert allowance > 0 and abs(value - form.value(x0)) <= 1e-12 * (1 + value)
            assert (paths[ok].astype(float) @ g + g0 - allowance <= norms).all(), (name, trial)


def test_form_is_convex_and_exact_where_the_chord_meets_sqrt():
    space, paths = space_and_paths("grid-3x4")
    rng = np.random.default_rng(4)
    a = rng.normal(size=(space.d, space.d))
    M = a @ a.T / space.d + 0.2 * np.eye(space.d)
    M = M / np.sqrt(np.outer(np.diag(M), np.diag(M)))  # unit diagonal: the shift is uniform
    k_lo, k_hi = shortest_length(space, np.arange(space.d)), arms_bound(space)
    form = ChordNorm(M, np.arange(space.d), k_lo, k_hi)
    assert np.allclose(form.d, form.d[0])
    sizes = paths.sum(axis=1)
    norms = _norms(paths, M)
    for a_, n_ in zip(paths[sizes == k_lo].astype(float), norms[sizes == k_lo], strict=True):
        assert abs(form.value(a_) - n_) <= 1e-9 * n_  # shortest paths: the chord's end
    longer = sizes > k_lo
    assert (np.array([form.value(a_) for a_ in paths[longer].astype(float)]) < norms[longer]).any()
    for _ in range(200):  # midpoint convexity
        x, y = rng.uniform(0, 1, (2, space.d))
        assert form.value((x + y) / 2) <= (form.value(x) + form.value(y)) / 2 + 1e-12


def test_form_is_tighter_than_the_shifted_matrix_between_paths():
    """On the grid's points of at least ``k_lo`` arms the chord form is at least ``M_r``'s norm (its special case)."""
    from cmab_milp.oracles.norm.branch.minus import relaxation_matrix

    space, paths = space_and_paths("grid-3x4")
    rng = np.random.default_rng(5)
    k_lo, k_hi = shortest_length(space, np.arange(space.d)), arms_bound(space)
    for _ in range(5):
        M = psd(rng, space.d)
        form = ChordNorm(M, np.arange(space.d), k_lo, k_hi)
        M_r = relaxation_matrix(M, np.arange(space.d), k_hi)
        for _ in range(20):
            w = rng.dirichlet(np.ones(len(paths)))
            x = w @ paths.astype(float)  # a mixture of paths: at least k_lo arms in total
            assert form.value(x) >= np.sqrt(x @ M_r @ x) - 1e-9


def test_bad_input_is_refused():
    M = np.eye(3)
    with pytest.raises(ValueError, match="square"):
        ChordNorm(np.ones((2, 3)), np.arange(2), 1, 2)
    with pytest.raises(ValueError, match="arm counts"):
        ChordNorm(M, np.arange(3), 3, 2)
    with pytest.raises(ValueError, match="semidefinite"):
        ChordNorm(np.array([[1.0, 2.0], [2.0, 1.0]]), np.arange(2), 1, 2)


@pytest.mark.parametrize(("chord_on", "lazy"), [(False, False), (True, False), (True, True)])
def test_answers_match_brute_force_with_each_bound(chord_on, lazy):
    """The chord form on or off (``M_r`` then), the lazy s-t cuts on or off: exact answers, restrictions included."""
    for name in ("grid-3x4", "digraph", "wheel"):
        space, paths = space_and_paths(name)
        oracle = cm.make_oracle(space, "highs", tuning={"paths_chord": chord_on, "paths_st_lazy": lazy})
        rng = np.random.default_rng([len(name), 41])
        for k, f in enumerate([0.1, 0.3, 1.0, 3.0, 5.0]):
            mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
            res = random_restrictions(rng, paths, k % 3)
            answer = oracle.argmax_norm(mu, M, f, -1, **res)
            assert last_stats(oracle).method == "branch-path-lp"
            check_norm_answer(paths, answer, res, mu, M, f, -1, (name, k, f))


def test_a_refused_chord_form_falls_back_to_the_shifted_matrix(monkeypatch):
    """``M - D`` failing the eigenvalue check in floating point: ``M_r``'s tangents bound ``t`` instead, still exact."""

    def refuse(*args, **kwargs):
        raise ValueError("M is not positive semidefinite on the arms: no chord form")

    monkeypatch.setattr(minus_paths, "ChordNorm", refuse)
    space, paths = space_and_paths("grid-3x4")
    oracle = cm.make_oracle(space, "highs")
    rng = np.random.default_rng(9)
    for k, f in enumerate([0.3, 1.0, 3.0]):
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, paths, k % 3)
        q = oracle.norm_query(mu, M, f, -1, **res)
        arms = np.setdiff1d(np.arange(space.d), q.restrictions.exclude)
        search = minus_paths.PathBranch(space, q, arms, float(np.abs(M).sum()), None, time.perf_counter)
        assert search.forms == [] and search.M_r is not None
        check_norm_answer(paths, oracle.argmax_norm(mu, M, f, -1, **res), res, mu, M, f, -1, (k, f))
