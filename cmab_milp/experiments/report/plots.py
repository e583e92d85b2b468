"""Figures of a run written into its results folder (``figure.png``, ``panels/``); drawn by :mod:`cmab_milp.figures`.

The panels and the drawing are :mod:`cmab_milp.figures`' (its names are also read from here, as before);
this module only writes them, atomically and never through a link.

Example
-------
>>> import tempfile
>>> import numpy as np
>>> t = np.arange(1, 11)
>>> curves = {"CUCB": PolicyCurves(t, {"regret": np.vstack([np.sqrt(t)])})}
>>> [p.name for p in save_figures(curves, ["regret"], tempfile.mkdtemp())]
['figure.png', 'a_regret.png']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import figures
from ...figures import PANELS, PolicyCurves, make_figure

#: The names of :mod:`cmab_milp.figures` this module answers to (it re-exported them before).
_FROM_FIGURES = ("COINCIDE_SHARE", *figures.__all__)
__all__ = ["save_figures", *_FROM_FIGURES]


def __getattr__(name: str) -> Any:
    """The names of :mod:`cmab_milp.figures`, read from here as before the figures moved there."""
    if name in _FROM_FIGURES:
        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _save_atomic(figure: Any, path: Path, dpi: int) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ..run.storage import atomic_target

    FigureCanvasAgg(figure)
    with atomic_target(path) as tmp:
        figure.savefig(tmp, format="png", dpi=dpi)


def save_figures(
    curves: Mapping[str, PolicyCurves], panels: Sequence[str], out_dir: str | Path, title: str = "", dpi: int = 130
) -> list[Path]:
    """Write ``out_dir/figure.png`` (all panels) and ``out_dir/panels/<letter>_<panel>.png``; return the paths.

    Nothing is written through a symbolic link inside ``out_dir``
    (:class:`~cmab_milp.experiments.run.storage.FolderError`).
    """
    from ..run.storage import contained

    out = Path(out_dir)
    contained(out, out / "panels" / "x.png")
    (out / "panels").mkdir(parents=True, exist_ok=True)
    written = [out / "figure.png"]
    _save_atomic(make_figure(curves, panels, title), written[0], dpi)
    for k, name in enumerate(panels):
        path = contained(out, out / "panels" / f"{chr(ord('a') + k)}_{name}.png")
        figure = make_figure(curves, [name])
        figure.axes[0].set_title(f"{title}\n{PANELS[name].title}" if title else PANELS[name].title, fontsize=10)
        _save_atomic(figure, path, dpi)
        written.append(path)
    return written
