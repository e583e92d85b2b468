"""Screenshots of the built site, as a reader sees it, with headless Chromium.

Run after building the site (``python -m sphinx -W -b html docs docs/_build/html``)::

    .venv/bin/python docs/screenshots.py                  # the default pages
    .venv/bin/python docs/screenshots.py api/generated/cmab_milp.AROQ.html

Needs a ``chromium`` binary (Debian: ``apt-get install chromium``). The images go to
``docs/_build/screenshots/`` (``getting-started.png``, ``api-index.png``, ...), 1280 x 1600 pixels each.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SITE = Path(__file__).resolve().parent / "_build" / "html"
OUT = Path(__file__).resolve().parent / "_build" / "screenshots"
#: The pages a new reader opens first: the front page, getting started, and the API reference.
PAGES = (
    "index.html",
    "getting-started.html",
    "api/index.html",
    "api/generated/cmab_milp.make_oracle.html",
    "api/generated/cmab_milp.AROQ.html",
    "guide/oracles.html",
    "notebooks/01_quickstart.html",
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,1600",
)


def browser() -> str:
    """The path of a Chromium binary (``ValueError`` naming the names tried when there is none)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise ValueError("no chromium binary found (tried chromium, chromium-browser, google-chrome)")


def screenshot(page: str, site: Path = SITE, out: Path = OUT, timeout: float = 120) -> Path:
    """Render ``site/page`` headless into ``out/<page with / as ->.png`` and return that path."""
    source = site / page
    if not source.is_file():
        raise ValueError(f"{source} does not exist: build the site first")
    out.mkdir(parents=True, exist_ok=True)
    image = out / (page.removesuffix(".html").replace("/", "-") + ".png")
    command = [browser(), *FLAGS, f"--screenshot={image}", source.as_uri()]
    subprocess.run(command, check=True, capture_output=True, timeout=timeout)
    return image


def main(pages: list[str]) -> int:
    for page in pages or PAGES:
        print(screenshot(page))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
