"""Values at the edge of the float and integer ranges: refused, or answered exactly."""

from __future__ import annotations

import math
import warnings

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.problem.limits import CEILINGS
from cmab_milp.policies.persistence import policy_classes
from cmab_milp.policies.protocol import MAX_OUTCOME

LINEAR_OUTCOMES = {"CUCB", "AROQ", "SROQ", "OLSUCBC", "AROQCov", "SROQCov"}


def _plain(state):
    """A comparable copy of a state (arrays as lists)."""
    if isinstance(state, dict):
        return {k: _plain(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return [_plain(v) for v in state]
    if isinstance(state, np.ndarray):
        return state.tolist()
    return state


@pytest.mark.parametrize("name", sorted(policy_classes()))
@pytest.mark.parametrize("huge", [1e200, 1e308, -1e308, MAX_OUTCOME * 1.5])
def test_observe_refuses_outcomes_that_would_overflow_and_changes_nothing(name, huge) -> None:
    policy = policy_classes()[name](cm.Cardinality(4, 2), 200, oracle="enumerate")
    first = policy.select()
    before = _plain(policy.get_state())
    with pytest.raises(ValueError, match="magnitude at most"):
        policy.observe(first, np.where(first, huge, np.nan))
    assert _plain(policy.get_state()) == before
    policy.observe(first, np.where(first, 0.5, np.nan))
    assert cm.Cardinality(4, 2).contains(policy.select())


@pytest.mark.parametrize("name", sorted(LINEAR_OUTCOMES & set(policy_classes())))
def test_outcomes_at_the_bound_keep_every_learner_usable(name) -> None:
    """Outcomes of magnitude MAX_OUTCOME, many of them: the statistics stay finite and select() answers."""
    space = cm.Cardinality(4, 2)
    policy = policy_classes()[name](space, 1000, oracle="highs")
    rng = np.random.default_rng(0)
    for _ in range(60):
        a = policy.select()
        policy.observe(a, np.where(a, rng.choice([-MAX_OUTCOME, MAX_OUTCOME, 0.0]), np.nan))
    assert space.contains(policy.select())
    index = policy.index
    stats = [index.sums] if hasattr(index, "sums") else [index.estimator.sums, index.estimator.outer_sums]
    assert all(np.isfinite(s).all() for s in stats)


def _spaces() -> list:
    return [
        cm.Cardinality(5, 2),
        cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2)),
        cm.SpanningTrees(nx.complete_graph(4)),
        cm.Matchings(nx.complete_bipartite_graph(3, 3)),
    ]


@pytest.mark.parametrize("backend", ["highs", "scip", "enumerate", "auto", "pulp"])
@pytest.mark.parametrize("space", _spaces(), ids=lambda s: type(s).__name__)
def test_argmax_with_weights_near_the_float_limit(backend, space) -> None:
    """Weights of magnitude ~1e308: an optimal action (checked by brute force in units of 2**-8)."""
    pytest.importorskip({"scip": "pyscipopt", "pulp": "pulp"}.get(backend, "numpy"))
    oracle = cm.make_oracle(space, backend)
    rng = np.random.default_rng(3)
    d = space.d
    cases = [np.full(d, 1e308), np.full(d, -1e308), np.full(d, np.finfo(float).max)]
    cases += [rng.uniform(-1, 1, d) * 1e308, rng.uniform(0, 1, d) * 1.7e308]
    actions = space.enumerate()
    for weights in cases:
        for include in ((), (1,)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                action = oracle.argmax(weights, include=include)
            allowed = actions[actions[:, list(include)].all(axis=1)] if include else actions
            scaled = np.ldexp(weights, -8)  # exact, and sums of d such weights stay finite
            best = (allowed @ scaled).max()
            assert space.contains(action) and all(action[i] for i in include)
            assert scaled @ action >= best - 1e-9 * (abs(best) + 2.0**-1032)


# ------------------------------------------------------------ horizons at the ceiling
@pytest.mark.parametrize("d,m", [(4, 2), (50, 49), (5000, 5000)])
def test_adaptive_thresholds_at_the_horizon_ceiling_do_not_overflow(d, m) -> None:
    """``1 + sqrt(T m |T_i| / d)`` at T = 2**50 with epoch counts up to T: the exact value, no int64 wrap."""
    T = CEILINGS["horizon"]
    policy = cm.AROQ(cm.Cardinality(d, m), T, oracle="enumerate" if d < 10 else "combinatorial")
    counts = np.array([0, 1, 2**31, 2**40, 2**49, T - 1, T][:d] + [T] * max(0, d - 7), np.int64)
    policy.previous = counts
    got = policy.thresholds()
    exact = [1.0 + math.sqrt(T * m * int(c) / d) for c in counts]
    np.testing.assert_allclose(got, exact, rtol=1e-14)
    assert (got >= 1.0).all()


def test_aroq_plans_at_the_end_of_the_largest_horizon() -> None:
    """A learner late in a 2**50-round run (state set, not simulated) plans a stretch that ends by T."""
    T = CEILINGS["horizon"]
    policy = cm.AROQ(cm.Cardinality(4, 2), T, oracle="enumerate")
    first = policy.select()
    policy.observe(first, np.where(first, 0.5, np.nan))
    while policy.index.counts.min() == 0:
        a = policy.select()
        policy.observe(a, np.where(a, 0.5, np.nan))
    played = T - 20
    policy.t = played + 1
    policy.observed_rounds = played
    policy.previous[:] = T // 3
    policy.current[:] = T // 4
    policy.index.counts[:] = T // 2
    policy.index.sums[:] = T // 4
    policy._stretch = None
    stretch = policy.plan()
    assert 1 <= stretch.length <= T - policy.t + 1
    assert np.isfinite(policy.thresholds()).all()
