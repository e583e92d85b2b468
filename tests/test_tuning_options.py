"""The ``highs`` backend's tuning choices are declared, validated options (not module switches)."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.policy_specs import parse_policies
from cmab_milp.experiments.schema import ProblemError, Table
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
    sizes = {"path_start_min_arms": 100, "path_start_min_arcs": 40, "side_min_arms": 50}  # size gates
    for field in dataclasses.fields(HighsTuning):
        expected = sizes.get(field.name, field.name not in off)
        assert getattr(defaults, field.name) is expected or getattr(defaults, field.name) == expected, field.name
        documented = field.name in HighsTuning.__doc__ or "#: " in source.split(f"    {field.name}:")[0][-400:]
        assert documented, field.name


def test_size_gates_are_non_negative_integers_set_from_a_problem_file():
    entry = {"name": "A", "kind": "AROQ", "oracle": "highs", "tuning": {"side_min_arms": 0}}
    (spec,) = parse_policies([Table(entry, "policies[0]", "f.toml")], "f.toml")
    assert spec.oracle_for(cm.Cardinality(4, 2)).tuning.side_min_arms == 0
    with pytest.raises(ProblemError, match="'side_min_arms' must be a non-negative integer"):
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
