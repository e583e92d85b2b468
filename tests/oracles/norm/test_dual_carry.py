"""The search whose nodes carry and refit product-form multipliers (cmab_milp.oracles.norm.paths.dual_carry) and
the projected-gradient fit (dual_form.fit_multipliers(method="spg")): node bounds and answers against brute force,
bad input."""

from __future__ import annotations

import time

import numpy as np
import pytest
from instances import admitted, check_norm_answer, norm_values, psd, random_restrictions
from test_dual_form import _columns
from test_minus_paths import random_path_node, space_and_actions

import cmab_milp as cm
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.lifting import quadratic_form_bounds
from cmab_milp.oracles.norm.paths.dual_carry import DualCarry, DualCarryBranch
from cmab_milp.oracles.norm.paths.dual_form import fit_multipliers, product_form
from cmab_milp.oracles.norm.paths.minus import _Node
from cmab_milp.oracles.norm.paths.plus_dual import DualRoot

NAMES = ["grid-3x4", "petersen", "wheel", "digraph-a"]
#: Every node fits (margin without limit), from its parent's multipliers, over a pool of points.
EAGER = DualCarry(every=1, fits=2, steps=4, kelley=2, pool=3, margin=1e9)
#: ... every second depth, eigenvalues in double precision.
SPARSE = DualCarry(fits=2, steps=3, kelley=2, margin=1e9, every=2, single=False)


def _search(space, mu, M, f, carry=EAGER, dual=None, **res) -> DualCarryBranch:
    q = cm.make_oracle(space, "highs").norm_query(mu, M, f, 1, **res)
    arms = np.setdiff1d(np.arange(space.d), q.restrictions.exclude)
    _, hi = quadratic_form_bounds(q.M, space.m, arms)
    dual = DualRoot(rounds=2, method="spg") if dual is None else dual
    return DualCarryBranch(space, q, arms, hi, None, time.perf_counter, HighsTuning(), dual=dual, carry=carry)


def test_the_projected_gradient_fit_lowers_the_form_and_keeps_p_nonnegative():
    space, _, actions = space_and_actions("grid-3x4")
    rng = np.random.default_rng(45)
    M = psd(rng, space.d)
    search = _search(space, rng.uniform(0, 1, space.d), M, 1.0)
    R, b = search.equality_rows()
    z = _columns(search, actions).mean(axis=0)
    n = len(z)
    zero = (np.zeros((n, n)), np.zeros((len(b), n)), np.zeros(n))
    memory: dict = {}
    P, L, c = fit_multipliers(M, R, b, z, iterations=20, proximal=0.1, method="spg", memory=memory, single=True)
    assert (P >= 0).all() and memory["step"] > 0
    value = [float(z @ A @ z + lin @ z) for A, lin in (product_form(M, R, b, *zero), product_form(M, R, b, P, L, c))]
    assert value[1] < value[0] - 1e-3, value
    again = fit_multipliers(M, R, b, z, iterations=20, proximal=0.1, method="spg", start=(P, L, c), memory=memory)
    A, lin = product_form(M, R, b, *again)
    assert float(z @ A @ z + lin @ z) <= value[1] + 1e-9  # (the best point evaluated: never worse than the start)


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "digraph-a"])
def test_every_node_bound_with_carried_forms_is_at_least_its_best_action(name):
    """After nodes that fit and carry multipliers, random nodes are still bounded by their best path."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 46])
    checked = fits = 0
    for trial in range(9):
        f = [0.3, 1.0, 3.0][trial % 3]
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, actions, trial % 3)
        search = _search(space, mu, M, f, **res)
        allowed = admitted(actions, **res)
        if allowed.any():  # an incumbent, so that nodes fit (margin without limit)
            search.best_value = float(norm_values(actions[allowed], mu, M, f, 1).max()) - 1.0
        n = search.lp.n
        search.nodes = 1
        search.relax(_Node(-np.inf, 0, np.zeros(n, bool), np.zeros(n, bool)))
        form = None
        for k in range(3):  # nodes down a random branch, each starting from its parent's multipliers
            search.nodes = 2 + k
            include, exclude, ok = random_path_node(rng, search, actions, res)
            node = _Node(-np.inf, k + 1, include, exclude, form=form)
            bound, x = search.relax(node)
            form = node.form
            if ok.any():
                best = float(norm_values(actions[ok], mu, M, f, 1).max())
                assert x is not None and bound >= best - 1e-12, (name, trial, k, bound, best)
                checked += 1
        fits += search.node_fits
    assert checked >= 10 and fits >= 5, (checked, fits)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("carry", [EAGER, SPARSE], ids=["eager", "sparse"])
def test_the_carrying_search_matches_brute_force(name, carry):
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 47])
    fits = 0
    for k, f in enumerate([0.3, 1.0, 3.0, 1.0]):
        mu, M = rng.uniform(-0.3, 1.0, space.d), psd(rng, space.d)
        res = random_restrictions(rng, actions, k % 3)
        search = _search(space, mu, M, f, carry=carry, **res)
        best, value, bound = search.run(None, -np.inf)
        check_norm_answer(actions, best, res, mu, M, f, 1, (name, k))
        if best is not None:  # (none admitted: value and bound -inf)
            assert value - 1e-12 <= bound <= value + 1e-9 * (1.0 + abs(value)), (name, k, value, bound)  # proven
        fits += search.node_fits
    assert fits >= 1  # (nodes fitted)


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="fits"):
        DualCarry(fits=-1)
    with pytest.raises(ValueError, match="pool"):
        DualCarry(pool=0.5)
    with pytest.raises(ValueError, match="margin"):
        DualCarry(margin=float("nan"))
    with pytest.raises(ValueError, match="smoothing"):
        DualCarry(smoothing=0.0)
    with pytest.raises(ValueError, match="method"):
        DualCarry(method="newton")
    with pytest.raises(ValueError, match="every"):
        DualCarry(every=0)
    with pytest.raises(ValueError, match="method"):
        DualRoot(method="adam")
    with pytest.raises(ValueError, match="method"):
        fit_multipliers(np.eye(2), np.ones((1, 2)), np.ones(1), np.full(2, 0.5), method="bfgs")
