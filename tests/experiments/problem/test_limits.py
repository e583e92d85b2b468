"""Limits before work: sizes are refused by ``validate`` at once, with the key, the limit and how to raise it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import GENERATORS, Limits, ProblemError, load_problem
from cmab_milp.experiments.problem.limits import CEILINGS

ENV = '[environment]\nkind = "BernoulliArms"\nmeans = { draw = "uniform", seed = 1 }\n'
POLICY = '[[policies]]\nname = "CUCB"\nkind = "CUCB"\noracle = "highs"\n'


def problem(space: str = '[space]\nkind = "Cardinality"\nd = 4\nm = 2\n', env: str = ENV, run: str = "") -> str:
    return f"{space}\n{env}\n{POLICY}\n[run]\nhorizon = 20\nseeds = 1\n{run}"


def graph(generator: str, args: str) -> str:
    return f'[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "{generator}"\nargs = {args}\n'


TOO_LARGE = [  # (file text, key, limit name): each of these ran out of time or memory before
    (problem('[space]\nkind = "Cardinality"\nd = 10_000_000\nm = 3\n'), "space.d", "arms"),
    (problem(env=ENV.replace("seed = 1", "seed = 1, size = 500_000_000")), "environment.means.size", "draw_size"),
    (problem(graph("complete_graph", "[4000]")), "space.graph.args", "arms"),
    (problem(graph("grid_2d_graph", "[1000, 1000]")), "space.graph.args", "graph_nodes"),
    (problem(graph("hypercube_graph", "[40]")), "space.graph.args", "graph_nodes"),
    (problem(graph("balanced_tree", "[10, 30]")), "space.graph.args", "graph_nodes"),
    (problem(graph("complete_multipartite_graph", "[3000, 3000]")), "space.graph.args", "arms"),
    (problem(run="curve_points = 1_000_000_000\n"), "run.curve_points", "curve_points"),
    (problem().replace("horizon = 20", "horizon = 9223372036854775807"), "run.horizon", "horizon"),
    (problem().replace("seeds = 1", "seeds = 100_000_000"), "run.seeds", "seeds"),
    (
        problem('[space]\nkind = "PartitionMatroid"\nblocks = [[0]]\ncapacities = [' + "1, " * 6000 + "1]\n"),
        "space.capacities",
        "arms",
    ),
]


@pytest.mark.parametrize(("content", "key", "limit"), TOO_LARGE)
def test_too_large_is_refused_before_the_work_starts(
    content: str, key: str, limit: str, tmp_path: Path, capsys
) -> None:
    path = tmp_path / "big.toml"
    path.write_text(content)
    start = time.perf_counter()
    assert main(["validate", str(path)]) == 2
    # the refused work takes minutes and gigabytes; 5 s leaves room for a loaded machine (1 s flaked at load 10)
    assert time.perf_counter() - start < 5.0
    err = capsys.readouterr().err
    assert f": {key}: " in err, err
    assert f"above the limit {limit} = {getattr(Limits(), limit)}" in err
    assert f"[run] limits = {{ {limit} = N }}" in err  # how to raise it


def test_generators_are_not_called_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    called = []
    spec = GENERATORS["complete_graph"]
    monkeypatch.setitem(
        GENERATORS,
        "complete_graph",
        type(spec)(lambda n: called.append(n) or nx.complete_graph(n), spec.params, spec.size),
    )
    from cmab_milp.experiments.problem.builders import build_graph
    from cmab_milp.experiments.problem.schema import Table

    with pytest.raises(ProblemError, match="may have 7998000 edges"):
        build_graph(Table({"generator": "complete_graph", "args": [4000]}, "space.graph", "x.toml"))
    assert called == []
    graph, _ = build_graph(Table({"generator": "complete_graph", "args": [5]}, "space.graph", "x.toml"))
    assert called == [5] and graph.number_of_edges() == 10


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generator_size_bounds_hold(name: str) -> None:
    """Each generator's bound (computed before the call) is at least the size of the graph it builds."""
    spec = GENERATORS[name]
    small = {"int": 5, "ints": [3, 4], "prob": 0.5, "bool": False, "seed": 1}
    special = {
        "random_regular_graph": [2, 6],
        "turan_graph": [6, 2],
        "balanced_tree": [2, 3],
        "watts_strogatz_graph": [8, 2, 0.3],
        "connected_watts_strogatz_graph": [8, 2, 0.3],
        "barabasi_albert_graph": [8, 2],
        "gnm_random_graph": [8, 10],
    }
    if spec.variadic:
        args = [2, 3, 4]
        values = {spec.params[0][0]: args}
    else:
        args = special.get(name, [small[kind] for _, kind in spec.params if kind in ("int", "ints", "prob")])
        values = dict(zip([p for p, _ in spec.params], args, strict=False))
        for p, kind in spec.params:
            values.setdefault(p, {"bool": False, "seed": None}.get(kind, 100))
    nodes, edges = spec.size(values)
    built = spec.function(*args)
    assert built.number_of_nodes() <= nodes and built.number_of_edges() <= edges


def test_a_raised_limit_is_accepted_and_runs(tmp_path: Path) -> None:
    space = '[space]\nkind = "Cardinality"\nd = 5_001\nm = 2\n'
    path = tmp_path / "p.toml"
    path.write_text(problem(space))
    with pytest.raises(ProblemError, match=r"space\.d: 5001 is above the limit arms = 5000"):
        load_problem(path)
    path.write_text(problem(space, run="limits = { arms = 6_000 }\n").replace("horizon = 20", "horizon = 3"))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    stored = json.loads((out / "problem.json").read_text())
    assert stored["problem"]["run"]["limits"] == {"arms": 6000}
    # problem.json holds the draw's recipe, not 5,001 drawn values
    assert stored["problem"]["environment"]["means"] == {"draw": "uniform", "seed": 1}
    assert (out / "problem.json").stat().st_size < 2_000
    # resuming re-reads the same file and limits: nothing left to run
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--resume"]) == 0


def test_drawn_values_are_rebuilt_from_the_recipe(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(problem())
    loaded = load_problem(path)
    assert loaded.environment["means"] == {"draw": "uniform", "seed": 1}
    expected = np.random.default_rng(1).uniform(0, 1, 4)
    assert np.array_equal(loaded.build_environment().means, expected)


@pytest.mark.parametrize(
    ("limits", "key", "message"),
    [
        ("{ horizon = 1_125_899_906_842_625 }", "run.limits.horizon", f"cannot exceed {CEILINGS['horizon']}"),
        ("{ arms = 0 }", "run.limits.arms", "must be >= 1"),
        ("{ arms = 1.5 }", "run.limits.arms", "expected an integer"),
        ("{ colours = 3 }", "run.limits.colours", "unknown key"),
    ],
)
def test_bad_limits_are_refused(limits: str, key: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(problem(run=f"limits = {limits}\n"))
    with pytest.raises(ProblemError) as info:
        load_problem(path)
    assert f": {key}: " in str(info.value) and message in str(info.value), str(info.value)


def test_the_horizon_ceiling_builds_every_policy(tmp_path: Path) -> None:
    """A horizon at the ceiling is accepted only if every policy can be built with it (no overflow at T)."""
    path = tmp_path / "p.toml"
    text = problem(run=f"limits = {{ horizon = {CEILINGS['horizon']} }}\n").replace(
        "horizon = 20", f"horizon = {CEILINGS['horizon']}"
    )
    for kind in ("AROQ", "SROQ"):
        text += f'\n[[policies]]\nname = "{kind}"\nkind = "{kind}"\noracle = "enumerate"\n'
    path.write_text(text)
    assert load_problem(path).horizon == CEILINGS["horizon"]


def test_the_seed_override_is_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(problem())
    with pytest.raises(ProblemError, match=r"run\.seeds: 5000 is above the limit seeds = 1000"):
        load_problem(path, seeds=5000)
