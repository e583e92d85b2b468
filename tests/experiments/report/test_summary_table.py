"""The terminal table of a partial run (issue 39, item 5): seed count per row, incomplete rows marked,
what did not run listed.

Found: after a stopped run the table printed ``CUCB 746.7 ± 0.0`` for one seed next to 3-seed rows and
silently left out a policy with no finished seed.
"""

from __future__ import annotations

from pathlib import Path

from cmab_milp.cli import main
from cmab_milp.experiments.report.summary_table import summary_table

METRICS = ("regret", "queries", "rounds", "wall_seconds", "oracle_seconds")

PROBLEM = """
[space]
kind = "Cardinality"
d = 4
m = 2
[environment]
kind = "UniformNoise"
means = [0.1, 0.2, 0.3, 0.4]
[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"
[[policies]]
name = "AROQ"
kind = "AROQ"
oracle = "enumerate"
[run]
horizon = 30
seeds = 3
"""


def test_a_partial_run_s_table_counts_seeds_marks_short_rows_and_names_what_did_not_run(tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--policies", "CUCB", "--jobs", "1", "--no-plots"]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("CUCB"))
    assert row.split()[1] == "3/3"
    assert "not run (no seed finished): AROQ" in text
    assert "missing jobs (3): AROQ seed 0, AROQ seed 1, AROQ seed 2" in text


def test_one_seed_shows_no_standard_deviation_and_is_marked_incomplete() -> None:
    stats = {key: {"mean": 746.7, "std": 0.0} for key in METRICS}
    summary = {
        "policies": {"CUCB": stats, "AROQ": stats},
        "policy_info": {"CUCB": {"seeds": [0]}, "AROQ": {"seeds": [0, 1, 2]}},
        "problem": {"seeds": [0, 1, 2]},
        "missing_jobs": ["CUCB seed 1", "CUCB seed 2"],
    }
    lines = summary_table(summary).splitlines()
    cucb = next(line for line in lines if line.startswith("CUCB"))
    aroq = next(line for line in lines if line.startswith("AROQ"))
    assert "1/3*" in cucb and "±" not in cucb
    assert "3/3 " in aroq and "*" not in aroq and "746.7 ± 0.0" in aroq
    assert any(line.startswith("* incomplete") for line in lines)
    assert "missing jobs (2): CUCB seed 1, CUCB seed 2" in lines


def test_a_complete_run_has_no_marks() -> None:
    stats = {key: {"mean": 5.0, "std": 1.0} for key in METRICS}
    summary = {"policies": {"A": stats}, "policy_info": {"A": {"seeds": [0, 1]}}, "problem": {"seeds": [0, 1]}}
    text = summary_table(summary)
    assert "2/2" in text and "*" not in text and "not run" not in text and "missing" not in text
