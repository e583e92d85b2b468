"""The README's Python examples run as written (so the README stays honest)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_python_examples() -> None:
    assert BLOCKS, "README.md lost its Python examples"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_readme_python_block_runs(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cmab_milp.oracles.core.registry import BACKENDS

    registered = dict(BACKENDS)  # an example may register a backend: keep it out of the other tests
    try:
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    finally:
        BACKENDS.clear()
        BACKENDS.update(registered)
    assert capsys.readouterr().out.strip(), "the example should print its results"
