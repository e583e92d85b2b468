"""A new backend is one module and one registry line: scipy's ``milp`` as a toy adapter passes the kit.

Truth: the conformance kit's brute force over the enumerated actions (``check_oracle``); the registry
reads the toy's declaration from its adapter class.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.registry import BACKENDS, capabilities
from cmab_milp.testing import check_oracle, small_spaces


@pytest.fixture
def toy_backend():
    """The one registry line of the toy backend (removed afterwards)."""
    cm.register_backend("toy-scipy", "toy_scipy_backend:ScipyMilpOracle")
    yield "toy-scipy"
    del BACKENDS["toy-scipy"]


def test_the_toy_backend_passes_check_oracle(toy_backend) -> None:
    report = check_oracle(toy_backend)
    assert report["norm"] == "skipped: the backend declares no norm queries"
    assert all(report[case] == "passed" for case in report if case != "norm"), report


def test_the_registry_reads_the_declaration_from_the_module(toy_backend) -> None:
    from toy_scipy_backend import ScipyMilpOracle

    assert capabilities(toy_backend) is not ScipyMilpOracle.CAPABILITIES  # a copy with the merged fields
    assert capabilities(toy_backend) == ScipyMilpOracle.CAPABILITIES
    assert BACKENDS[toy_backend].description == ScipyMilpOracle.DESCRIPTION
    assert BACKENDS[toy_backend].options() == ("time_limit", "verify", "workers", "ties")
    assert toy_backend in cm.available_backends()


def test_the_toy_answers_as_brute_force(toy_backend) -> None:
    space = small_spaces()["paths-cyclic"]  # lazy subtour cuts: the cut loop of the certified solve
    oracle = cm.make_oracle(space, toy_backend)
    rng = np.random.default_rng(3)
    actions = space.enumerate().astype(float)
    for _ in range(5):
        w = rng.normal(size=space.d)
        assert float(oracle.argmax(w) @ w) == pytest.approx(float((actions @ w).max()), abs=1e-9)
    with pytest.raises(cm.UnsupportedQuery, match="linear queries only"):
        oracle.argmax_norm(np.ones(space.d), np.eye(space.d), 1.0)


def test_docs_show_the_toy_module_as_it_is() -> None:
    """``docs/extending.md`` includes this module's code from the file itself (so page and file cannot drift)."""
    root = Path(__file__).resolve().parents[3]
    page = (root / "docs" / "extending.md").read_text(encoding="utf-8")
    assert "```{literalinclude} ../tests/oracles/backends/toy_scipy_backend.py\n:language: python\n" in page
    module = (Path(__file__).parent / "toy_scipy_backend.py").read_text(encoding="utf-8")
    assert "\nimport numpy as np\n" in module, "the page's literalinclude starts at this line"
