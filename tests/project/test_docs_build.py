"""The documentation site builds with warnings as errors, and its API reference covers every public name.

The build (``python -m sphinx -W -b html docs OUT``) takes 1-4 minutes on 2 cores, so it is marked slow; it
needs the ``docs`` extra and skips, naming the module, without it. The coverage checks below it are fast.
"""

from __future__ import annotations

import fcntl
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_INDEX = ROOT / "docs" / "api" / "index.md"
#: The public names of the contract's sections 1-9, as ``cm.NAME`` spells them (plus the conformance kit).
CONTRACT = [
    *("Cardinality", "PartitionMatroid", "GraphicMatroid", "SpanningTrees", "STPaths", "Matchings"),
    *("ExplicitActions", "Intersection", "ActionSpace", "make_oracle", "register_backend", "Oracle", "Ledger"),
    *("UnsupportedQuery", "OracleError", "UniformNoise", "BernoulliArms", "GaussianNoise", "DiscreteArms"),
    *("CUCB", "AROQ", "SROQ", "OLSUCBC", "AROQCov", "SROQCov", "SDCB", "AROQGR", "SROQGR", "CTS", "ESCB"),
    *("simulate", "SimulationResult", "load_policy"),
    *("testing.check_oracle", "testing.check_space", "testing.check_policy"),
    *("LimitReached", "verify", "LoggedFeedback", "offline_value", "replay", "LoggedEnvironment"),
    *("datasets.open_bandit", "EpochESCB", "AESCB"),
]


def _listed() -> list[str]:
    """The names the API reference's autosummary tables list (relative to ``cmab_milp``)."""
    return re.findall(r"^ {3}([A-Za-z_][\w.]*)$", API_INDEX.read_text(encoding="utf-8"), re.M)


def test_api_reference_lists_every_contract_name_and_each_exists() -> None:
    listed = _listed()
    assert sorted(set(CONTRACT) - set(listed)) == []
    assert len(listed) == len(set(listed)), "a name listed twice"
    for name in listed:
        module, _, attr = f"cmab_milp.{name}".rpartition(".")
        assert hasattr(importlib.import_module(module), attr), name


def _require_docs_extra() -> None:
    for module in ("sphinx", "pydata_sphinx_theme", "myst_nb", "sphinx_copybutton", "numpydoc"):
        pytest.importorskip(module, reason=f"the docs extra is not installed (no module {module!r})")


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per test session: xdist workers share it under a lock (two builds at once would
    race on the API stubs autosummary writes into ``docs/api/modules``)."""
    _require_docs_extra()
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker of this session
    out, built = shared / "site", shared / "site.built"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
            done = subprocess.run(
                [*command, str(ROOT / "docs"), str(out)],
                capture_output=True,
                text=True,
                timeout=1200,
            )
            assert done.returncode == 0, f"the site does not build with -W:\n{done.stderr[-6000:]}"
            built.touch()
    return out


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors(built_site: Path) -> None:
    for page in ("index", "getting-started", "guide/index", "extending", "api/index", "problem-files", "gallery"):
        assert (built_site / f"{page}.html").is_file(), page


@pytest.mark.slow
def test_every_public_name_has_a_rendered_entry_with_an_example(built_site: Path) -> None:
    missing = []
    for name in _listed():
        page = built_site / "api" / "generated" / f"cmab_milp.{name}.html"
        assert page.is_file(), name
        if "&gt;&gt;&gt;" not in page.read_text(encoding="utf-8"):
            missing.append(name)
    assert missing == [], f"API entries without an example: {missing}"


@pytest.mark.slow
def test_notebooks_render_with_their_outputs_and_figures(built_site: Path) -> None:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        html = (built_site / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8")
        assert "cell_output" in html, path.name
    quickstart = (built_site / "notebooks" / "01_quickstart.html").read_text(encoding="utf-8")
    assert "<img" in quickstart  # its stored figure


@pytest.mark.slow
def test_pages_render_in_headless_chromium(built_site: Path, tmp_path: Path) -> None:
    """docs/screenshots.py renders the Getting-started and API pages a reader opens first."""
    import importlib.util
    import shutil

    if not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "screenshots.py")
    screenshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(screenshots)
    for page in ("getting-started.html", "api/index.html", "api/generated/cmab_milp.make_oracle.html"):
        image = screenshots.screenshot(page, site=built_site, out=tmp_path)
        assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size > 20_000, page
    with pytest.raises(ValueError, match="build the site first"):
        screenshots.screenshot("no-such-page.html", site=built_site, out=tmp_path)


def test_the_reference_resolver_finds_only_names_the_code_has() -> None:
    """docs/conf.py lets a reference stand only when the name exists in the code: a misspelt one stays broken."""
    import importlib.util

    _require_docs_extra()
    spec = importlib.util.spec_from_file_location("docs_conf", ROOT / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    # relative to the module of the page that documents a public name (cmab_milp.AROQCov lives in policies.covariance)
    names = conf._candidates("schedules.shared_cover", "cmab_milp", "AROQCov")
    assert "cmab_milp.policies.schedules.shared_cover" in names
    found = [name for name in names if conf._lookup(name) is not conf._MISSING]
    assert found and conf._home_name(conf._lookup(found[0])) == "cmab_milp.policies.warmup.shared_cover"
    misspelt = conf._candidates("schedules.shared_covr", "cmab_milp", "AROQCov")
    assert all(conf._lookup(name) is conf._MISSING for name in misspelt)
    assert conf._lookup("cmab_milp.Cardinality.with_conflicts") is not conf._MISSING
    assert conf._lookup("cmab_milp.Cardinality.with_conflict") is conf._MISSING
