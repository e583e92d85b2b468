"""Graph data in problem files (issue 39, item 3): edge attributes in the edge list, per-edge numbers by
edge name ("A-B"), by [u, v, value] rows and by attribute name, and the arm order stated.

Found: ``[["A", "B", { km = 10 }]]`` was refused ("an edge is a pair [u, v]"), and tables keyed by
label took string labels only, so per-edge means had to be arrays in networkx's edge order.
Truth here: the same problem with the numbers written as an array in ``space.arms`` order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cmab_milp.experiments import ProblemError, load_problem

EDGES = 'edges = [["A", "C", { km = 30 }], ["B", "A", { km = 10 }], ["C", "D", { km = 20 }], ["B", "D", { km = 50 }]]'


def problem(tmp_path: Path, environment: str, rules: str = "", edges: str = EDGES) -> Path:
    text = f"""
[space]
kind = "STPaths"
source = "A"
target = "D"
[space.graph]
{edges}
{rules}
[environment]
kind = "GaussianNoise"
{environment}
[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"
[run]
horizon = 10
seeds = 1
"""
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


def build(path: Path):
    loaded = load_problem(path)
    space = loaded.build_space()
    return space, loaded.build_environment(space)


def test_the_arm_order_is_networkx_s_and_an_edge_label_follows_its_orientation(tmp_path: Path) -> None:
    space, _ = build(problem(tmp_path, "means = [0.1, 0.2, 0.3, 0.4]\ncov = { diagonal = 0.01 }"))
    # written: A-C, B-A, C-D, B-D; networkx lists node A's edges first, and B-A as ("A", "B")
    assert space.arms == [("A", "C"), ("A", "B"), ("C", "D"), ("B", "D")]


def test_edge_attributes_are_kept_and_means_follow_an_attribute(tmp_path: Path) -> None:
    space, env = build(problem(tmp_path, 'means = { attribute = "km", scale = 0.01 }\ncov = { diagonal = 0.01 }'))
    km = {("A", "C"): 30, ("A", "B"): 10, ("C", "D"): 20, ("B", "D"): 50}
    np.testing.assert_allclose(env.means, [0.01 * km[e] for e in space.arms])
    assert space.graph.edges["B", "A"]["km"] == 10


@pytest.mark.parametrize(
    "means",
    [
        'means = { "A-C" = 0.3, "B-A" = 0.1, "C-D" = 0.2, "D-B" = 0.5 }',
        'means = [["C", "A", 0.3], ["A", "B", 0.1], ["C", "D", 0.2], ["B", "D", 0.5]]',
    ],
)
def test_means_and_noise_by_edge_name_or_rows(tmp_path: Path, means: str) -> None:
    noise = 'cov = { diagonal = [["A", "C", 0.04], ["B", "D", 0.09]] }'
    space, env = build(problem(tmp_path, f"{means}\n{noise}"))
    truth = {("A", "C"): 0.3, ("A", "B"): 0.1, ("C", "D"): 0.2, ("B", "D"): 0.5}
    np.testing.assert_allclose(env.means, [truth[e] for e in space.arms])
    variances = {("A", "C"): 0.04, ("B", "D"): 0.09}
    np.testing.assert_allclose(np.diag(env.cov), [variances.get(e, 0.0) for e in space.arms])


def test_costs_by_edge_name_in_a_budget(tmp_path: Path) -> None:
    rules = '[[space.budgets]]\ncosts = { "A-C" = 1, "C-D" = 1, "A-B" = 5 }\nbudget = 3'
    space, _ = build(problem(tmp_path, "means = [0.1, 0.2, 0.3, 0.4]\ncov = { diagonal = 0.01 }", rules))
    assert [space.path_nodes(a) for a in space.enumerate()] == [["A", "C", "D"]]


def test_integer_nodes_are_named_u_v_too(tmp_path: Path) -> None:
    edges = "edges = [[0, 1], [1, 2], [0, 2]]"
    text = problem(
        tmp_path, 'means = { "0-1" = 0.1, "1-2" = 0.2, "2-0" = 0.3 }\ncov = { diagonal = 0.01 }', edges=edges
    )
    text.write_text(text.read_text().replace('"A"', "0").replace('"D"', "2"))
    space, env = build(text)
    np.testing.assert_allclose(env.means, [{(0, 1): 0.1, (1, 2): 0.2, (0, 2): 0.3}[e] for e in space.arms])


@pytest.mark.parametrize(
    ("environment", "key", "message"),
    [
        ('means = { "A-C" = 0.3 }', "environment.means", "no value for arms ('A', 'B'), ('C', 'D')"),
        ('means = { "A-X" = 0.3 }', "environment.means.A-X", "no edge joins nodes"),
        (
            'means = [["A", "C", 0.3], ["C", "A", 0.2], ["C", "D", 0.2], ["B", "D", 0.5]]',
            "environment.means[1]",
            "twice",
        ),
        ('means = { attribute = "mass" }', "environment.means.attribute", "has no number 'mass'"),
    ],
)
def test_bad_per_edge_numbers_are_refused_at_their_key(
    tmp_path: Path, environment: str, key: str, message: str
) -> None:
    with pytest.raises(ProblemError) as info:
        build(problem(tmp_path, environment + "\ncov = { diagonal = 0.01 }"))
    assert info.value.key == key and message in info.value.message, (info.value.key, info.value.message)


def test_a_bad_edge_entry_says_both_forms(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match=r"\[u, v\] or \[u, v, \{"):
        build(problem(tmp_path, "means = [0.1, 0.2, 0.3]", edges='edges = [["A", "D", 3]]'))
