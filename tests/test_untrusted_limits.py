"""One module of limits for every untrusted file: every reader refuses (or accepts) at the same value."""

from __future__ import annotations

import json

import pytest

from cmab_milp import untrusted_limits as limits
from cmab_milp.experiments.problem import file_limits
from cmab_milp.experiments.problem.graphs import MAX_TRIES
from cmab_milp.experiments.problem.limits import CEILINGS
from cmab_milp.experiments.problem.schema import ProblemError
from cmab_milp.experiments.run.storage import read_json
from cmab_milp.policies import anytime, checks, saved_files


def nested(depth: int) -> str:
    """JSON arrays nested exactly ``depth`` deep."""
    return "[" * depth + "]" * depth


def test_every_reader_takes_its_values_from_the_one_module() -> None:
    assert file_limits.MAX_DEPTH == saved_files.MAX_JSON_DEPTH == limits.MAX_NESTING == 64
    assert anytime.MAX_HORIZON == limits.MAX_HORIZON == 2**53
    assert saved_files.MAX_BYTES == limits.MAX_SAVED_BYTES == 2**31
    assert CEILINGS == {"horizon": limits.MAX_RUN_STEPS, "seeds": limits.MAX_SEEDS, "curve_points": 10**6}
    assert limits.MAX_RUN_STEPS == 2**50 <= limits.MAX_HORIZON  # a run never plays past what a policy is told
    assert MAX_TRIES == limits.MAX_GENERATOR_TRIES == 1000


def test_the_depth_scan_agrees_with_the_parsed_depth() -> None:
    """The linear scan counts what ``json`` nests (strings with brackets and escaped quotes skipped)."""
    limits.check_json_depth(nested(64))
    with pytest.raises(ValueError, match="more than 64 deep"):
        limits.check_json_depth(nested(65))
    tricky = json.dumps({"a": ["[[[[", '"{{{', "\\"], "b": [[1]]})
    limits.check_json_depth(tricky, max_depth=3)
    with pytest.raises(ValueError, match="more than 2 deep"):
        limits.check_json_depth(tricky, max_depth=2)


def test_a_saved_learner_header_and_a_problem_file_share_the_depth() -> None:
    saved_files.check_json_depth(nested(limits.MAX_NESTING))
    with pytest.raises(ValueError, match="the header nests"):
        saved_files.check_json_depth(nested(limits.MAX_NESTING + 1))
    text = "a = " + nested(limits.MAX_NESTING).replace("][", "], [")
    file_limits.check_nesting(text, "x.toml")
    with pytest.raises(ProblemError, match=f"more than {limits.MAX_NESTING} deep"):
        file_limits.check_nesting("a = " + nested(limits.MAX_NESTING + 1), "x.toml")


def test_a_results_folder_json_nested_too_deep_reads_as_unreadable(tmp_path) -> None:
    """Before, ``json.loads`` raised RecursionError on such a file; now the folder's reader says it is unreadable."""
    deep = tmp_path / "summary.json"
    deep.write_text(nested(100_000), encoding="utf-8")
    assert read_json(deep) is None
    fine = tmp_path / "problem.json"
    fine.write_text(json.dumps({"a": [[1, 2], {"b": [3]}]}), encoding="utf-8")
    assert read_json(fine) == {"a": [[1, 2], {"b": [3]}]}


def test_the_horizon_limit_is_the_policies_own() -> None:
    assert checks.check_horizon(limits.MAX_HORIZON) == limits.MAX_HORIZON
    with pytest.raises(ValueError, match="beyond the largest supported horizon"):
        checks.check_horizon(limits.MAX_HORIZON + 1)
