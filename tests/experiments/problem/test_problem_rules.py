"""Problem files name arms by label: ``labels``, ``[[space.conflicts]]``, constraints, budgets and groups by
label, means by label or from a topohub edge attribute, ``{ diagonal = x }`` matrices; infeasible rules are
refused at their key naming the rules; policies whose reward or support differs from the environment's warn."""

from __future__ import annotations

import io
import itertools
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.cli import main
from cmab_milp.experiments import ProblemError, load_problem, parse_problem, run_problem
from cmab_milp.experiments.run.runner import JobsFailed

LABELLED = """
[space]
kind = "Cardinality"
d = 5
m = 3
labels = ["red", "green", "blue", "black", "white"]

[[space.conflicts]]
pairs = [["red", "green"], [2, "black"]]

[[space.constraints]]
coeffs = { red = 1.0, blue = 2.0 }
sense = "<="
rhs = 2

[[space.constraints]]
arms = ["white", "green", "white"]
weights = [1, 1, 1]
sense = "<="
rhs = 2

[[space.budgets]]
costs = { red = 3, green = 1, white = 1 }
budget = 3

[[space.budgets]]
arms = ["blue", "black"]
costs = [2, 5]
budget = 5

[[space.groups]]
arms = ["red", "green", 4]
at_least = 1
at_most = 2

[environment]
kind = "BernoulliArms"
means = { red = 0.1, green = 0.5, blue = 0.3, black = 0.2, white = 0.45 }

[[policies]]
name = "AROQ"
kind = "AROQ"
oracle = "enumerate"

[run]
horizon = 200
seeds = 1
"""


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def allowed(a: tuple[int, ...]) -> bool:
    """The rules of LABELLED, checked by hand on an action given as 0/1 per arm (red, green, blue, black, white)."""
    red, green, blue, black, white = a
    return (
        sum(a) <= 3
        and not (red and green)
        and not (blue and black)
        and red + 2 * blue <= 2
        and 2 * white + green <= 2
        and 3 * red + green + white <= 3
        and 2 * blue + 5 * black <= 5
        and 1 <= red + green + white <= 2
    )


def test_rules_by_label_give_exactly_the_allowed_actions(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, LABELLED))
    space = problem.build_space()
    assert space.labels == ["red", "green", "blue", "black", "white"]
    truth = sorted(a for a in itertools.product((0, 1), repeat=5) if allowed(a))
    assert sorted(tuple(int(x) for x in a) for a in space.enumerate()) == truth
    env = problem.build_environment(space)
    assert env.means.tolist() == [0.1, 0.5, 0.3, 0.2, 0.45]
    # the summary lists the arms and the optimal action by label; the optimum by brute force
    summary = run_problem(problem, tmp_path / "out", jobs=1, plots=False, stream=io.StringIO())
    best = max(truth, key=lambda a: float(np.dot(a, env.means)))
    names = ["red", "green", "blue", "black", "white"]
    assert summary["problem"]["arm_labels"] == names
    assert summary["problem"]["optimal_action"] == [n for n, x in zip(names, best, strict=True) if x]
    assert summary["problem"]["optimal_reward"] == pytest.approx(float(np.dot(best, env.means)))


def test_conflicts_and_groups_name_graph_arms_by_their_edges(tmp_path: Path) -> None:
    text = """
[space]
kind = "SpanningTrees"
[space.graph]
generator = "grid_2d_graph"
args = [2, 2]
[[space.conflicts]]
pairs = [[[[0, 0], [0, 1]], [[1, 0], [0, 0]]]]
[[space.groups]]
arms = [[[1, 1], [0, 1]]]
at_least = 1
[environment]
kind = "BernoulliArms"
means = [0.1, 0.2, 0.3, 0.4]
[[policies]]
name = "A"
kind = "AROQ"
oracle = "enumerate"
[run]
horizon = 10
seeds = 1
"""
    space = load_problem(write(tmp_path, text)).build_space()
    edges = [frozenset(e) for e in space.labels]
    a, b = edges.index(frozenset({(0, 0), (0, 1)})), edges.index(frozenset({(0, 0), (1, 0)}))
    c = edges.index(frozenset({(0, 1), (1, 1)}))
    trees = [t for t in itertools.product((0, 1), repeat=4) if sum(t) == 3]  # a 4-cycle: drop one edge
    truth = sorted(t for t in trees if not (t[a] and t[b]) and t[c])
    assert sorted(tuple(int(x) for x in act) for act in space.enumerate()) == truth


@pytest.mark.parametrize(
    ("space", "environment", "key", "message"),
    [
        ('[[space.conflicts]]\npairs = [["red", "zz"]]', "", "space.conflicts[0].pairs[0][1]:", "unknown arm 'zz'"),
        ('[[space.conflicts]]\npairs = [["red", "red"]]', "", "space.conflicts[0].pairs[0]:", "names arm 'red' twice"),
        ("[[space.conflicts]]\npairs = [[1, 2, 3]]", "", "space.conflicts[0].pairs[0]:", "a pair is [a, b]"),
        ("[[space.conflicts]]\npairs = []", "", "space.conflicts[0].pairs:", "non-empty array"),
        (
            '[[space.constraints]]\ncoeffs = { q = 1 }\nsense = "<="\nrhs = 1',
            "",
            "space.constraints[0].coeffs.q:",
            "unknown arm 'q'",
        ),
        (
            '[[space.constraints]]\ncoeffs = { red = "x" }\nsense = "<="\nrhs = 1',
            "",
            "space.constraints[0].coeffs.red:",
            "expected a number",
        ),
        (
            '[[space.constraints]]\narms = ["red", 7]\nsense = "<="\nrhs = 1',
            "",
            "space.constraints[0].arms[1]:",
            "out of range for d=4",
        ),
        (
            '[[space.constraints]]\narms = ["red", 1.5]\nsense = "<="\nrhs = 1',
            "",
            "space.constraints[0].arms[1]:",
            "an arm is an integer index, a label or an edge",
        ),
        ("[[space.budgets]]\ncosts = { red = -1 }\nbudget = 1", "", "space.budgets[0].costs:", "must be >= 0"),
        ('[[space.budgets]]\narms = ["red"]\nbudget = 1', "", "space.budgets[0].costs:", "one number per listed arm"),
        ("[[space.budgets]]\ncosts = [1, 2]\nbudget = 1", "", "space.budgets[0].costs:", "one number per arm: d=4"),
        ("[[space.budgets]]\ncosts = [1, 1, 1, 1]\nbudget = -1", "", "space.budgets[0].budget:", "must be >= 0"),
        ('[[space.groups]]\narms = ["red"]', "", "space.groups[0]:", "give at_least, at_most or both"),
        ('[[space.groups]]\narms = ["red"]\nat_least = 2', "", "space.groups[0].at_least:", "impossible"),
        ("[[space.groups]]\narms = []\nat_most = 1", "", "space.groups[0].arms:", "at least one arm"),
        (
            '[[space.groups]]\narms = ["red", "green"]\nat_least = 2\n[[space.conflicts]]\npairs = [["red", "green"]]',
            "",
            "space.groups[0]:",
            "no action satisfies conflicts [('red', 'green')] together with at least 2 of ['red', 'green']",
        ),
        (
            "[[space.budgets]]\ncosts = [2, 2, 2, 2]\nbudget = 1\n[[space.groups]]\narms = [0]\nat_least = 1",
            "",
            "space.groups[0]:",
            "budget (total cost <= 1) together with at least 1 of ['red']",
        ),
        ("", "means = { red = 0.1, green = 0.2 }", "environment.means:", "no value for arms 'blue', 'black'"),
        ("", "means = { red = 0.1, pink = 0.2 }", "environment.means.pink:", "unknown arm 'pink'"),
        ("", 'means = { edge_attribute = "dist" }', "environment.means.edge_attribute:", "edges of a graph"),
        ("", 'means = { "0" = 0.1 }', "environment.means.0:", "'0' is a string, not the index 0"),
        ('[[space.groups]]\narms = "red"\nat_least = 1', "", "space.groups[0].arms:", "expected an array of arms"),
        ('[space.conflicts]\npairs = [["red", "green"]]', "", "space.conflicts:", "expected an array of tables"),
    ],
)
def test_bad_rules_are_refused_at_their_key(tmp_path: Path, space: str, environment: str, key: str, message: str):
    text = f"""
[space]
kind = "Cardinality"
d = 4
m = 2
labels = ["red", "green", "blue", "black"]
{space}
[environment]
kind = "BernoulliArms"
{environment or "means = [0.1, 0.2, 0.3, 0.4]"}
[[policies]]
name = "A"
kind = "AROQ"
oracle = "enumerate"
[run]
horizon = 10
seeds = 1
"""
    with pytest.raises(ProblemError) as info:
        load_problem(write(tmp_path, text))
    text = str(info.value)
    assert f": {key}" in text and message in text, text


@pytest.mark.parametrize(
    ("labels", "key", "message"),
    [
        ('["a", 1.5, "c"]', "space.labels[1]:", "a label is a string"),
        ('["a", "a", "c"]', "space.labels:", "must be distinct"),
        ('["a", "b"]', "space.labels:", "one label per arm"),
        ('"abc"', "space.labels:", "expected an array"),
    ],
)
def test_bad_labels_are_refused(tmp_path: Path, labels: str, key: str, message: str) -> None:
    data = tomllib.loads(f'[space]\nkind = "Cardinality"\nd = 3\nm = 1\nlabels = {labels}\n')
    data |= {
        "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3]},
        "policies": [{"name": "A", "kind": "AROQ", "oracle": "enumerate"}],
        "run": {"horizon": 5, "seeds": 1},
    }
    with pytest.raises(ProblemError) as info:
        parse_problem(data, "x.toml")
    assert key in str(info.value) and message in str(info.value), str(info.value)


def test_diagonal_matrices_by_number_or_label(tmp_path: Path) -> None:
    base = {
        "space": {"kind": "Cardinality", "d": 3, "m": 1, "labels": ["a", "b", "c"]},
        "policies": [{"name": "A", "kind": "AROQ", "oracle": "enumerate"}],
        "run": {"horizon": 5, "seeds": 1},
    }
    for cov, diagonal in (({"diagonal": 0.25}, [0.25] * 3), ({"diagonal": {"b": 2.0}}, [0.0, 2.0, 0.0])):
        env = {"kind": "GaussianNoise", "means": [0.1, 0.2, 0.3], "cov": cov}
        problem = parse_problem(base | {"environment": env}, "x.toml")
        assert problem.build_environment().cov.tolist() == np.diag(diagonal).tolist()
    env = {"kind": "GaussianNoise", "means": [0.1, 0.2, 0.3], "cov": {"diagonal": 0.1, "other": 1}}
    with pytest.raises(ProblemError, match=r"environment\.cov\.other: unknown key"):
        parse_problem(base | {"environment": env}, "x.toml")


# ------------------------------------------------------------------ topohub
ROUTING = Path(__file__).resolve().parents[3] / "problems" / "routing_abilene.toml"
TOPOHUB = """
[space]
kind = "STPaths"
source = "New York"
target = "Los Angeles"
[space.graph]
topohub = "topozoo/Abilene"
[environment]
kind = "GaussianNoise"
means = { edge_attribute = "dist", scale = -0.00025, offset = -0.05 }
cov = { diagonal = 0.0025 }
[[policies]]
name = "AROQ"
kind = "AROQ"
oracle = "enumerate"
[run]
horizon = 50
seeds = 1
"""


def test_topohub_graph_with_means_from_link_lengths_matches_the_written_out_file(tmp_path: Path) -> None:
    """The shipped routing file was written from topohub with mean = -(dist / 200 + 1) / 20 (rounded to 6
    decimals); the same topology named in a file, means from ``dist``, must give the same arms and means."""
    topohub = pytest.importorskip("topohub")  # the optional extra "routing"; its data ships with it
    for problem in (
        load_problem(write(tmp_path, TOPOHUB)),
        load_problem(ROUTING.with_name("routing_abilene_by_name.toml")),
    ):
        check_same_routing(problem, topohub)


def check_same_routing(problem, topohub) -> None:
    space = problem.build_space()
    env = problem.build_environment(space)
    shipped = load_problem(ROUTING)
    shipped_space = shipped.build_space()
    shipped_means = dict(zip(map(frozenset, shipped_space.labels), shipped.build_environment().means, strict=True))
    mine = dict(zip(map(frozenset, space.labels), env.means, strict=True))
    assert mine.keys() == shipped_means.keys()
    for edge, mean in mine.items():
        assert mean == pytest.approx(shipped_means[edge], abs=1e-6)
    assert env.cov.tolist() == (0.0025 * np.eye(space.d)).tolist()
    graph = space.graph
    assert (
        graph.edges["New York", "Chicago"]["dist"] == topohub.get("topozoo/Abilene", use_names=True)["edges"][0]["dist"]
    )


def test_topohub_route_summary_lists_the_fastest_path_in_order(tmp_path: Path) -> None:
    pytest.importorskip("topohub")  # the optional extra "routing"; its data ships with it
    import networkx as nx

    from cmab_milp.topologies import load_topology

    problem = load_problem(write(tmp_path, TOPOHUB))
    summary = run_problem(problem, tmp_path / "out", jobs=1, plots=False, stream=io.StringIO())
    graph = load_topology("topozoo/Abilene")
    for u, v in graph.edges():  # the fastest path: least total (dist / 200 + 1)
        graph.edges[u, v]["delay"] = graph.edges[u, v]["dist"] / 200 + 1
    nodes = nx.shortest_path(graph, "New York", "Los Angeles", weight="delay")
    assert summary["problem"]["optimal_action"] == [list(e) for e in itertools.pairwise(nodes)]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("topozoo/abilene", "did you mean 'topozoo/Abilene'"),
        ("../../etc/passwd", "a topohub name is GROUP/NAME"),
        ("topozoo/../sndlib/polska", "a topohub name is GROUP/NAME"),
        ("topozoo/Abilene.json", "has no topology"),
    ],
)
def test_topohub_names_are_checked_against_the_catalogue(tmp_path: Path, name: str, message: str) -> None:
    pytest.importorskip("topohub")  # the optional extra "routing"; its data ships with it
    with pytest.raises(ProblemError) as info:
        load_problem(write(tmp_path, TOPOHUB.replace("topozoo/Abilene", name)))
    assert "space.graph.topohub:" in str(info.value) and message in str(info.value), str(info.value)


def test_topohub_graphs_obey_the_limits_and_attributes_are_checked(tmp_path: Path) -> None:
    pytest.importorskip("topohub")  # the optional extra "routing"; its data ships with it
    text = TOPOHUB + "limits = { arms = 10 }\n"
    with pytest.raises(ProblemError, match=r"space\.graph\.topohub: topozoo/Abilene has 14 links"):
        load_problem(write(tmp_path, text))
    text = TOPOHUB.replace('edge_attribute = "dist"', 'edge_attribute = "colour"')
    with pytest.raises(ProblemError, match=r"environment\.means\.edge_attribute: edge .* has no number 'colour'"):
        load_problem(write(tmp_path, text))
    text = TOPOHUB.replace('edge_attribute = "dist"', 'edge_attribute = "ecmp_fwd.uni"')
    problem = load_problem(write(tmp_path, text))
    space = problem.build_space()
    uni = [space.graph.edges[e]["ecmp_fwd"]["uni"] for e in space.labels]
    assert problem.build_environment(space).means.tolist() == pytest.approx([-0.05 - 0.00025 * u for u in uni])


# ----------------------------------------------------------------- warnings
GENERAL = """
[space]
kind = "Cardinality"
d = 4
m = 2
[environment]
kind = "DiscreteArms"
values = [0.0, 0.5, 1.0]
probs = [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]]
reward = "max"
[[policies]]
name = "P"
oracle = "enumerate"
kind = "SDCB"
constants = { reward = "max", support = [0.0, 0.5, 1.0] }
[run]
horizon = 30
seeds = 1
"""


@pytest.mark.parametrize(
    ("policy", "key", "message"),
    [
        ('kind = "SDCB"\nconstants = { reward = "sqrt_sum", support = [0, 0.5, 1] }', "policies[0].constants.reward",
         "SDCB optimises the reward 'sqrt_sum' but the environment's reward is 'max'"),
        ('kind = "SDCB"\nconstants = { support = [0.0, 0.5, 1.0] }', "policies[0]",
         "reward 'sqrt_sum' (its default)"),
        ('kind = "SDCB"\nconstants = { reward = "max", support = [0.0, 1.0] }', "policies[0].constants.support",
         "misses the environment's outcome values 0.5"),
        ('kind = "AROQ"', "policies[0].kind", "AROQ optimises a linear reward"),
    ],
)  # fmt: skip
def test_reward_and_support_mismatches_warn_in_validate_and_run(tmp_path: Path, capsys, policy, key, message) -> None:
    text = GENERAL.replace('kind = "SDCB"\nconstants = { reward = "max", support = [0.0, 0.5, 1.0] }', policy)
    path = write(tmp_path, text)
    problem = load_problem(path)
    assert len(problem.warnings) == 1 and problem.warnings[0].startswith(f"{path}: {key}: ")
    assert message in problem.warnings[0]
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {path}: {key}: " in err and err.count("warning:") == 1
    stream = io.StringIO()
    try:
        run_problem(problem, tmp_path / "out", jobs=1, plots=False, stream=stream)
    except JobsFailed:  # what the support warning foretold: the job stops at the first outcome off it
        assert key.endswith("support")
    else:
        assert not key.endswith("support")
    assert stream.getvalue().startswith(f"warning: {path}: {key}: ")


def test_matching_policies_do_not_warn(tmp_path: Path) -> None:
    assert load_problem(write(tmp_path, GENERAL)).warnings == ()
    linear = GENERAL.replace('reward = "max"\n[[policies]]', 'reward = "linear"\n[[policies]]').replace(
        'kind = "SDCB"\nconstants = { reward = "max", support = [0.0, 0.5, 1.0] }', 'kind = "AROQ"'
    )
    assert 'kind = "AROQ"' in linear and load_problem(write(tmp_path, linear, "l.toml")).warnings == ()


def test_continuous_outcomes_against_a_support_warn(tmp_path: Path) -> None:
    text = """
[space]
kind = "Cardinality"
d = 2
m = 1
[environment]
kind = "BetaArms"
alpha = [2.0, 1.0]
beta = [2.0, 1.0]
reward = "max"
[[policies]]
name = "SDCB"
kind = "SDCB"
oracle = "enumerate"
constants = { reward = "max", support = [0.0, 1.0] }
[run]
horizon = 10
seeds = 1
"""
    (warning,) = load_problem(write(tmp_path, text)).warnings
    assert "policies[0].constants.support: the environment's outcomes are continuous" in warning


def test_summary_json_stays_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(write(tmp_path, LABELLED)), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["problem"]["optimal_action"]
    assert cm.Cardinality(5, 3).labels == [0, 1, 2, 3, 4]  # plain spaces: no arm_labels key needed
