"""The notebooks in notebooks/ are stored with their outputs and run top to bottom (nbclient), so they never rot."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

#: Text each notebook must print: the claims its prose makes.
EXPECTED = {
    "01_quickstart.ipynb": ["84 feasible actions", "actions\nTrue\nFalse\nFalse\n", "AROQ  regret"],
    "02_solver_swap.ipynb": ["all agree: True", "all agree: False", "'problem': 'suboptimal'"],
    "03_covariance_and_general_rewards.ipynb": ["OLS-UCB-C", "AROQ-GR", "SROQ-GR"],
    "04_online.ipynb": ["pending 75", "refused: action", "restored continues identically: True", "AROQ T=None"],
    "05_logged_data.ipynb": [
        "refused: bad_log.csv: line 300002, column 'ad/slot'",
        "decision: deploy",
        "SROQ  accepted",
    ],
}


def _printed(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output["text"])
    return "".join(parts)


def test_every_notebook_is_listed():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_top_to_bottom(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    # stored with their outputs (they read as run on GitHub), in order, and saying what the prose claims
    assert [cell.get("execution_count") for cell in code] == list(range(1, len(code) + 1)), "store it executed"
    stored = _printed(notebook)
    for text in EXPECTED[name]:
        assert text in stored, f"{name}'s stored outputs do not show {text!r}: run it and save it again"
    for cell in code:
        cell["outputs"], cell["execution_count"] = [], None
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    printed = _printed(notebook)
    for text in EXPECTED[name]:
        assert text in printed, f"{name} no longer prints {text!r}"
