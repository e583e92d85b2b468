"""Product forms of s-t paths (cmab_milp.oracles.norm.paths.dual_form) and the search whose root uses them
(paths.plus_dual): validity against every path (brute force), node bounds, exact answers, bad input."""

from __future__ import annotations

import time

import numpy as np
import pytest
from instances import admitted, check_norm_answer, norm_values, psd, random_restrictions
from test_minus_paths import random_path_node, space_and_actions

import cmab_milp as cm
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.lifting import quadratic_form_bounds
from cmab_milp.oracles.norm.paths.dual_form import fit_multipliers, product_form
from cmab_milp.oracles.norm.paths.minus import _Node
from cmab_milp.oracles.norm.paths.plus_dual import DualPathBranch, DualRoot

NAMES = ["grid-3x4", "petersen", "wheel", "digraph-a"]


def _search(space, mu, M, f, dual: DualRoot | None = None, **res) -> DualPathBranch:
    q = cm.make_oracle(space, "highs").norm_query(mu, M, f, 1, **res)
    arms = np.setdiff1d(np.arange(space.d), q.restrictions.exclude)
    _, hi = quadratic_form_bounds(q.M, space.m, arms)
    return DualPathBranch(space, q, arms, hi, None, time.perf_counter, HighsTuning(), dual=dual)


def _columns(search, actions: np.ndarray) -> np.ndarray:
    """Every path as the LP's columns before ``t``: its arms, then its visit columns (1 where the path passes)."""
    lp, space = search.lp, search.space
    assert lp.t == space.d + len(lp.visits)  # (the columns the forms see: arms and visits, nothing else)
    z = np.zeros((len(actions), lp.t))
    z[:, : space.d] = actions
    for col, node in zip(lp.visits, lp.visit_nodes, strict=True):
        z[:, col] = actions[:, (space.tail == node) | (space.head == node)].any(axis=1)
    return z


@pytest.mark.parametrize("name", NAMES)
def test_a_product_form_is_concave_and_above_every_path_whatever_its_multipliers(name):
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 41])
    search = _search(space, rng.uniform(0, 1, space.d), psd(rng, space.d), 1.0)
    R, b = search.equality_rows()
    z = _columns(search, actions)
    assert np.allclose(z @ R.T, b)  # the rows hold at every path: they may be multiplied by any column
    n = R.shape[1]
    for trial in range(6):
        M = psd(rng, space.d)
        scale = [0.0, 0.1, 1.0, 10.0, 0.5, 3.0][trial]
        P = scale * rng.exponential(size=(n, n)) * (rng.random((n, n)) < 0.5)
        L = scale * rng.normal(size=(len(b), n))
        c = None if trial % 2 else rng.normal(size=n)
        A, lin = product_form(M, R, b, P, L, c)
        assert np.linalg.eigvalsh(A).max() <= 1e-12 * (1 + np.abs(A).max())
        q = np.einsum("ni,ij,nj->n", z, A, z) + z @ lin
        exact = np.einsum("ni,ij,nj->n", actions, M, actions.astype(float))
        assert (q >= exact - 1e-9 * (1 + exact)).all(), (name, trial, float((q - exact).min()))
        if scale == 0.0 and c is None:  # no multiplier: a diagonal shift alone, exact on every path
            assert np.allclose(q, exact)


def test_fitted_multipliers_lower_the_form_at_the_point_they_were_fitted_at():
    space, _, actions = space_and_actions("grid-3x4")
    rng = np.random.default_rng(42)
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    search = _search(space, mu, M, 1.0)
    R, b = search.equality_rows()
    z = _columns(search, actions).mean(axis=0)  # a point of the paths' hull
    zero = (np.zeros((len(z), len(z))), np.zeros((len(b), len(z))), np.zeros(len(z)))
    before = product_form(M, R, b, *zero[:2], zero[2])
    after = product_form(M, R, b, *fit_multipliers(M, R, b, z, iterations=40, proximal=0.1))
    value = [float(z @ A @ z + lin @ z) for A, lin in (before, after)]
    assert value[1] < value[0] - 1e-3, value


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "digraph-a"])
def test_every_node_bound_after_the_dual_root_is_at_least_its_best_action(name):
    """The root's product forms stay in the search: random nodes are still bounded by their best path."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 43])
    checked = fits = 0
    for trial in range(16):
        f = [0.3, 1.0, 3.0][trial % 3]
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, actions, trial % 3)
        search = _search(space, mu, M, f, DualRoot(rounds=3, kelley=2), **res)
        search.nodes = 1
        n = search.lp.n
        root_bound, _ = search.relax(_Node(-np.inf, 0, np.zeros(n, bool), np.zeros(n, bool)))
        fits += search.fits
        allowed = admitted(actions, **res)
        if allowed.any():
            best_all = float(norm_values(actions[allowed], mu, M, f, 1).max())
            assert root_bound >= best_all - 1e-12, (name, trial, root_bound, best_all)
        search.nodes = 2
        include, exclude, ok = random_path_node(rng, search, actions, res)
        bound, x = search.kelley(_Node(-np.inf, 1, include, exclude), rounds=1 + trial % 4)
        if not ok.any():
            continue
        best = float(norm_values(actions[ok], mu, M, f, 1).max())
        assert x is not None and bound >= best - 1e-12, (name, trial, bound, best)
        checked += 1
    assert checked >= 5 and fits >= 5, (checked, fits)  # (the product forms were made and used)


@pytest.mark.parametrize("name", NAMES)
def test_the_search_with_the_dual_root_matches_brute_force(name):
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 44])
    for k, f in enumerate([0.3, 1.0, 3.0, 1.0]):
        mu, M = rng.uniform(-0.3, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, actions, k % 3)
        search = _search(space, mu, M, f, DualRoot(rounds=4), **res)
        best, _, _ = search.run(None, -np.inf)
        check_norm_answer(actions, best, res, mu, M, f, 1, (name, k))


def test_bad_input_is_refused_with_a_clear_message():
    M, R, b = np.eye(2), np.ones((1, 3)), np.ones(1)
    with pytest.raises(ValueError, match="shapes"):
        product_form(M, R, b, np.zeros((2, 2)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="shapes"):
        product_form(M, R, b, np.zeros((3, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="rounds"):
        DualRoot(rounds=-1)
    with pytest.raises(ValueError, match="steps"):
        DualRoot(steps=1.5)
    with pytest.raises(ValueError, match="smoothing"):
        DualRoot(smoothing=0.0)
    with pytest.raises(ValueError, match="proximal"):
        DualRoot(proximal=float("nan"))
