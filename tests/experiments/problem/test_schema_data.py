"""The problem-file schema as data: the validator reads it, the docs are generated from it, neither drifts."""

from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from dataclasses import fields, replace
from pathlib import Path

import pytest

from cmab_milp.experiments.problem.draws import DRAWS
from cmab_milp.experiments.problem.limits import Limits
from cmab_milp.experiments.problem.policy_specs import ORACLE_OPTIONS
from cmab_milp.experiments.problem.problem_file import parse_problem
from cmab_milp.experiments.problem.schema import MISSING, ProblemError, Table
from cmab_milp.experiments.problem.schema_data import (
    DRAW,
    LOGGED,
    POLICY,
    RUN,
    RUN_LIMITS,
    SCHEMA,
    TOP,
    Key,
    finish,
    read,
    table_schema,
)
from cmab_milp.experiments.problem.schema_doc import BEGIN, END, render_reference, with_reference

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "problem-files.md"

BASE = {
    "space": {"kind": "Cardinality", "d": 4, "m": 2},
    "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4]},
    "policies": [{"name": "A", "kind": "CUCB"}],
    "run": {"horizon": 5, "seeds": 1},
}


def problem(**changes: dict) -> dict:
    data = copy.deepcopy(BASE)
    for name, table in changes.items():
        data[name] = table
    return data


def message(data: dict) -> str:
    with pytest.raises(ProblemError) as info:
        parse_problem(data, "x.toml")
    return str(info.value)


def takes(text: str) -> set[str]:
    """The keys a "this table takes: ..." message lists."""
    line = next(line for line in text.splitlines() if "this table takes: " in line)
    return set(line.split("this table takes: ")[1].rstrip(")").split(", "))


# ------------------------------------------------------------------ the page and the data
def test_the_page_is_generated_from_the_data() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert with_reference(page) == page, "docs/problem-files.md is stale: run python docs/generate_problem_schema.py"


def test_the_generator_script_checks_the_page() -> None:
    script = ROOT / "docs" / "generate_problem_schema.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_drifted_page_is_caught() -> None:
    page = PAGE.read_text(encoding="utf-8")
    drifted = page.replace("| `curve_points` | integer | `200` |", "| `curve_points` | integer | `100` |")
    assert drifted != page
    assert with_reference(drifted) == page


def test_every_key_of_every_table_is_in_the_reference() -> None:
    text = render_reference()
    for schema in SCHEMA:
        for key in schema.keys:
            assert f"| `{key.name}` |" in text, (schema.path, key.name)


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        with_reference("no markers here")
    with pytest.raises(ValueError, match="markers"):
        with_reference(f"{END}\n{BEGIN}\n")


# ------------------------------------------------------------------ the validator reads the data
def test_required_keys_of_the_data_are_required_by_the_validator() -> None:
    for key in TOP.keys:
        data = problem()
        if key.required:
            del data[key.name]
            assert f"x.toml: {key.name}: missing required key" in message(data)


def test_run_reads_every_key_the_data_lists_and_names_them_all() -> None:
    text = message(problem(run={"horizon": 5, "seeds": 1, "bogus": 1}))
    assert "run.bogus: unknown key" in text
    assert takes(text) == set(RUN.offered)
    assert "rounds" not in RUN.offered  # the former name is read, not offered


def test_run_limits_are_the_limits_dataclass() -> None:
    assert [(k.name, k.default) for k in RUN_LIMITS.keys] == [(f.name, f.default) for f in fields(Limits)]
    text = message(problem(run={"horizon": 5, "seeds": 1, "limits": {"arms": 10, "nodes": 3}}))
    assert "run.limits.nodes: unknown key" in text
    assert takes(text) == {k.name for k in RUN_LIMITS.keys}


@pytest.mark.parametrize(
    ("run", "key", "fragment"),
    [
        ({"curve_points": 1}, "run.curve_points", "must be >= 2, got 1"),
        ({"curve_points": "many"}, "run.curve_points", "expected an integer, got a string"),
        ({"panels": ["regret", "bogus"]}, "run.panels[1]", "unknown panel 'bogus'; known: rounds"),
        ({"panels": "regret"}, "run.panels", "expected an array"),
        ({"limits": 3}, "run.limits", "expected a table"),
    ],
)
def test_types_minimums_and_allowed_values_come_from_the_data(run, key, fragment) -> None:
    text = message(problem(run={"horizon": 5, "seeds": 1} | run))
    assert f"x.toml: {key}: {fragment}" in text


def test_the_top_level_refuses_what_the_data_does_not_list() -> None:
    data = problem()
    data["titel"] = "typo"
    text = message(data)
    assert "x.toml: titel: unknown key" in text
    assert takes(text) == set(TOP.offered)


@pytest.mark.parametrize(("value", "kind"), [(1, "string"), ("1", "integer"), ("x", "number"), (1, "boolean")])
def test_read_checks_every_scalar_type(value, kind) -> None:
    schema = type(TOP)("t", "a test table", (Key("k", kind, "a key", MISSING),))
    with pytest.raises(ProblemError, match=r"t\.k: expected"):
        read(Table({"k": value}, "t", "x.toml"), schema, "k")
    with pytest.raises(ProblemError, match=r"t\.k: missing required key"):
        read(Table({}, "t", "x.toml"), schema, "k")


def test_finish_lists_the_schema_s_keys_and_flags_a_key_not_taken_with_the_others() -> None:
    schema = type(TOP)("t", "a test table", (Key("a", "integer", "a"), Key("b", "integer", "b")))
    table = Table({"a": 1, "b": 2}, "t", "x.toml")
    read(table, schema, "a")
    with pytest.raises(ProblemError, match=r"t.b: not taken with the other keys given \(this table takes: a\)"):
        finish(table, schema)
    table = Table({"c": 1}, "t", "x.toml")
    with pytest.raises(ProblemError, match=r"t.c: unknown key \(this table takes: a, b\)"):
        finish(table, schema)


def test_a_key_of_an_unknown_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown type 'text'"):
        Key("k", "text", "a key")


def test_table_schema_finds_each_table() -> None:
    for schema in SCHEMA:
        assert table_schema(schema.path) is schema
    with pytest.raises(KeyError, match="known: , space"):
        table_schema("nowhere")


# ------------------------------------------------------------------ tables read elsewhere: kept in step
def test_every_policy_key_of_the_data_is_accepted() -> None:
    entry = {
        "name": "A",
        "kind": "CUCB",
        "oracle": "highs",
        "gap": 0.01,
        "norm_gap": 0.01,
        "time_limit": 5.0,
        "workers": 1,
        "ties": "classes",
        "tuning": {},
        "constants": {},
        "horizon": "unknown",
        "on_request": True,
    }
    assert set(entry) == {k.name for k in POLICY.keys}
    assert parse_problem(problem(policies=[entry]), "x.toml").policies[0].on_request
    assert set(ORACLE_OPTIONS) <= {k.name for k in POLICY.keys}
    text = message(problem(policies=[entry | {"bogus": 1}]))
    assert "policies[0].bogus: unknown key" in text
    assert takes(text) == set(POLICY.offered)  # read through the data: every key listed, not only those given


@pytest.mark.parametrize(
    ("entry", "key", "fragment"),
    [
        ({"workers": 0}, "policies[0].workers", "must be >= 1, got 0"),
        ({"workers": 1.5}, "policies[0].workers", "expected an integer"),
        ({"horizon": "known"}, "policies[0].horizon", "unknown value 'known'; expected one of: unknown"),
        ({"on_request": "yes"}, "policies[0].on_request", "expected true or false"),
        ({"constants": 3}, "policies[0].constants", "expected a table"),
        ({"oracle": 3}, "policies[0].oracle", "expected a string"),
        ({"name": 3}, "policies[0].name", "expected a string"),
    ],
)
def test_policy_types_minimums_and_allowed_values_come_from_the_data(entry, key, fragment) -> None:
    text = message(problem(policies=[{"name": "A", "kind": "CUCB"} | entry]))
    assert f"x.toml: {key}: " in text and fragment in text, text


def test_the_policy_reader_follows_the_data(monkeypatch) -> None:
    """A changed minimum in the data changes what ``[[policies]]`` accepts: the reader has no copy of its own."""
    from cmab_milp.experiments.problem import policy_specs

    keys = tuple(replace(k, minimum=3) if k.name == "workers" else k for k in POLICY.keys)
    monkeypatch.setattr(policy_specs, "POLICY", replace(POLICY, keys=keys))
    text = message(problem(policies=[{"name": "A", "kind": "CUCB", "workers": 2}]))
    assert "x.toml: policies[0].workers: must be >= 3, got 2" in text
    assert parse_problem(problem(), "x.toml").policies[0].oracle == "highs"  # no oracle given: the kind's default


def test_every_built_in_draw_reads_only_keys_of_the_data() -> None:
    assert set(DRAW.key("draw").choices) <= set(DRAWS)
    needs = {"integers": {"high": 1}, "dirichlet": {"alpha": [1.0, 1.0]}, "choice": {"values": [0.1, 0.2]}}
    for name in DRAW.key("draw").choices:
        means = {"draw": name, "seed": 1, "bogus": 1} | needs.get(name, {})
        text = message(problem(environment={"kind": "BernoulliArms", "means": means}))
        assert "environment.means.bogus: unknown key" in text, text
        assert takes(text) <= {k.name for k in DRAW.keys}, (name, text)


def test_the_logged_environment_reads_exactly_the_keys_of_the_data(tmp_path) -> None:
    (tmp_path / "log.csv").write_text("round,arm,reward\n0,0,1\n1,1,0\n2,2,1\n3,3,0\n", encoding="utf-8")
    environment = {"kind": "logged", "file": "log.csv", "bogus": 1}
    with pytest.raises(ProblemError) as info:
        parse_problem(problem(environment=environment), str(tmp_path / "x.toml"))
    assert "environment.bogus: unknown key" in str(info.value)
    assert takes(str(info.value)) == {k.name for k in LOGGED.keys}


def test_every_example_of_the_reference_is_valid_toml() -> None:
    for schema in SCHEMA:
        tomllib.loads(schema.example)  # raises on a placeholder such as [1, 2, ...]
