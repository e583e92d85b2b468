"""The published baseline experiments as problem files: each models what its source says (graph, means, covariance,
constants), and the generator reproduces the shipped files byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments import load_problem

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "problems"


def test_the_road_graph_is_the_mtx_file_with_the_authors_node_numbers() -> None:
    lines = [ln for ln in (PROBLEMS / "data" / "road-chesapeake.mtx").read_text().splitlines() if ln[:1] != "%"]
    assert lines[0].split() == ["39", "39", "170"]
    mtx = {frozenset((int(a) - 1, int(b) - 1)) for a, b in (ln.split()[:2] for ln in lines[1:])}
    problem = load_problem(PROBLEMS / "perrault_shortest_path.toml")
    space = problem.build_space()
    assert {frozenset(arm) for arm in space.arms} == mtx and space.d == 170
    env = problem.build_environment(space)
    assert isinstance(env, cm.BernoulliCosts) and np.all(env.means <= 0)
    _, value = env.optimal(space)
    graph = nx.Graph()
    for (u, v), cost in zip(space.arms, env.costs, strict=True):
        graph.add_edge(u, v, cost=cost)
    assert value == pytest.approx(-nx.shortest_path_length(graph, 1, 33, weight="cost"), abs=1e-9)


@pytest.mark.parametrize(("name", "c"), [("cneg", -1 / 16), ("c02", 0.2), ("c05", 0.5), ("c1", 1.0)])
def test_perrault_matchings_covariance_and_constants(name, c) -> None:
    problem = load_problem(PROBLEMS / f"perrault_matchings_{name}.toml")
    space = problem.build_space()
    env = problem.build_environment(space)
    assert space.d == 16 and len(space.enumerate()) == 24
    np.testing.assert_allclose(env.cov, (1 - c) * np.eye(16) + c * np.ones((16, 16)), atol=1e-12)
    cts = problem.build_policy("CTS", space)
    assert cts.params["prior"] == "gaussian" and cts.params["sigma"] == pytest.approx(np.sqrt(1 + 3 * max(c, 0)))
    assert problem.build_policy("CUCB", space).params["C"] == 2.0
    assert problem.build_policy("ESCB", space).params["loglog"] == 0.0


@pytest.mark.parametrize(("name", "a", "b"), [("07_05", 0.7, 0.5), ("095_03", 0.95, 0.3)])
def test_combes_matchings_optimum_is_the_designated_perfect_matching(name, a, b) -> None:
    problem = load_problem(PROBLEMS / f"combes_matchings_{name}.toml")
    space = problem.build_space()
    env = problem.build_environment(space)
    action, value = env.optimal(space)
    assert value == pytest.approx(5 * a)
    assert {tuple(sorted(space.arms[k])) for k in np.flatnonzero(action)} == {(i, 5 + i) for i in range(5)}
    assert sorted(set(np.round(env.means, 6))) == sorted({a, b})


def test_combes_spanning_trees_gap_is_the_papers() -> None:
    problem = load_problem(PROBLEMS / "combes_spanning_trees.toml")
    space = problem.build_space()
    env = problem.build_environment(space)
    values = np.sort(env.expected_rewards(space.enumerate()))[::-1]
    assert len(values) == 125 and values[0] - values[1] == pytest.approx(0.54)


def test_the_generator_reproduces_the_shipped_files(tmp_path) -> None:
    names = sorted(p.name for p in PROBLEMS.glob("perrault_*.toml")) + sorted(
        p.name for p in PROBLEMS.glob("combes_*.toml")
    )
    script = ROOT / "bench" / "published_problems.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, capture_output=True)
    assert sorted(p.name for p in tmp_path.glob("*.toml")) == sorted(names)
    for name in names:
        assert (tmp_path / name).read_bytes() == (PROBLEMS / name).read_bytes(), name
    for csv in (PROBLEMS / "data").glob("*_cov.csv"):
        assert (tmp_path / "data" / csv.name).read_bytes() == csv.read_bytes(), csv.name
