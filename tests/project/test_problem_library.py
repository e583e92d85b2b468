"""The problem library: each file parses, validates and runs a tiny horizon, and each models what
its comment says (optima checked against independent algorithms: Dijkstra, brute force over
assignments and knapsack subsets, maximum spanning tree, top-k per category), and the routing
files still agree with the topohub data they were written from."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import load_problem, parse_problem, run_problem

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
LIBRARY = [
    "routing_abilene.toml",
    "routing_geant.toml",
    "ad_allocation.toml",
    "network_design.toml",
    "diversified_recommendation.toml",
    "budgeted_selection.toml",
    "sensor_placement.toml",
    "routing_abilene_by_name.toml",
    "crew_matching.toml",
    "baselines.toml",
    "perrault_msets.toml",
    "perrault_shortest_path.toml",
    "perrault_matchings_cneg.toml",
    "perrault_matchings_c02.toml",
    "perrault_matchings_c05.toml",
    "perrault_matchings_c1.toml",
    "combes_matchings_07_05.toml",
    "combes_matchings_095_03.toml",
    "combes_spanning_trees.toml",
]
#: Files that name a topohub topology (the optional extra "routing").
NEEDS_TOPOHUB = {"routing_abilene_by_name.toml"}
ROUTING = {
    "routing_abilene.toml": ("topozoo/Abilene", "New York", "Los Angeles"),
    "routing_geant.toml": ("topozoo/Geant2012", "PT", "TR"),
}
#: Files whose jobs set up slowly: run the first policy only (GEANT's auto oracle enumerates 17,023 paths;
#: the crew file's AROQ-C and SROQ-C warm up on 7,260 pairs, 1,870 to 7,260 linear queries at any horizon
#: -- the slow test in test_covariance_crew.py runs them; the road-chesapeake paths: every index query with a
#: positive weight is a longest-path model, 126 s for 12 steps of all eight policies).
SLOW_SETUP = {"routing_geant.toml", "crew_matching.toml", "perrault_shortest_path.toml"}
#: Options the routing files were written with (as their header's command says).
ROUTING_OPTIONS = {"routing_abilene.toml": {"horizon": 20_000}, "routing_geant.toml": {"horizon": 20_000}}


def _optimum(name: str) -> tuple[object, object, np.ndarray, float]:
    problem = load_problem(PROBLEMS / name)
    space = problem.build_space()
    env = problem.build_environment(space)
    action, value = env.optimal(space, "highs")
    return space, env, action, value


@pytest.mark.parametrize("name", LIBRARY)
def test_file_documents_itself_validates_and_runs_a_tiny_horizon(name, tmp_path, capsys):
    if name in NEEDS_TOPOHUB:
        pytest.importorskip("topohub")
    path = PROBLEMS / name
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#"), "each library file opens with a comment saying what it models"
    assert main(["validate", str(path)]) == 0
    assert "ok" in capsys.readouterr().out
    problem = load_problem(path, steps=12, seeds=1)
    if name in SLOW_SETUP:  # every job enumerates the space once: keep one policy
        data = problem.to_dict()
        data["policies"] = data["policies"][:1]
        problem = parse_problem(data, problem.file)
    names = [p.name for p in problem.policies]  # named: policies on request (hours at full T) run too
    summary = run_problem(
        problem, tmp_path / "out", jobs=1, executor="serial", plots=False, stream=io.StringIO(), policies=names
    )
    assert summary["complete"]
    assert set(summary["policies"]) == {p.name for p in problem.policies}
    # CUCB (the crew file: OLS-UCB-C) asks the oracle every round, once more where some arm lies on no action
    # (GEANT's spur links)
    every_round = "CUCB" if "CUCB" in summary["policies"] else "OLS-UCB-C"
    assert 12 <= summary["policies"][every_round]["queries"]["mean"] <= 13


@pytest.mark.parametrize("name", sorted(ROUTING))
def test_routing_optimum_is_the_fastest_path(name):
    space, env, action, value = _optimum(name)
    graph = nx.Graph()
    for (u, v), mean in zip(space.arms, env.means, strict=True):
        assert mean < 0
        graph.add_edge(u, v, delay=-mean)
    assert nx.cycle_basis(graph), "the backbone has cycles"
    _, source, target = ROUTING[name]
    fastest = nx.shortest_path_length(graph, source, target, weight="delay")
    assert value == pytest.approx(-fastest, abs=1e-9)
    assert space.contains(action)


@pytest.mark.parametrize("name", sorted(ROUTING))
def test_routing_file_agrees_with_topohub(name):
    pytest.importorskip("topohub")
    from cmab_milp.topologies import link_mean, load_topology

    topology, _source, _target = ROUTING[name]
    truth = load_topology(topology)
    space, env, _, _ = _optimum(name)
    assert {frozenset(arm) for arm in space.arms} == {frozenset(e) for e in truth.edges()}
    expected = [link_mean(truth.edges[u, v]["dist"]) for u, v in space.arms]
    np.testing.assert_allclose(env.means, expected, atol=1e-6)
    assert np.allclose(np.diag(env.cov), 0.05**2) and np.count_nonzero(env.cov - np.diag(np.diag(env.cov))) == 0


@pytest.mark.parametrize("name", sorted(ROUTING))
def test_routing_file_is_the_generator_output_below_its_comments(name):
    pytest.importorskip("topohub")
    from cmab_milp.topologies import routing_problem_toml

    text = (PROBLEMS / name).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    body = "".join(lines[next(k for k, line in enumerate(lines) if not line.startswith("#")) :])
    assert body == routing_problem_toml(*ROUTING[name], **ROUTING_OPTIONS[name])


def test_routing_mapping_by_hand():
    from cmab_milp.topologies import link_delay_ms, link_mean

    # New York - Washington DC, 328.58 km: 1.6429 ms in fibre + 1 ms per hop
    assert link_delay_ms(328.58) == pytest.approx(2.6429)
    assert link_mean(328.58) == pytest.approx(-2.6429 / 20)
    with pytest.raises(ValueError, match="dist_km"):
        link_delay_ms(-1.0)


def test_routing_problem_refuses_unknown_nodes():
    pytest.importorskip("topohub")
    from cmab_milp.topologies import routing_problem

    with pytest.raises(ValueError, match="source 'Paris' is not a node"):
        routing_problem("topozoo/Abilene", "Paris", "Los Angeles")


def test_ad_allocation_optimum_is_the_best_assignment():
    space, env, _action, value = _optimum("ad_allocation.toml")
    attractiveness = [0.30, 0.25, 0.20, 0.15, 0.10, 0.06]
    examination = [1.0, 0.6, 0.35]
    for (ad, slot), mean in zip(space.arms, env.means, strict=True):
        assert mean == pytest.approx(attractiveness[ad] * examination[slot - 6])
    best = max(
        sum(attractiveness[a] * examination[s] for s, a in enumerate(ads))
        for ads in itertools.permutations(range(6), 3)
    )
    assert value == pytest.approx(best)


def test_network_design_optimum_is_the_maximum_spanning_tree():
    space, env, action, value = _optimum("network_design.toml")
    graph = nx.Graph()
    for (u, v), mean in zip(space.arms, env.means, strict=True):
        graph.add_edge(u, v, weight=mean)
    tree = nx.maximum_spanning_tree(graph)
    assert graph.number_of_nodes() == 16 and action.sum() == 15
    assert value == pytest.approx(tree.size(weight="weight"))


def test_diversified_recommendation_optimum_is_top_two_per_category():
    _space, env, action, value = _optimum("diversified_recommendation.toml")
    means = np.asarray(env.means)
    best = sum(np.sort(means[5 * k : 5 * k + 5])[-2:].sum() for k in range(4))
    assert value == pytest.approx(best)
    assert all(action[5 * k : 5 * k + 5].sum() <= 2 for k in range(4))


def test_budgeted_selection_optimum_is_the_best_affordable_subset():
    _space, env, action, value = _optimum("budgeted_selection.toml")
    costs = [3.0, 1.0, 2.5, 4.0, 1.5, 2.0, 3.5, 1.0, 2.0, 5.0, 1.5, 3.0, 2.5, 0.5, 4.5]
    means = np.asarray(env.means)
    best = max(
        means[list(subset)].sum()
        for k in range(6)
        for subset in itertools.combinations(range(15), k)
        if sum(costs[i] for i in subset) <= 10
    )
    assert value == pytest.approx(best)
    assert np.dot(costs, action) <= 10 and action.sum() <= 5


def test_sensor_placement_optimum_is_the_best_placement_within_the_rules():
    """Brute force over all 2^9 placements with the file's rules re-checked by hand, by site name."""
    space, env, action, value = _optimum("sensor_placement.toml")
    names = space.labels
    cost = dict(zip(names, [4, 2, 3, 5, 2, 2, 4, 3, 1], strict=True))
    conflicts = [("north-b", "east-b"), ("east-c", "south-c"), ("north-c", "south-b")]

    def ok(chosen: set[str]) -> bool:
        return (
            len(chosen) <= 4
            and sum(cost[n] for n in chosen) <= 10
            and all(any(n.startswith(zone) for n in chosen) for zone in ("north", "east", "south"))
            and not any(a in chosen and b in chosen for a, b in conflicts)
        )

    placements = [{n for n, x in zip(names, bits, strict=True) if x} for bits in itertools.product((0, 1), repeat=9)]
    feasible = [p for p in placements if ok(p)]
    assert sorted(map(sorted, feasible)) == sorted(sorted(space.labels_of(a)) for a in space.enumerate())
    mean = dict(zip(names, env.means, strict=True))
    best = max(feasible, key=lambda p: sum(mean[n] for n in p))
    assert set(space.labels_of(action)) == best
    assert value == pytest.approx(sum(mean[n] for n in best))


def test_the_routing_files_say_what_combinatorial_does() -> None:
    # the comment says combinatorial answers all-nonpositive weights and declines the rest
    import cmab_milp as cm

    assert "answers the queries whose weights are all" in (PROBLEMS / "routing_abilene.toml").read_text()
    problem = load_problem(PROBLEMS / "routing_abilene.toml")
    space = problem.build_space()
    combinatorial, highs = cm.make_oracle(space, "combinatorial"), cm.make_oracle(space, "highs")
    delays = -np.random.default_rng(0).uniform(0.1, 1.0, size=space.d)
    assert np.array_equal(combinatorial.argmax(delays), highs.argmax(delays))
    mixed = delays.copy()
    mixed[0] = 0.5
    with pytest.raises(cm.UnsupportedQuery):
        combinatorial.argmax(mixed)
    through = combinatorial.argmax(delays, include=[0])  # one link in: two disjoint paths (a min-cost flow)
    assert through[0] and np.array_equal(through, highs.argmax(delays, include=[0]))
    with pytest.raises(cm.UnsupportedQuery):
        combinatorial.argmax(delays, include=[0, 1])


#: The quick check every shipped file must pass: ``cmab-milp run FILE --horizon 2000 --seeds 1``.
QUICK_CHECK = ["--horizon", "2000", "--seeds", "1", "--no-plots"]
#: Within 2 minutes on 2 cores: checked as CPU seconds of the command and its workers, which a loaded
#: machine inflates far less than the wall time (at load 10-14 on 2 cores a run's wall time is 3-6x its CPU time).
QUICK_CHECK_CPU_SECONDS = 120.0


#: Files whose quick check is known to take longer, with the measurement (an open finding, not run). None at
#: present: ``perrault_shortest_path.toml`` left the list when its per-arm indices were clipped at 0
#: (``outcome_bounds``, the authors' choice): 33 CPU s, was over 10 minutes.
QUICK_CHECK_KNOWN_SLOW: dict[str, str] = {}


def _quick_check_params() -> list:
    return [
        pytest.param(path, marks=pytest.mark.xfail(reason=QUICK_CHECK_KNOWN_SLOW[path.name], run=False))
        if path.name in QUICK_CHECK_KNOWN_SLOW
        else path
        for path in sorted(PROBLEMS.glob("*.toml"))
    ]


@pytest.mark.slow
@pytest.mark.parametrize("path", _quick_check_params(), ids=lambda p: p.name)
def test_every_problem_file_passes_the_quick_check_within_2_minutes(path, tmp_path):
    """Every file of ``problems/``, ``routing_geant.toml`` included (it took ~10 minutes while ``auto``
    no longer enumerated its 17,023 paths: a count stopped at its planning bound was never tried again)."""
    import resource
    import subprocess
    import sys

    if path.name in NEEDS_TOPOHUB:
        pytest.importorskip("topohub")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "cmab_milp.cli", "run", str(path), *QUICK_CHECK, "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < QUICK_CHECK_CPU_SECONDS, f"{path.name}: {cpu:.0f} CPU seconds"
