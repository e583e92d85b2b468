"""Figures of a run written into its results folder (``figure.png``, ``panels/``); drawn by :mod:`cmab_milp.figures`.

Example
-------
>>> import numpy as np
>>> t = np.arange(1, 101)
>>> curves = {"CUCB": PolicyCurves(t, {"regret": np.vstack([np.sqrt(t), 1.1 * np.sqrt(t)])})}
>>> figure = make_figure(curves, ["regret"])
>>> [ax.get_title() for ax in figure.axes]
['(a) regret']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...figures import (
    COINCIDE_SHARE,
    DEFAULT_PANELS,
    PANELS,
    RESULT_PANELS,
    Panel,
    PolicyCurves,
    coinciding,
    curves_of,
    make_figure,
    plot_results,
)

__all__ = [
    "COINCIDE_SHARE",
    "DEFAULT_PANELS",
    "PANELS",
    "RESULT_PANELS",
    "Panel",
    "PolicyCurves",
    "coinciding",
    "curves_of",
    "make_figure",
    "plot_results",
    "save_figures",
]


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
