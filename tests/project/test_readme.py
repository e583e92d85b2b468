"""The Python examples of the README and of the documentation's pages run as written (so they stay honest)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The site's prose pages (docs/_build and the generated API stubs are build output, not sources).
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts and "api" not in p.parts)


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


BLOCKS = [(path, code) for path in [README, *PAGES] for code in _blocks(path)]


def test_readme_has_python_examples() -> None:
    assert _blocks(README), "README.md lost its Python example"
    assert len(BLOCKS) >= 8, "the guide's pages lost their Python examples"


@pytest.mark.parametrize(
    ("path", "code"), BLOCKS, ids=[f"{p.relative_to(ROOT)}:block{k}" for k, (p, _) in enumerate(BLOCKS)]
)
def test_python_block_runs(path: Path, code: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cmab_milp.oracles.core.registry import BACKENDS

    registered = dict(BACKENDS)  # an example may register a backend: keep it out of the other tests
    try:
        exec(compile(code, str(path), "exec"), {"__name__": "readme"})
    finally:
        BACKENDS.clear()
        BACKENDS.update(registered)
    assert capsys.readouterr().out.strip(), "the example should print its results"
