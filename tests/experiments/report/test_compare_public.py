"""The Python face of ``compare-oracles`` is public and documented next to the command (issue 39, item 7)."""

from __future__ import annotations

from pathlib import Path

import cmab_milp.experiments as experiments
from cmab_milp.experiments.report import compare

NAMES = ["record_queries", "candidate_backends", "compare_backends", "save_plot", "compare_oracles"]


def test_the_compare_functions_are_exported_from_experiments() -> None:
    for name in NAMES:
        assert name in experiments.__all__
        assert getattr(experiments, name) is getattr(compare, name)


def test_the_solver_swap_guide_names_them_next_to_the_command() -> None:
    guide = Path(__file__).resolve().parents[3] / "docs" / "guide" / "solver-swap.md"
    text = guide.read_text(encoding="utf-8")
    section = text[text.index("## Replaying a run's queries on every backend") :]
    for name in NAMES:
        assert f"`{name}(" in section, name


def test_recorded_queries_replay_on_two_backends(tmp_path: Path) -> None:
    problem_file = tmp_path / "p.toml"
    problem_file.write_text(
        '[space]\nkind = "Cardinality"\nd = 5\nm = 2\n[environment]\nkind = "BernoulliArms"\n'
        'means = [0.1, 0.2, 0.3, 0.4, 0.5]\n[[policies]]\nname = "CUCB"\nkind = "CUCB"\n'
        "[run]\nhorizon = 30\nseeds = 1\n"
    )
    space, queries, _facts = experiments.record_queries(experiments.load_problem(problem_file))
    report = experiments.compare_backends(space, queries, ["highs", "enumerate"])
    assert len(queries) == 30 and report["all_agree"]
    assert experiments.save_plot(report, tmp_path / "o.png").exists()
