"""Covariance policies at crew-assignment size: the crew problem file, SROQ-C's pruned pair queries
(same actions as the plain policy, known answers checked by brute force) and the incumbent hints."""

from __future__ import annotations

import inspect
import io
import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import cmab_milp as cm
from cmab_milp.cli import main
from cmab_milp.experiments import load_problem, parse_problem, run_problem
from cmab_milp.oracles.core.base import tolerance
from cmab_milp.policies.covariance import CovarianceIndex
from cmab_milp.policies.schedules import all_pairs, pair_cover, shared_cover

CREW = Path(__file__).resolve().parents[2] / "problems" / "crew_matching.toml"


def small_instance(seed: int = 0) -> tuple[cm.Matchings, cm.GaussianNoise]:
    """Matchings of K(4, 5) (d = 20, 501 actions), correlated Gaussian noise."""
    space = cm.Matchings(nx.complete_bipartite_graph(4, 5))
    rng = np.random.default_rng(seed)
    factor = rng.normal(size=(space.d, space.d))
    cov = factor @ factor.T + np.eye(space.d)
    return space, cm.GaussianNoise(rng.uniform(0.2, 0.8, space.d), 0.05 * cov / cov.max(), seed=seed)


def recording(space: cm.ActionSpace) -> tuple[cm.Oracle, list]:
    """An enumeration oracle that keeps every query it answers."""
    oracle = cm.make_oracle(space, "enumerate")
    seen: list = []
    inner = oracle._answer

    def answer(query):
        seen.append(query)
        return inner(query)

    oracle._answer = answer
    return oracle, seen


# ------------------------------------------------------------------ the problem file
def test_crew_file_models_a_correlated_10_by_12_assignment(capsys):
    assert CREW.read_text(encoding="utf-8").startswith("#")
    assert main(["validate", str(CREW)]) == 0
    assert "ok" in capsys.readouterr().out
    problem = load_problem(CREW)
    space = problem.build_space()
    env = problem.build_environment(space)
    assert (space.d, space.m) == (120, 10) and problem.horizon == 100_000
    assert {p.kind for p in problem.policies} == {"OLSUCBC", "AROQCov", "SROQCov"}
    options = {p.name: p.oracle_options for p in problem.policies}
    # the exact answers need hours at T=10^5: they run only when named (--policies), the rest by default
    assert {p.name for p in problem.policies if p.on_request} == {"OLS-UCB-C", "AROQ-C-w1"}
    assert options["AROQ-C-5pct"] == {"norm_gap": 0.05} and options["AROQ-C-w1"] == {}  # certified within 5% / exact
    assert options["OLS-UCB-C-5pct"] == {"norm_gap": 0.05} and options["OLS-UCB-C"] == {}
    off_diagonal = env.cov[~np.eye(space.d, dtype=bool)]
    assert np.abs(off_diagonal).max() > 0.05 and env.cov.diagonal().max() == pytest.approx(0.25)
    # the optimum is the best assignment of the 10 crew members to 10 of the 12 duties (Hungarian method)
    weights = np.zeros((10, 12))
    for mean, (u, v) in zip(env.means, space.arms, strict=True):
        weights[u, v - 10] = mean
    rows, cols = linear_sum_assignment(weights, maximize=True)
    _, value = env.optimal(space, "highs")
    assert value == pytest.approx(weights[rows, cols].sum(), abs=1e-9)


def test_crew_file_runs_a_tiny_horizon(tmp_path):
    problem = load_problem(CREW, steps=12, seeds=1)
    data = problem.to_dict()
    data["policies"] = [p for p in data["policies"] if p["kind"] == "OLSUCBC"]  # the others warm up on 7,260 pairs
    names = [p["name"] for p in data["policies"]]  # OLS-UCB-C (exact, hours at T=10^5) runs on request only
    summary = run_problem(
        parse_problem(data, problem.file),
        tmp_path,
        jobs=1,
        executor="serial",
        plots=False,
        stream=io.StringIO(),
        policies=names,
    )
    assert summary["complete"] and summary["policies"]["OLS-UCB-C"]["queries"]["mean"] >= 12


@pytest.mark.slow
def test_crew_file_runs_every_policy_on_a_tiny_horizon(tmp_path):
    problem = load_problem(CREW, steps=12, seeds=1)
    names = [p.name for p in problem.policies]  # the exact OLS-UCB-C and AROQ-C run on request only
    summary = run_problem(
        problem, tmp_path, jobs=1, executor="serial", plots=False, stream=io.StringIO(), policies=names
    )
    assert summary["complete"] and set(summary["policies"]) == set(names)


# ------------------------------------------------------------------ pruned SROQ-C
@pytest.mark.parametrize(("seed", "constants"), [(0, {}), (1, {"M": 4, "pair_fraction": 0.5}), (2, {"C": 0.2})])
def test_pruned_sroq_plays_the_same_actions_with_fewer_queries(seed, constants):
    space, env = small_instance(seed)
    runs = {}
    for prune in (False, True):
        policy = cm.SROQCov(space, 6000, oracle="enumerate", prune=prune, **constants)
        result = cm.simulate(policy, env, 6000, seed=seed, trace=True)
        runs[prune] = (result, policy)
    (plain, p0), (pruned, p1) = runs[False], runs[True]
    assert len(plain.info["trace"]) == len(pruned.info["trace"])
    for (t0, n0, a0), (t1, n1, a1) in zip(plain.info["trace"], pruned.info["trace"], strict=True):
        assert (t0, n0) == (t1, n1) and np.array_equal(a0, a1)
    assert plain.regret[-1] == pruned.regret[-1]
    assert p0.active_pairs == p1.active_pairs and p0.forbidden == p1.forbidden
    epochs = len(p1.history)
    assert pruned.rounds[-1] == plain.rounds[-1] + epochs  # one more adaptivity round per epoch
    asked = sum(h["pair_queries"] for h in p1.history)
    skipped = sum(h["pairs_skipped"] for h in p1.history)
    assert skipped > 0 and pruned.queries[-1] < plain.queries[-1]
    # the warm-up knows the 70 pairs sharing a vertex of K(4, 5) are in no matching
    assert p1.history[0]["pairs_skipped"] >= 4 * 10 + 5 * 6
    # the ledger: the warm-up's d (d + 1) / 2 cover queries, then per epoch one per arm alive before it,
    # the max-LCB query and the pair queries not skipped
    before = [space.d] + [len(h["survivors"]) for h in p1.history[:-1]]
    per_epoch = sum(n + 1 + h["pair_queries"] for n, h in zip(before, p1.history, strict=True))
    assert pruned.queries[-1] == space.d * (space.d + 1) // 2 + per_epoch
    assert asked + skipped <= plain.queries[-1] - space.d * (space.d + 1) // 2


def brute_force_upper(policy, actions, include, exclude, forbid):
    """Best UCB (level T) over the enumerated ``actions`` holding ``include``, avoiding ``exclude`` and ``forbid``."""
    ok = actions[:, list(include)].all(axis=1) & ~actions[:, list(exclude)].any(axis=1)
    for i, j in forbid:
        ok &= ~(actions[:, i] & actions[:, j])
    if not ok.any():
        return None, -np.inf
    values = policy.index.upper_values(policy.horizon, actions[ok])
    k = int(np.argmax(values))
    return actions[ok][k], float(values[k])


def test_pair_plan_known_answers_are_the_brute_force_optima():
    space, env = small_instance(3)
    actions = space.enumerate()
    policy = cm.SROQCov(space, 20_000, oracle="enumerate", prune=True, C=0.05, f_scale=0.3)
    cm.simulate(policy, env, 6000, seed=3)  # two epochs in: some arms and pairs eliminated
    assert len(policy.history) >= 2
    eliminated = tuple(np.flatnonzero(~policy.active).tolist())
    forbid = tuple(policy.forbidden)
    arm_reps = {
        int(i): brute_force_upper(policy, actions, (i,), eliminated, forbid)[0] for i in np.flatnonzero(policy.active)
    }
    known, ask = policy.pair_plan(eliminated, arm_reps)
    assert known and ask and not set(known) & set(ask)
    assert set(known) | set(ask) == {(i, j) for i, j in policy.active_pairs if policy.active[i] and policy.active[j]}
    # an arm eliminated at this epoch start: its pairs are neither asked nor answered (step 3 skips them)
    dropped = int(np.flatnonzero(policy.active)[0])
    policy.active[dropped] = False
    known_after, ask_after = policy.pair_plan(eliminated, arm_reps)
    policy.active[dropped] = True
    assert set(known_after) | set(ask_after) == {p for p in set(known) | set(ask) if dropped not in p}
    for (i, j), answer in known.items():
        best, value = brute_force_upper(policy, actions, (i, j), eliminated, forbid)
        if answer is None:
            assert best is None
        else:
            assert answer[i] and answer[j] and not answer[list(eliminated)].any()
            got = float(policy.index.upper_values(policy.horizon, answer[None])[0])
            assert got >= value - tolerance(value)


def test_pair_plan_without_warmup_asks_the_infeasible_pairs():
    space, env = small_instance(4)
    policy = cm.SROQCov(space, 3000, oracle="enumerate", prune=True, warmup_cycles=0)
    cm.simulate(policy, env, 50, seed=4)
    assert policy.cover is None
    _, ask = policy.pair_plan((), {})
    assert len(ask) == len(policy.active_pairs)  # nothing known: no cover, no arm representatives


def test_prune_is_checked_and_belongs_to_the_two_rare_query_policies():
    space, _ = small_instance()
    assert "prune" in inspect.signature(cm.SROQCov).parameters
    assert "prune" in inspect.signature(cm.AROQCov).parameters
    assert "prune" not in inspect.signature(cm.OLSUCBC).parameters
    for cls in (cm.SROQCov, cm.AROQCov):
        with pytest.raises(ValueError, match="prune must be True or False"):
            cls(space, 100, oracle="enumerate", prune="yes")
    with pytest.raises(TypeError, match="prune"):
        cm.OLSUCBC(space, 100, oracle="enumerate", prune=True)
    with pytest.raises(ValueError, match="warmup_cycles"):
        cm.SROQCov(space, 100, oracle="enumerate", warmup_cycles=None)
    policy = cm.SROQCov(space, 100, oracle="enumerate", prune=True)
    assert policy.clone().params["prune"] is True


# ------------------------------------------------------------------ shared warm-up cover
def pair_counts(cover: np.ndarray, rounds: int) -> np.ndarray:
    plays = np.full(len(cover), rounds // len(cover))
    plays[: rounds % len(cover)] += 1
    acts = cover.astype(np.int64)
    return (acts.T * plays) @ acts


def test_shared_cover_holds_every_feasible_pair_with_fewer_queries_and_even_plays():
    space, _ = small_instance()
    actions = space.enumerate().astype(np.int64)
    feasible = {(i, j) for i, j in all_pairs(space.d) if (actions[:, i] & actions[:, j]).any()}
    plain_oracle, shared_oracle = (cm.make_oracle(space, "enumerate") for _ in range(2))
    plain_units, plain = pair_cover(CovarianceIndex(space.d), plain_oracle)
    units, cover = shared_cover(CovarianceIndex(space.d), shared_oracle, all_pairs(space.d))
    assert set(units) == set(plain_units) == feasible  # the 70 pairs sharing a vertex are dropped
    assert all(cover[k][list(u)].all() and space.contains(cover[k]) for k, u in enumerate(units))
    assert shared_oracle.ledger.queries < plain_oracle.ledger.queries == len(all_pairs(space.d))
    rounds = len(all_pairs(space.d))
    off = [(i, j) for i, j in feasible if i != j]
    rows, cols = zip(*off, strict=True)
    assert pair_counts(cover, rounds)[rows, cols].min() > pair_counts(plain, rounds)[rows, cols].min()
    with pytest.raises(ValueError, match="chunk"):
        shared_cover(CovarianceIndex(space.d), shared_oracle, all_pairs(space.d), chunk=0)


def test_aroq_c_prune_warms_up_on_the_shared_cover():
    space, env = small_instance(8)
    policy = cm.AROQCov(space, 3000, oracle="enumerate", warmup_cycles=1, prune=True)
    result = cm.simulate(policy, env, 3000, seed=8, trace=True)
    assert policy.warmup_queries < len(all_pairs(space.d)) and len(policy.cover) == 210 - 70
    first = [a for t, n, acts in result.info["trace"] if t <= policy.warmup_rounds for a in acts]
    assert all(space.contains(a) for a in first) and policy.updates >= 1


# ------------------------------------------------------------------ hints
def test_norm_queries_carry_the_previous_answer_as_a_hint():
    space, env = small_instance(5)
    oracle, seen = recording(space)
    policy = cm.AROQCov(space, 4000, oracle=oracle, warmup_cycles=1)
    cm.simulate(policy, env, 4000, seed=5)
    norms = [q for q in seen if hasattr(q, "hints")]
    assert len(norms) == policy.updates >= 3
    assert norms[0].hints == ()
    for before, after in itertools.pairwise(norms):
        answer = oracle.argmax_norm(before.mu, before.M, before.f, before.sign)  # same query, no hint
        assert len(after.hints) == 1 and np.array_equal(after.hints[0], answer)


def test_hints_satisfy_the_restrictions_of_their_query():
    space, env = small_instance(6)
    oracle, seen = recording(space)
    policy = cm.SROQCov(space, 20_000, oracle=oracle, prune=True, C=0.05, f_scale=0.3)
    cm.simulate(policy, env, 20_000, seed=6)
    hinted = [q for q in seen if getattr(q, "hints", ())]
    assert hinted
    for query in hinted:
        r = query.restrictions
        for hint in query.hints:
            assert hint[list(r.include)].all() and not hint[list(r.exclude)].any()
            assert not any(hint[i] and hint[j] for i, j in r.forbid_pairs)
            assert space.contains(hint)


# ------------------------------------------------------------------ the SROQ grid after a warm-up
def test_crew_grid_has_no_near_duplicate_epoch_after_the_warmup():
    space = load_problem(CREW).build_space()
    policy = cm.SROQCov(space, 100_000, oracle="highs")
    assert policy.warmup_rounds == 7260
    # before the fix: [7261, 7422, 32802, 68959], a second batch of 7,261 representatives 161 rounds after the first
    assert policy.grid.tolist() == [7261, 32802, 68959]


@pytest.mark.parametrize("T", [700, 5000, 100_000])
def test_grid_after_a_warmup_keeps_the_paper_points_and_merges_a_short_remainder(T):
    space = cm.Cardinality(6, 2)
    paper = [int(g) for g in cm.policies.schedules.sroq_grid(T, cm.policies.schedules.default_epochs(T))]
    for cycles in np.linspace(0.05, 3.0, 60):
        policy = cm.SROQCov(space, T, oracle="enumerate", warmup_cycles=float(cycles))
        first, grid = policy.warmup_rounds + 1, policy.grid.tolist()
        if first > T:
            assert grid == []
            continue
        assert grid[0] == first and grid == sorted(set(grid))
        later = [g for g in paper if g > first]
        assert grid[1:] == later or grid[1:] == later[1:]  # the paper's points, at most the first one merged
        if later:
            before = max(g for g in paper if g <= first)
            merged = grid[1:] == later[1:]
            # merged exactly when the first epoch would cover under half of the grid epoch it starts in
            assert merged == (first > before and later[0] - first < (later[0] - before) / 2)
            assert grid[1] - first >= (later[0] - before) / 2 if len(grid) > 1 else True
