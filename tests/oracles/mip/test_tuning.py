"""The ``highs`` backend's tuning choices are declared, validated options (not module switches)."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.problem.policy_specs import parse_policies
from cmab_milp.experiments.problem.schema import ProblemError, Table
from cmab_milp.oracles import capabilities
from cmab_milp.oracles.mip.tuning import HighsTuning


def test_the_highs_backend_declares_its_tuning_record_and_make_oracle_checks_it():
    assert capabilities("highs").check_tuning({"fix_arms": False}) == HighsTuning(fix_arms=False)
    space = cm.Cardinality(5, 2)
    with pytest.raises(ValueError, match="unknown option 'fix_arm'"):
        cm.make_oracle(space, "highs", tuning={"fix_arm": False})
    with pytest.raises(ValueError, match="'minus_paths' must be true or false"):
        cm.make_oracle(space, "highs", tuning={"minus_paths": 1})
    with pytest.raises(ValueError, match="takes no option"):
        cm.make_oracle(space, "enumerate", tuning={"fix_arms": False})
    assert cm.make_oracle(space, "highs", tuning={"plus_branch": "always"}).tuning.plus_branch == "always"


def test_defaults_are_the_measured_choices_and_every_field_is_a_documented_switch():
    import inspect

    defaults = HighsTuning()
    off = {"side_cover_cuts", "minus_outer", "plus_branch_definite"}  # measured slower: off
    off |= {"paths_both_points", "concave_plain_with_conflicts", "concave_reform_uniform", "root_cuts_nonpositive"}
    source = inspect.getsource(HighsTuning)
    off |= {"plus_presolve"}
    sizes = {"path_start_min_arms": 100, "path_start_min_arcs": 40, "side_min_arms": 50}  # size gates
    for field in dataclasses.fields(HighsTuning):
        if field.name in sizes:
            assert getattr(defaults, field.name) == sizes[field.name], field.name
        elif "read" in field.metadata:  # the norm searches' numbers: the default reads back as itself
            assert field.metadata["read"](field.name, getattr(defaults, field.name)) == getattr(defaults, field.name)
        else:
            assert getattr(defaults, field.name) is (field.name not in off), field.name
        documented = field.name in HighsTuning.__doc__ or "#: " in source.split(f"    {field.name}:")[0][-400:]
        assert documented, field.name


def test_size_gates_are_non_negative_integers_set_from_a_problem_file():
    entry = {"name": "A", "kind": "AROQ", "oracle": "highs", "tuning": {"side_min_arms": 0}}
    (spec,) = parse_policies([Table(entry, "policies[0]", "f.toml")], "f.toml")
    assert spec.oracle_for(cm.Cardinality(4, 2)).tuning.side_min_arms == 0
    with pytest.raises(ProblemError, match="'side_min_arms' must be a whole number >= 0"):
        parse_policies([Table({**entry, "tuning": {"side_min_arms": -1}}, "policies[0]", "f.toml")], "f.toml")


def test_a_problem_file_sets_tuning_and_a_bad_one_is_refused_at_the_key():
    entry = {"name": "A", "kind": "AROQ", "oracle": "highs", "tuning": {"side_starts": False}}
    (spec,) = parse_policies([Table(entry, "policies[0]", "f.toml")], "f.toml")
    assert spec.oracle_options == {"tuning": {"side_starts": False}}
    assert spec.oracle_for(cm.Cardinality(4, 2)).tuning.side_starts is False
    bad = {**entry, "tuning": {"side_start": False}}
    with pytest.raises(ProblemError, match=r"tuning.*unknown option 'side_start'"):
        parse_policies([Table(bad, "policies[0]", "f.toml")], "f.toml")
    other = {**entry, "oracle": "enumerate"}
    with pytest.raises(ProblemError, match="takes no tuning option"):
        parse_policies([Table(other, "policies[0]", "f.toml")], "f.toml")


@pytest.mark.parametrize(
    "changes",
    [
        {"prepare_queries": False},
        {"candidate_cuts": False},
        {"fix_arms": False},
        {"side_starts": False},
        {"path_start_min_arcs": 1000, "side_min_arms": 1000},
    ],
)
def test_each_mip_option_keeps_answers_of_the_same_value(changes):
    """Every option is exact either way: values agree with the defaults on restricted path and side-row queries."""
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(5, 5))
    rng = np.random.default_rng(3)
    paths = cm.STPaths(grid.to_directed(), 0, 24)
    budget = cm.Cardinality(60, 6).with_constraint(rng.uniform(0.5, 1.5, 60), "<=", 4.0)
    for space in (paths, budget):
        default, changed = cm.make_oracle(space, "highs"), cm.make_oracle(space, "highs", tuning=changes)
        for _ in range(3):
            w = rng.uniform(-1.0, 1.0, space.d)
            a, b = default.argmax(w), changed.argmax(w)
            assert w @ a == pytest.approx(w @ b, abs=1e-9)


# -------------------------------------------------------- the norm searches' numeric options
def test_numeric_norm_options_are_checked_and_read_from_a_problem_file():
    tuning = HighsTuning.of({"plus_branch_try": 0, "concave_reform": 1, "paths_vertex_taus": [0.5, 2]})
    assert (tuning.plus_branch_try, tuning.concave_reform, tuning.paths_vertex_taus) == (0, 1.0, (0.5, 2.0))
    for bad, message in [
        ({"plus_branch_try": -1}, "'plus_branch_try' must be a whole number >= 0"),
        ({"concave_steps": True}, "'concave_steps' must be a whole number >= 0"),
        ({"branch_steps": 2.5}, "'branch_steps' must be a whole number >= 0"),
        ({"concave_reform": 1.5}, r"'concave_reform' must be a number in \[0, 1\]"),
        ({"paths_vertex_taus": [1.0, 0.0]}, "'paths_vertex_taus' must be a list of finite numbers > 0"),
        ({"paths_vertex_taus": "1"}, "'paths_vertex_taus' must be a list"),
        ({"plus_presolve": 1}, "'plus_presolve' must be true or false"),
    ]:
        with pytest.raises(ValueError, match=message):
            cm.make_oracle(cm.Cardinality(4, 2), "highs", tuning=bad)
    options = {"plus_branch_try": 0, "minus_local_checks": 0, "paths_vertex_taus": [2.0]}
    entry = {"name": "A", "kind": "AROQ", "oracle": "highs", "tuning": options}
    (spec,) = parse_policies([Table(entry, "policies[0]", "f.toml")], "f.toml")
    oracle = spec.oracle_for(cm.Cardinality(4, 2))
    assert (oracle.tuning.plus_branch_try, oracle.tuning.minus_local_checks) == (0, 0)
    assert oracle.tuning.paths_vertex_taus == (2.0,)
    bad = {**entry, "tuning": {"concave_steps": -3}}
    with pytest.raises(ProblemError, match=r"tuning.*'concave_steps' must be a whole number"):
        parse_policies([Table(bad, "policies[0]", "f.toml")], "f.toml")


def test_a_problem_file_with_norm_options_runs(tmp_path):
    """From the TOML text to the oracle that answers: the numbers reach the norm solver (its method changes)."""
    from cmab_milp.experiments import load_problem

    text = (
        '[space]\nkind = "Cardinality"\nd = 6\nm = 2\n'
        '[environment]\nkind = "BernoulliArms"\nmeans = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]\n'
        "[run]\nhorizon = 50\nseeds = [1]\n"
        '[[policies]]\nname = "A"\nkind = "AROQCov"\noracle = "highs"\n'
        "tuning = {plus_branch_try = 0, concave_steps = 3, paths_vertex_taus = [1.0, 2.0]}\n"
    )
    path = tmp_path / "p.toml"
    path.write_text(text)
    problem = load_problem(path)
    space = problem.build_space()
    oracle = problem.build_policy("A", space).oracle
    assert oracle.tuning.plus_branch_try == 0 and oracle.tuning.paths_vertex_taus == (1.0, 2.0)
    rng = np.random.default_rng(2)
    oracle.argmax_norm(rng.uniform(0, 1, 6), np.eye(6), 1.0, 1)
    assert oracle.last_norm_stats.method == "oa-quadratic-form"  # no concave branch tried first
    default = cm.make_oracle(space, "highs")
    default.argmax_norm(rng.uniform(0, 1, 6), np.eye(6), 0.1, 1)
    assert default.last_norm_stats.method == "branch-concave"


@pytest.mark.parametrize(
    "changes",
    [
        {"plus_branch_try": 0},
        {"plus_restart_budget": 0, "plus_local_checks": 0, "plus_presolve": True},
        {"minus_local_checks": 0},
        {"branch_steps": 1, "concave_steps": 0},
        {"concave_tune_after": 1, "concave_reform": 0.0},
    ],
)
def test_each_norm_option_keeps_answers_of_the_same_value(changes):
    """Exact either way: the norm answers' values agree with the defaults' (both signs, trees and cardinality)."""
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    rng = np.random.default_rng(5)
    for space in (cm.SpanningTrees(grid), cm.Cardinality(9, 3)):
        default, changed = cm.make_oracle(space, "highs"), cm.make_oracle(space, "highs", tuning=changes)
        for sign in (1, -1):
            mu, a = rng.uniform(0, 1, space.d), rng.normal(size=(space.d, space.d))
            M = a @ a.T / space.d + 0.1 * np.eye(space.d)
            q = default.norm_query(mu, M, 1.0, sign)
            assert q.value(changed.argmax_norm(mu, M, 1.0, sign)) == pytest.approx(
                q.value(default.argmax_norm(mu, M, 1.0, sign)), abs=1e-9
            )


# -------------------------------------------------------- the options grouped by the method that reads them
def _leaves(groups: dict) -> list[str]:
    return [name for value in groups.values() for name in (_leaves(value) if isinstance(value, dict) else [value])]


def test_every_option_stands_in_exactly_one_method_group():
    from cmab_milp.oracles.mip.tuning import OPTION_GROUPS

    flat = [field.name for field in dataclasses.fields(HighsTuning)]
    leaves = _leaves(OPTION_GROUPS)
    assert sorted(leaves) == sorted(flat) and len(leaves) == len(set(leaves)) == 58
    methods = ["plus_paths", "minus_paths", "plus_branch", "minus_branch", "plus_outer", "minus_outer"]
    assert sorted(OPTION_GROUPS["norm"]) == sorted([*methods, "engine", "starts", "paths", "branch"])


def test_the_grouped_views_read_the_flat_options_and_are_read_only():
    tuning = HighsTuning.of({"plus_branch_try": 7, "minus_outer": True, "paths_chord": False, "side_min_arms": 3})
    norm = tuning.norm
    assert (norm.plus_branch.budget, norm.minus_outer.enabled, norm.paths.chord) == (7, True, False)
    assert tuning.mip.side_min_arms == 3 and HighsTuning().norm.plus_branch.budget == 100
    for group, names in norm.names().items():  # every short name reads its flat option
        for short, name in names.items():
            assert getattr(getattr(norm, group), short) == getattr(tuning, name), (group, short)
    assert norm.as_dict()["plus_branch"]["budget"] == 7
    with pytest.raises(AttributeError, match=r"no tuning option 'budgt'.*budget"):
        _ = norm.plus_branch.budgt
    with pytest.raises(AttributeError, match="read-only"):
        norm.plus_branch.budget = 3
    assert tuning.plus_branch_try == 7  # the record itself is unchanged, and stays the one public spelling
    with pytest.raises(ValueError, match="unknown option 'norm'"):
        HighsTuning.of({"norm": {"plus_branch": {"budget": 0}}})  # nested input is not a second way to set them
