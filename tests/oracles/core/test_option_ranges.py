"""Option values beyond what a backend's solver accepts are refused before any work, with the key named:
by ``make_oracle`` and by ``cmab-milp validate`` (a problem file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.cli import main
from cmab_milp.oracles.core.registry import BACKENDS, available_backends, capabilities

needs = {name: pytest.mark.skipif(name not in available_backends(), reason=f"needs {name}") for name in BACKENDS}


@pytest.mark.parametrize("backend", [pytest.param("scip", marks=needs["scip"]), "auto"])
@pytest.mark.parametrize("seconds", [1e21, 1e308])
def test_time_limits_beyond_scips_are_refused_by_make_oracle(backend: str, seconds: float) -> None:
    with pytest.raises(ValueError, match=r"time_limit: .* is above 1e\+20, the largest value of SCIP's limits/time"):
        cm.make_oracle(cm.Cardinality(4, 2), backend, time_limit=seconds)


@needs["scip"]
def test_scips_largest_time_limit_is_taken_and_answers() -> None:
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "scip", time_limit=1e20)
    assert oracle.argmax(np.array([0.1, 0.4, 0.3, 0.2])).nonzero()[0].tolist() == [1, 2]


def test_every_declared_range_names_an_option_the_backend_takes() -> None:
    for name, backend in BACKENDS.items():
        known = backend.options()
        for key, low, high, what in backend.capabilities.ranges:
            assert known is None or key in known, (name, key)
            assert low <= high and what


def test_values_inside_the_ranges_and_other_types_are_left_to_the_other_checks() -> None:
    caps = capabilities("scip")
    assert caps.out_of_range({"time_limit": 5.0}) is None and caps.out_of_range({"time_limit": None}) is None
    assert caps.out_of_range({}) is None and capabilities("highs").out_of_range({"time_limit": 1e300}) is None
    assert caps.out_of_range({"time_limit": -1.0}) is None and caps.out_of_range({"time_limit": float("inf")}) is None


@needs["ortools"]
def test_cp_sat_parameters_out_of_cp_sats_ranges_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="linearization_level must be non-negative"):
        cm.make_oracle(cm.Cardinality(4, 2), "ortools", parameters={"linearization_level": -1})
    with pytest.raises(ValueError, match="catch_sigint_signal"):
        cm.make_oracle(cm.Cardinality(4, 2), "ortools", parameters={"catch_sigint_signal": True})
    fine = cm.make_oracle(cm.Cardinality(4, 2), "ortools", parameters={"linearization_level": 2})
    assert fine.argmax(np.array([0.1, 0.4, 0.3, 0.2])).nonzero()[0].tolist() == [1, 2]


PROBLEM = """
[space]
kind = "Cardinality"
d = 4
m = 2

[environment]
kind = "BernoulliArms"
means = [0.1, 0.4, 0.3, 0.2]

[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "{oracle}"
time_limit = {seconds}

[run]
horizon = 10
seeds = 1
"""


@pytest.mark.parametrize("oracle", [pytest.param("scip", marks=needs["scip"]), "auto"])
def test_validate_refuses_a_problem_files_time_limit_beyond_scips(oracle: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(oracle=oracle, seconds="1e308"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "time_limit" in err and "1e+20" in err and "SCIP" in err, err
    path.write_text(PROBLEM.format(oracle=oracle, seconds="60"))
    assert main(["validate", str(path)]) == 0
