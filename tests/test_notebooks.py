"""The notebooks in notebooks/ run top to bottom (nbclient), so they never rot; each shows what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: Text each notebook must print: the claims its prose makes.
EXPECTED = {
    "01_quickstart.ipynb": ["84 feasible actions", "actions\nTrue\nFalse\nFalse\n", "AROQ  regret"],
    "02_solver_swap.ipynb": ["all agree: True", "all agree: False", "'problem': 'suboptimal'"],
    "03_covariance_and_general_rewards.ipynb": ["OLS-UCB-C", "AROQ-GR", "SROQ-GR"],
    "04_online.ipynb": ["pending 75", "refused: action", "restored continues identically: True", "AROQ T=None"],
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
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "commit clean"
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    printed = _printed(notebook)
    for text in EXPECTED[name]:
        assert text in printed, f"{name} no longer prints {text!r}"
