"""What a new user tripped over in the first hour: each finding, checked against its plain truth."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import cmab_milp as cm


# ---------------------------------------------------------------- 1. outcomes by label
@pytest.mark.parametrize(
    "make",
    [
        lambda: cm.Cardinality(4, 2, labels=["a", "b", "c", "d"]),
        lambda: cm.Cardinality(4, 2).with_labels(["a", "b", "c", "d"]).with_conflicts([("a", "c")]),
        lambda: cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1]).with_labels(["a", "b", "c", "d"]),
    ],
)
def test_observe_takes_labels_on_labelled_non_graph_spaces(make):
    space = make()
    by_label = cm.CUCB(space, 100, oracle="enumerate")
    by_index = cm.CUCB(space, 100, oracle="enumerate")
    action = by_label.select()
    assert np.array_equal(action, by_index.select())
    played = np.flatnonzero(action)
    values = {int(k): 0.1 + 0.2 * k for k in played}
    by_label.observe(action, {space.labels_of(np.eye(space.d, dtype=bool)[k])[0]: v for k, v in values.items()})
    by_index.observe(action, values)
    assert np.array_equal(by_label.index.counts, by_index.index.counts)
    assert np.array_equal(by_label.index.sums, by_index.index.sums)
    assert by_label.index.counts.sum() == len(played)
    with pytest.raises(ValueError, match="'zz'"):
        by_label.observe(by_label.select(), {"zz": 1.0})


# ---------------------------------------------------------------- 4. space helpers behind rules
def _base_spaces():
    import networkx as nx

    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    yield cm.STPaths(grid, 0, 8)
    yield cm.Matchings(nx.complete_bipartite_graph(2, 3))
    yield cm.SpanningTrees(nx.cycle_graph(4))
    yield cm.GraphicMatroid(nx.cycle_graph(4))
    yield cm.Cardinality(5, 2, exact=True)
    yield cm.PartitionMatroid([[0, 1], [2, 3, 4]], [1, 2])
    yield cm.ExplicitActions([[1, 0, 1, 0, 0], [0, 1, 0, 1, 1]])


def _wrapped(space):
    d = space.d
    labels = [f"x{k}" for k in range(d)]
    return {
        "constraint": space.with_constraint(np.ones(d), "<=", d),
        "conflicts": space.with_conflicts([(0, 1)]),
        "budget": space.with_budget(np.ones(d), d),
        "group": space.with_at_most(d, list(range(d))),
        "labels": space.with_labels(labels),
        "labels then rules": space.with_labels(labels).with_conflicts([("x0", "x1")]).with_budget(np.ones(d), d),
        "intersection": cm.Intersection(space.with_conflicts([(0, 1)]), cm.Cardinality(d, d)),
    }


@pytest.mark.parametrize("space", list(_base_spaces()), ids=lambda s: type(s).__name__)
def test_space_helpers_stay_available_behind_rules_and_labels(space):
    assert space.helpers, "every kind of space names its own helpers"
    for how, wrapped in _wrapped(space).items():
        for name in space.helpers:
            assert hasattr(wrapped, name), f"{how}: {name} vanished"
            mine, theirs = getattr(space, name), getattr(wrapped, name)
            if not callable(mine):
                assert theirs is mine or theirs == mine, (how, name)
            assert name in dir(wrapped)
        with pytest.raises(AttributeError, match="no_such_helper"):
            wrapped.no_such_helper  # noqa: B018


def test_path_edges_on_a_path_space_with_rules_is_the_path_travelled():
    import networkx as nx

    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(4, 4))
    base = cm.STPaths(graph, 0, 15)
    space = (
        base.with_constraint(np.ones(base.d), "<=", 8)
        .with_conflicts([(0, 1)])
        .with_labels([f"e{k}" for k in range(base.d)])
    )
    best = cm.make_oracle(space, "enumerate").argmax(-np.ones(space.d))
    edges = space.path_edges(best)
    assert edges == base.path_edges(best)
    # independent truth: consecutive edges chain from 0 to 15, and are exactly the chosen arms
    assert edges[0][0] == 0 and edges[-1][1] == 15
    assert all(a[1] == b[0] for a, b in itertools.pairwise(edges))
    chosen = {frozenset(base.arms[k]) for k in np.flatnonzero(best)}
    assert {frozenset(e) for e in edges} == chosen


# ---------------------------------------------------------------- 5. every error at once
def _problem(space_extra: dict, policies: list[dict]) -> dict:
    space = {"kind": "Cardinality", "d": 6, "m": 3, "labels": list("abcdef")} | space_extra
    return {
        "space": space,
        "environment": {"kind": "UniformNoise", "means": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]},
        "policies": policies,
        "run": {"horizon": 100, "seeds": 1},
    }


def _keys(data: dict) -> list[str]:
    from cmab_milp.experiments.problem.problem_file import parse_problem
    from cmab_milp.experiments.problem.schema import ProblemError, ProblemErrors

    with pytest.raises(ProblemError) as info:
        parse_problem(data, "f.toml")
    errors = info.value.errors if isinstance(info.value, ProblemErrors) else [info.value]
    return sorted(e.key for e in errors)


def test_a_key_misspelled_in_every_group_is_reported_for_each():
    groups = [{"arms": list(pair), "at_lest": 1} for pair in ("ab", "cd", "ef", "af", "be", "cf")]
    keys = _keys(_problem({"groups": groups}, [{"name": "A", "kind": "CUCB", "oracle": "enumerate"}]))
    assert keys == [f"space.groups[{k}].at_lest" for k in range(6)]


def test_a_mistake_in_every_kind_of_rule_is_reported_for_each():
    rules = {
        "conflicts": [{"pairs": [["a", "b"]], "pears": 1}],
        "constraints": [{"coeffs": {"a": 1}, "sense": "<=", "rhs": 2, "rsh": 2}],
        "budgets": [{"costs": {"a": 1}, "budget": 3}, {"costs": {"zz": 1}, "budget": 3}],
        "groups": [{"arms": ["a"], "at_most": 1, "at_mots": 1}],
    }
    keys = _keys(_problem(rules, [{"name": "A", "kind": "CUCB", "oracle": "enumerate"}]))
    assert keys == [
        "space.budgets[1].costs.zz",
        "space.conflicts[0].pears",
        "space.constraints[0].rsh",
        "space.groups[0].at_mots",
    ]


def test_a_wrong_policy_kind_is_reported_with_the_wrong_oracle_names():
    policies = [
        {"name": "A", "kind": "CUCBB", "oracle": "higs"},
        {"name": "B", "kind": "AROQ", "oracle": "nosuch"},
        {"name": "C", "kind": "SROQQ", "oracle": "enumerate"},
    ]
    keys = _keys(_problem({"groups": [{"arms": ["a"], "at_lest": 1}]}, policies))
    assert keys == [
        "policies[0].kind",
        "policies[0].oracle",
        "policies[1].oracle",
        "policies[2].kind",
        "space.groups[0].at_lest",
    ]


# ---------------------------------------------------------------- 6. progress in Python, short repr
def test_simulate_progress_true_shows_a_bar_and_changes_nothing(capsys):
    space = cm.Cardinality(5, 2)
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 5), width=0.2, seed=0)
    plain = cm.simulate(cm.CUCB(space, 300, oracle="enumerate"), env, 300, seed=3)
    capsys.readouterr()
    shown = cm.simulate(cm.CUCB(space, 300, oracle="enumerate"), env, 300, seed=3, progress=True)
    err = capsys.readouterr().err
    assert "CUCB" in err and "300/300" in err and "step" in err  # tqdm's bar, ended at T
    for name in ("t", "regret", "queries", "rounds"):
        assert np.array_equal(getattr(plain, name), getattr(shown, name))
    seen = []
    cm.simulate(cm.CUCB(space, 300, oracle="enumerate"), env, 300, seed=3, progress=lambda t, T: seen.append((t, T)))
    assert seen[-1] == (300, 300) and len(seen) == 300  # a callable still gets (t, T) per stretch
    with pytest.raises(ValueError, match="progress"):
        cm.simulate(cm.CUCB(space, 300, oracle="enumerate"), env, 300, progress="yes")


def test_a_result_prints_as_a_short_summary():
    space = cm.Cardinality(5, 2)
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 5), width=0.2, seed=0)
    result = cm.simulate(cm.CUCB(space, 5000, oracle="enumerate"), env, 5000, seed=0)
    text = repr(result)
    assert str(result) == text and "\n" not in text and len(text) < 200
    assert text.startswith("SimulationResult(CUCB, T=5,000, seed=0: ")
    assert f"regret {result.regret[-1]:,.4g}" in text and f"{int(result.queries[-1]):,} queries" in text
    assert "array" not in text


# ---------------------------------------------------------------- 9. files follow the umask
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_saved_learners_follow_the_umask_like_results(tmp_path, mask):
    import os

    from cmab_milp.experiments.run.storage import write_json

    old = os.umask(mask)
    try:
        policy = cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate")
        policy.save(tmp_path / "learner.npz")
        write_json(tmp_path / "summary.json", {"a": 1})
    finally:
        os.umask(old)
    expected = 0o666 & ~mask
    assert (tmp_path / "learner.npz").stat().st_mode & 0o777 == expected
    assert (tmp_path / "summary.json").stat().st_mode & 0o777 == expected
    assert cm.load_policy(tmp_path / "learner.npz").pending == 0


# ---------------------------------------------------------------- 9. coinciding curves stay visible
def test_coinciding_curves_stay_visible_and_are_named_in_a_note():
    from cmab_milp.experiments.report.plots import PolicyCurves, make_figure

    t = np.unique(np.geomspace(1, 5000, 80).round())
    same = np.vstack([20 * np.sqrt(t), 21 * np.sqrt(t)])
    curves = {
        "CUCB": PolicyCurves(t, {"regret": same}),
        "OLS-UCB-C": PolicyCurves(t, {"regret": same.copy()}),  # drawn exactly over CUCB
        "SROQ-C": PolicyCurves(t, {"regret": 3 * same}),
    }
    ax = make_figure(curves, ["regret"]).axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in curves]
    assert len(lines) == 3
    # the curve on top never hides the one under it: other dashes, other markers, markers at other steps
    styles = {(line.get_linestyle(), line.get_marker()) for line in lines}
    assert len(styles) == 3
    top, under = lines[1], lines[0]
    assert top.get_linestyle() != "-" and top.get_markevery() != under.get_markevery()
    notes = [child.get_text() for child in ax.texts]
    assert any("CUCB and OLS-UCB-C coincide" in note for note in notes)
    assert not any("SROQ-C" in note for note in notes)
    assert ax.get_xlabel() == "time step t"  # the glossary's word: a round is an adaptivity round


# ---------------------------------------------------------------- 7. the glossary's words, docs that stand alone
def test_progress_lines_count_steps_as_the_glossary_says():
    import io

    from cmab_milp.experiments.run.progress import Progress

    stream = io.StringIO()
    progress = Progress(1, stream=stream, clock=iter([0.0, 1.0, 11.0, 12.0]).__next__)
    progress.job("CUCB seed 0", 100, 2000)
    progress.job("CUCB seed 0", 500, 2000)
    assert "500/2,000 steps (25%)" in stream.getvalue() and "rounds" not in stream.getvalue()


def test_docs_cite_no_file_outside_the_repository():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = sorted(p for p in (root / "docs").rglob("*.md") if "_build" not in p.parts)
    texts = [root / "README.md", *pages, *sorted((root / "notebooks").glob("*.ipynb"))]
    for path in texts:
        assert "/work/" not in path.read_text(encoding="utf-8"), path.name


def test_readme_lists_every_notebook():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    readme = readme.split("\n## Notebooks\n", 1)[1].split("\n## ", 1)[0]  # the section that lists them
    notebooks = sorted(p.name for p in (root / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 4
    for name in notebooks:
        assert name in readme, name


# ---------------------------------------------------------------- 2. names of real things, with suggestions
def test_an_unknown_topology_name_suggests_the_close_ones():
    pytest.importorskip("topohub")
    from cmab_milp.topologies import load_topology, topology_names

    with pytest.raises(ValueError) as info:
        load_topology("GEANT")
    message = str(info.value)
    geants = [n for n in topology_names() if "geant" in n.lower().rsplit("/", 1)[-1]]
    assert "sndlib/geant" in geants and "topozoo/Geant2012" in geants
    for name in geants[:5]:
        assert repr(name) in message
    assert message.index("'sndlib/geant'") < message.index("'topozoo/Geant2012'")  # same name first
    assert "cmab-milp topologies" in message


def test_an_unknown_node_lists_the_nodes_and_suggests_close_ones():
    pytest.importorskip("topohub")
    from cmab_milp.topologies import load_topology

    graph = load_topology("topozoo/Geant2012")
    with pytest.raises(ValueError) as info:
        cm.STPaths(graph, "London", "gr")
    message = str(info.value)
    assert "source 'London' is not a node" in message and "target 'gr' is not a node" in message
    assert "did you mean 'GR'" in message
    assert f"its {graph.number_of_nodes()} nodes" in message
    assert all(repr(v) in message for v in graph)  # 37 nodes: all listed


def test_a_large_graph_lists_its_first_nodes_and_a_count():
    import networkx as nx

    graph = nx.path_graph(300)
    with pytest.raises(ValueError, match=r"its 300 nodes: 0, 1, 2, .*\.\.\. \(300 in all\)"):
        cm.STPaths(graph, 0, 999)


def test_cli_lists_topologies_and_the_nodes_of_one(capsys):
    pytest.importorskip("topohub")
    from cmab_milp.cli import main
    from cmab_milp.topologies import load_topology

    assert main(["topologies", "--match", "geant"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed[0] == "sndlib/geant" and "topozoo/Geant2012" in listed
    assert main(["topologies", "topozoo/Geant2012"]) == 0
    out = capsys.readouterr().out
    graph = load_topology("topozoo/Geant2012")
    assert f"{graph.number_of_nodes()} nodes, {graph.number_of_edges()} links" in out
    assert all(str(v) in out for v in graph)
    assert main(["topologies", "GEANT"]) == 2
    assert "did you mean 'sndlib/geant'" in capsys.readouterr().err


# ---------------------------------------------------------------- 8. queries beyond one per step are accounted for
def _routing(with_leaves: bool):
    import networkx as nx

    graph = nx.cycle_graph(6)
    graph.add_edges_from([(0, 3), (1, 4)])
    if with_leaves:
        graph.add_edges_from([(2, "leaf"), (5, "spur"), ("spur", "tip")])  # links on no 0 -> 3 path
    space = cm.STPaths(graph, 0, 3)
    means = np.linspace(0.2, 0.8, space.d)
    return space, cm.UniformNoise(means, width=0.2, seed=1)


@pytest.mark.parametrize("with_leaves", [False, True])
def test_every_query_beyond_one_per_step_is_named_with_its_step_and_arms(with_leaves):
    space, env = _routing(with_leaves)
    in_no_action = ~space.enumerate().any(axis=0)  # brute force: arms of no s-t path
    assert in_no_action.any() == with_leaves
    T = 300
    policy = cm.CUCB(space, T, oracle="enumerate")
    result = cm.simulate(policy, env, T, seed=0)
    notes = result.info.get("extra_queries", [])
    assert int(result.queries[-1]) == T + sum(note["queries"] for note in notes)
    if not with_leaves:
        assert notes == [] and "extra" not in repr(result)
        return
    assert len(notes) == 1 and notes[0]["queries"] == 1
    assert sorted(map(str, notes[0]["arms"])) == sorted(str(space.arms[k]) for k in np.flatnonzero(in_no_action))
    assert 1 <= notes[0]["step"] <= space.d and "no action of the space" in notes[0]["why"]
    assert "(1 extra: info['extra_queries'])" in repr(result)
    # a second run of the same policy object starts a fresh record
    again = cm.simulate(policy, env, T, seed=0)
    assert again.info["extra_queries"] == notes


def test_run_job_files_name_the_extra_queries(tmp_path):
    import json

    from cmab_milp.experiments.problem.problem_file import parse_problem
    from cmab_milp.experiments.run.runner import run_problem

    data = {
        "space": {
            "kind": "STPaths",
            "source": 0,
            "target": 3,
            "graph": {"edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0], [2, 9]]},
        },
        "environment": {"kind": "UniformNoise", "means": [0.5] * 7, "width": 0.1},
        "policies": [{"name": "CUCB", "kind": "CUCB", "oracle": "enumerate"}],
        "run": {"horizon": 50, "seeds": 1},
    }
    problem = parse_problem(data, "f.toml")
    run_problem(problem, tmp_path / "out", jobs=1, plots=False, stream=__import__("io").StringIO())
    record = json.loads((tmp_path / "out" / "runs" / "CUCB" / "seed_0.json").read_text())
    assert record["totals"]["queries"] == 51
    assert [note["arms"] for note in record["extra_queries"]] == [[[2, 9]]]


# ---------------------------------------------------------------- 3. correlated noise from a data file, shared shocks
def _gaussian_problem(tmp_path, cov, *, space=None, limits=None) -> dict:
    space = space or {"kind": "Cardinality", "d": 4, "m": 2, "labels": ["a", "b", "c", "d"]}
    run = {"horizon": 50, "seeds": 1} | ({"limits": limits} if limits else {})
    return {
        "space": space,
        "environment": {"kind": "GaussianNoise", "means": {"draw": "uniform", "seed": 1}, "cov": cov},
        "policies": [{"name": "A", "kind": "OLSUCBC", "oracle": "enumerate"}],
        "run": run,
    }


def _parse(tmp_path, data):
    from cmab_milp.experiments.problem.problem_file import parse_problem

    return parse_problem(data, str(tmp_path / "problem.toml"))


def test_a_covariance_from_npy_or_csv_beside_the_problem_file(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    sigma = a @ a.T / 10
    np.save(tmp_path / "cov.npy", sigma)
    np.savetxt(tmp_path / "cov.csv", sigma, delimiter=",", header="a 4 x 4 covariance")
    for name in ("cov.npy", "cov.csv"):
        problem = _parse(tmp_path, _gaussian_problem(tmp_path, {"file": name}))
        env = problem.build_environment()
        np.testing.assert_allclose(env.cov, sigma, rtol=0, atol=1e-12)
        stored = problem.environment["cov"]
        assert stored["file"] == name and len(stored["sha256"]) == 64  # the recipe, not d^2 numbers


def test_factors_and_shared_shocks_add_up_to_the_covariance(tmp_path):
    factors = np.array([[0.3, 0.0], [0.3, 0.1], [0.0, 0.2], [0.1, 0.1]])
    np.savetxt(tmp_path / "loadings.csv", factors, delimiter=",")
    cov = {
        "factors": {"file": "loadings.csv"},
        "shared": [{"arms": ["a", "b", "c"], "variance": 0.04}, {"arms": [2, "d"], "variance": 0.01}],
        "diagonal": {"a": 0.01, "b": 0.02, "c": 0.03, "d": 0.04},
    }
    env = _parse(tmp_path, _gaussian_problem(tmp_path, cov)).build_environment()
    truth = factors @ factors.T + np.diag([0.01, 0.02, 0.03, 0.04])
    for group, variance in (([0, 1, 2], 0.04), ([2, 3], 0.01)):
        for i in group:
            for j in group:
                truth[i, j] += variance
    np.testing.assert_allclose(env.cov, truth, atol=1e-12)


def test_shared_shocks_per_node_of_a_graph_space(tmp_path):
    space = {"kind": "Matchings", "graph": {"generator": "complete_bipartite_graph", "args": [2, 3]}}
    cov = {"shared": [{"nodes": [0, 1, 2, 3, 4], "variance": 0.05}], "diagonal": 0.01}
    problem = _parse(tmp_path, _gaussian_problem(tmp_path, cov, space=space))
    built = problem.build_space()
    env = problem.build_environment(built)
    # independent truth: two links share as many shocks as they share endpoints
    for i, e in enumerate(built.arms):
        for j, f in enumerate(built.arms):
            shared = len(set(e) & set(f))
            assert env.cov[i, j] == pytest.approx(0.05 * shared + (0.01 if i == j else 0.0))


@pytest.mark.parametrize(
    ("cov", "key", "fragment"),
    [
        ({"file": "pickled.npy"}, "environment.cov.file", "holds object values"),
        ({"file": "wide.npy"}, "environment.cov.file", "needs a 4 x 4 matrix, the file holds shape (4, 5)"),
        ({"file": "/etc/passwd"}, "environment.cov.file", "relative to the problem file's folder"),
        ({"file": "../cov.npy"}, "environment.cov.file", "in the problem file's folder or below it"),
        ({"file": "missing.csv"}, "environment.cov.file", "no such file 'missing.csv'"),
        ({"file": "cov.txt"}, "environment.cov.file", ".npy (numpy, no pickle) or .csv"),
        ({"file": "text.csv"}, "environment.cov.file", "not a CSV of numbers"),
        ({"factors": [[0.1], [0.2]]}, "environment.cov.factors", "needs one row per arm: d=4, got 2 rows"),
        ({"shared": [{"arms": ["a", "zz"], "variance": 0.1}]}, "environment.cov.shared[0].arms[1]", "unknown arm 'zz'"),
        ({"shared": [{"arms": ["a"], "variance": -1}]}, "environment.cov.shared[0].variance", ">= 0"),
        ({"shared": [{"nodes": [0], "variance": 1}]}, "environment.cov.shared[0].nodes", "needs a graph space"),
        ({"file": "cov.npy", "factor": 1}, "environment.cov.factor", "unknown key"),
    ],
)
def test_bad_matrix_recipes_are_refused_at_their_key(tmp_path, cov, key, fragment):
    from cmab_milp.experiments.problem.schema import ProblemError

    np.save(tmp_path / "cov.npy", np.eye(4))
    np.save(tmp_path / "wide.npy", np.zeros((4, 5)))
    np.save(tmp_path / "pickled.npy", np.array([[{"x": 1}] * 4] * 4, dtype=object), allow_pickle=True)
    (tmp_path / "cov.txt").write_text("1,0\n0,1\n")
    (tmp_path / "text.csv").write_text("a,b,c,d\n" * 4)
    with pytest.raises(ProblemError) as info:
        _parse(tmp_path, _gaussian_problem(tmp_path, cov))
    errors = getattr(info.value, "errors", [info.value])
    assert any(e.key == key and fragment in e.message for e in errors), [str(e) for e in errors]


def test_a_data_file_is_size_checked_before_it_is_read(tmp_path, monkeypatch):
    from cmab_milp.experiments.problem.schema import ProblemError

    np.save(tmp_path / "big.npy", np.zeros((4, 300_000)))  # 9.6 MB: only its header is read
    (tmp_path / "big.csv").write_text("# padding\n" * 1000 + "0,0,0,0\n" * 4)  # 10 kB for 16 numbers
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("np.load reached"))
    monkeypatch.setattr(np, "loadtxt", lambda *a, **k: pytest.fail("np.loadtxt reached"))
    with pytest.raises(ProblemError, match=r"needs a 4 x 4 matrix, the file holds shape \(4, 300000\)"):
        _parse(tmp_path, _gaussian_problem(tmp_path, {"file": "big.npy"}, limits={"draw_size": 100}))
    with pytest.raises(ProblemError, match=r"a CSV of 10,032 bytes .* above the limit draw_size = 100"):
        _parse(tmp_path, _gaussian_problem(tmp_path, {"file": "big.csv"}, limits={"draw_size": 100}))
    with pytest.raises(ProblemError, match=r"holds shape \(4, 300000\)"):  # factors: d x k, k <= d
        _parse(tmp_path, _gaussian_problem(tmp_path, {"factors": {"file": "big.npy"}}))


def test_a_changed_data_file_is_refused_when_the_problem_is_rebuilt(tmp_path):
    from cmab_milp.experiments.problem.schema import ProblemError

    np.save(tmp_path / "cov.npy", np.eye(4) * 0.01)
    problem = _parse(tmp_path, _gaussian_problem(tmp_path, {"file": "cov.npy"}))
    problem.build_environment()
    np.save(tmp_path / "cov.npy", np.eye(4) * 0.02)
    with pytest.raises(ProblemError, match="the data file changed since the problem was read"):
        problem.build_environment()


# ---------------------------------------------------------------- 10. when covariance adaptivity pays
def _width_ratio(cov: np.ndarray, plays: int) -> float:
    """Confidence half-width of the covariance-adaptive index over the worst-case one, same data, one action."""
    from cmab_milp.policies.covariance import CovarianceIndex
    from cmab_milp.policies.linear import LinearIndex

    d = cov.shape[0]
    actions = cm.Cardinality(d, 3, exact=True).enumerate()
    env = cm.GaussianNoise(np.linspace(0.4, 0.6, d), cov, seed=0)
    stats = env.observe(actions, plays * len(actions), np.random.default_rng(0), frozenset({"sum", "outer", "pairs"}))
    worst, adaptive = LinearIndex(d), CovarianceIndex(d)
    worst.update(stats)
    adaptive.update(stats)
    t, action = plays * len(actions), actions[:1]

    def width(index):
        return float((index.evaluate(t, action, +1) - index.evaluate(t, action, -1))[0] / 2)

    return width(adaptive) / width(worst)


def test_the_covariance_bound_is_narrower_only_for_small_or_uncorrelated_noise():
    d = 6
    shared = 0.2 * np.ones((d, d)) + 0.05 * np.eye(d)  # variance 0.25, correlation 0.8: a common shock
    independent = 0.25 * np.eye(d)
    small = 0.0025 * np.eye(d)
    late = {
        name: _width_ratio(cov, 1000)
        for name, cov in (("shared", shared), ("independent", independent), ("small", small))
    }
    # the order the user guide states: small variance pays most, then independence; shared shocks do not pay
    assert late["small"] < 0.5 < late["independent"] < 1.0 <= late["shared"]
    # and early on (10 plays of each action) the covariance bound's extra terms cost more whatever the noise
    assert all(_width_ratio(cov, 10) > 1.0 for cov in (shared, independent, small))


def test_guide_and_notebook_say_when_covariance_adaptivity_pays():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "guide" / "policies.md").read_text(encoding="utf-8")  # the user guide's policy page
    section = guide.split("## When do the covariance-adaptive policies pay?", 1)[1].split("\n#", 1)[0]
    for case in ("shared shocks", "independent, var 0.25", "independent, var 0.0025"):
        assert case in section
    assert "bench/covariance_when.py" in section
    notebook = json.loads((root / "notebooks" / "03_covariance_and_general_rewards.ipynb").read_text())
    text = "".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "When do the covariance-adaptive policies pay?" in text and "shared shocks" in text


# ---------------------------------------------------------------- 11. hour-long policies behind --policies
def test_policies_on_request_run_only_when_named(tmp_path):
    import io

    from cmab_milp.experiments.problem.problem_file import parse_problem
    from cmab_milp.experiments.run.runner import RunError, run_problem

    data = {
        "space": {"kind": "Cardinality", "d": 4, "m": 2},
        "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4]},
        "policies": [
            {"name": "quick", "kind": "AROQ", "oracle": "enumerate"},
            {"name": "slow", "kind": "CUCB", "oracle": "enumerate", "on_request": True},
        ],
        "run": {"horizon": 30, "seeds": 1},
    }
    problem = parse_problem(data, "f.toml")
    plain = parse_problem({**data, "policies": [dict(p, on_request=False) for p in data["policies"]]}, "f.toml")
    assert (
        plain.digest()
        == parse_problem(
            {**data, "policies": [{k: v for k, v in p.items() if k != "on_request"} for p in data["policies"]]},
            "f.toml",
        ).digest()
    )  # files without the key keep their results folders
    stream = io.StringIO()
    summary = run_problem(problem, tmp_path / "out", jobs=1, executor="serial", plots=False, stream=stream)
    assert set(summary["policies"]) == {"quick"}
    assert "on request only (run them with --policies slow)" in stream.getvalue()
    summary = run_problem(
        problem,
        tmp_path / "out",
        jobs=1,
        executor="serial",
        plots=False,
        stream=io.StringIO(),
        resume=True,
        policies=["slow"],
    )
    assert set(summary["policies"]) == {"quick", "slow"}
    only = parse_problem({**data, "policies": data["policies"][1:]}, "f.toml")
    with pytest.raises(RunError, match="on request only: name them with --policies"):
        run_problem(only, tmp_path / "other", jobs=1, executor="serial", plots=False, stream=io.StringIO())


def _problem_files():
    from pathlib import Path

    return sorted((Path(__file__).resolve().parents[2] / "problems").glob("*.toml"))


def test_hour_long_policies_are_on_request_with_their_time_said():
    import tomllib

    crew = next(p for p in _problem_files() if p.name == "crew_matching.toml")
    data = tomllib.loads(crew.read_text(encoding="utf-8"))
    on_request = {p["name"] for p in data["policies"] if p.get("on_request")}
    assert on_request == {"OLS-UCB-C", "AROQ-C-w1"}  # exact norm answers at d = 120: hours at T = 10^5
    assert "--policies" in data["description"] and "hour" in data["description"]
    for path in _problem_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.replace(" ", "").startswith("on_request=true"):
                assert "#" in line and ("hour" in line or "minutes" in line), f"{path.name}: say how long: {line}"


def test_readme_timings_say_the_machine_and_what_a_loaded_one_gives():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    commands = readme.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    main_job, tests = commands.split("Install and run the tests", 1)
    for part in (main_job, tests.split("```", 1)[0]):
        assert "free" in part and "load average" in part  # idle figures and loaded ones, each said


def test_curves_apart_on_a_log_axis_are_not_called_coinciding():
    from cmab_milp.experiments.report.plots import PolicyCurves, make_figure

    t = np.unique(np.geomspace(1, 10**5, 60).round())
    curves = {  # Figure 2's queries: CUCB asks every step, AROQ ~46 and SROQ ~92 times
        "CUCB": PolicyCurves(t, {"queries": np.vstack([t, t])}),
        "AROQ": PolicyCurves(t, {"queries": np.vstack([np.minimum(t, 46.0)] * 2)}),
        "SROQ": PolicyCurves(t, {"queries": np.vstack([np.minimum(t, 92.0)] * 2)}),
    }
    ax = make_figure(curves, ["queries"]).axes[0]  # a log panel: 46 and 92 are far apart there
    assert not [child.get_text() for child in ax.texts if "coincide" in child.get_text()]
