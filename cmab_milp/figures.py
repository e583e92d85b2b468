"""Figures of runs: the paper's Figure 2 panels, chosen by name from :data:`PANELS` (the CLI's style).

:func:`plot_results` draws :class:`~cmab_milp.SimulationResult` objects (several seeds of one policy
are averaged; ``result.plot()`` draws one run); :func:`make_figure` draws :class:`PolicyCurves`.

A panel is data: which recorded metric it shows, against ``t`` (a curve: mean
over seeds with a band of ±1 standard deviation) or at ``T`` (a bar per policy
with ±1 standard deviation error bars), and its axis scale. Figure 2 of the paper
is :data:`DEFAULT_PANELS`; Figure 3/4 add ``"total_queries"``. Rendering uses
matplotlib's Agg canvas directly (no pyplot state, no display needed).

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

import functools
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_PANELS",
    "PANELS",
    "RESULT_PANELS",
    "Panel",
    "PolicyCurves",
    "coinciding",
    "curves_of",
    "make_figure",
    "plot_results",
]


@dataclass(frozen=True)
class Panel:
    """One plot: ``metric`` (a curve column) against t (``kind="curve"``) or at T (``kind="final"``)."""

    title: str
    metric: str
    ylabel: str
    kind: str = "curve"
    yscale: str = "linear"
    xscale: str = "linear"


#: Every panel a problem file may ask for in ``[run] panels``.
PANELS: dict[str, Panel] = {
    "rounds": Panel("cumulative oracle adaptivity", "rounds", "adaptivity rounds", yscale="log"),
    "queries": Panel("cumulative oracle queries", "queries", "oracle queries", yscale="log"),
    "regret": Panel("regret", "regret", "cumulative regret"),
    "runtime": Panel("runtime", "runtime", "wall-clock seconds", yscale="log"),
    "oracle_runtime": Panel("oracle time", "oracle_runtime", "seconds in oracle calls", yscale="log"),
    "total_rounds": Panel("total adaptivity at T", "rounds", "adaptivity rounds at T", kind="final", yscale="log"),
    "total_queries": Panel("total queries at T", "queries", "oracle queries at T", kind="final", yscale="log"),
}

#: The paper's Figure 2: (a) adaptivity, (b) queries, (c) regret, (d) runtime, (e) total adaptivity.
DEFAULT_PANELS: tuple[str, ...] = ("rounds", "queries", "regret", "runtime", "total_rounds")

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf")
#: Each policy's curve has its own line style and marker besides its colour, so curves that coincide
#: (CUCB and OLS-UCB-C on the crew problem) stay visible: the dashes and markers of the one on top
#: leave the one under it showing.
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<")
#: Curves whose means differ by at most this share of the panel's range at every step are named in a
#: note on the panel ("A and B coincide").
COINCIDE_SHARE = 0.01


def _style(k: int) -> dict[str, Any]:
    return {
        "color": _COLORS[k % len(_COLORS)],
        "linestyle": _STYLES[k % len(_STYLES)],
        "marker": _MARKERS[k % len(_MARKERS)],
    }


def coinciding(
    means: Mapping[str, np.ndarray], share: float = COINCIDE_SHARE, log: bool = False
) -> list[tuple[str, str]]:
    """Pairs of curves (same steps) whose values differ by at most ``share`` of their common range everywhere.

    ``log=True`` compares them as a log axis draws them (``log10`` of the values, those <= 0 raised to the
    smallest positive one).

    >>> coinciding({"A": np.array([1.0, 5.0]), "B": np.array([1.0, 5.01]), "C": np.array([2.0, 9.0])})
    [('A', 'B')]
    >>> coinciding({"A": np.array([1.0, 45.0]), "B": np.array([1.0, 92.0]), "C": np.array([1.0, 1e5])}, log=True)
    []
    """
    names = list(means)
    if len(names) < 2:
        return []
    stacked = np.vstack([np.asarray(means[n], dtype=float) for n in names])
    if log:
        positive = stacked[np.isfinite(stacked) & (stacked > 0)]
        floor = float(positive.min()) if positive.size else 1.0
        stacked = np.log10(np.maximum(np.where(np.isfinite(stacked), stacked, floor), floor))
    finite = stacked[np.isfinite(stacked)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    tol = share * span if span > 0 else 1e-12
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if np.all(np.abs(stacked[i] - stacked[j]) <= tol):
                out.append((names[i], names[j]))
    return out


@dataclass
class PolicyCurves:
    """One policy's recorded curves: ``t`` (shape ``(n,)``) and ``values[metric]`` (shape ``(seeds, n)``)."""

    t: np.ndarray
    values: dict[str, np.ndarray]

    @property
    def n_seeds(self) -> int:
        return len(next(iter(self.values.values())))


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) and the sample standard deviation (0 for one seed)."""
    mean = values.mean(axis=0)
    std = values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros_like(mean)
    return mean, std


def _band_label(curves: Mapping[str, PolicyCurves]) -> str:
    """The legend's note on what the lines and bands are.

    >>> one = PolicyCurves(np.arange(1, 3), {"regret": np.ones((1, 2))})
    >>> _band_label({"A": one}), _band_label({"A": PolicyCurves(one.t, {"regret": np.ones((3, 2))})})
    ('one seed (no band)', 'mean over 3 seeds; band/bars: ±1 s.d.')
    """
    seeds = sorted({c.n_seeds for c in curves.values()})
    if seeds == [1]:
        return "one seed (no band)"
    count = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return f"mean over {count} seeds; band/bars: ±1 s.d."


def _draw_panel(ax: Any, letter: str, panel: Panel, curves: Mapping[str, PolicyCurves]) -> None:
    ax.set_title(f"({letter}) {panel.title}", fontsize=10)
    ax.set_ylabel(panel.ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if panel.kind == "final":
        names = list(curves)
        finals = [curves[n].values[panel.metric][:, -1] for n in names]
        means = np.array([f.mean() for f in finals])
        stds = np.array([f.std(ddof=1) if len(f) > 1 else 0.0 for f in finals])
        colors = [_COLORS[k % len(_COLORS)] for k in range(len(names))]
        x = np.arange(len(names))
        ax.bar(x, means, yerr=stds, color=colors, capsize=4, alpha=0.85)
        ax.set_xticks(x, names, rotation=20 if len(names) > 3 else 0)
        for xi, value in zip(x, means, strict=True):
            text = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
            ax.annotate(
                text, (xi, value), ha="center", va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points"
            )
        ax.set_yscale(panel.yscale)
        if panel.yscale == "log":
            ax.set_ylim(
                bottom=max(0.5, 0.5 * float(means[means > 0].min())) if (means > 0).any() else None,
                top=float(means.max() + stds.max()) * 4 if len(means) else None,
            )
        return
    means: dict[str, np.ndarray] = {}
    n_curves = len(curves)
    for k, (name, data) in enumerate(curves.items()):
        style = _style(k)
        mean, std = _band(data.values[panel.metric])
        means[name] = mean
        # about 8 markers per curve, each policy's shifted so that coinciding curves show every marker
        every = max(1, len(data.t) // 8)
        start = (k * every) // max(n_curves, 1)
        ax.plot(data.t, mean, label=name, lw=1.6, markevery=(start, every), markersize=4, zorder=2 + k, **style)
        low = mean - std
        if panel.yscale == "log":
            low = np.maximum(low, mean / 10)  # keep the band on a log axis
        ax.fill_between(data.t, low, mean + std, color=style["color"], alpha=0.2, lw=0)
    ts = [data.t for data in curves.values()]
    same_steps = all(len(t) == len(ts[0]) and np.array_equal(t, ts[0]) for t in ts)
    pairs = coinciding(means, log=panel.yscale == "log") if same_steps else []
    if pairs:
        text = "; ".join(f"{a} and {b} coincide" for a, b in pairs[:3])
        more = f" (+{len(pairs) - 3} pairs)" if len(pairs) > 3 else ""
        ax.annotate(
            text + more,
            (0.02, 0.98),
            xycoords="axes fraction",
            ha="left",
            va="top",
            fontsize=7,
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8, "lw": 0.5},
        )
    ax.set_xlabel("time step t")
    ax.set_xscale(panel.xscale)
    ax.set_yscale(panel.yscale)
    if panel.xscale == "linear":
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))


def _legend_handles(curves: Mapping[str, PolicyCurves]) -> tuple[list, list[str]]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list = [Line2D([], [], lw=2, markersize=5, **_style(k)) for k in range(len(curves))]
    labels = list(curves)
    handles.append(Patch(color="grey", alpha=0.3))
    labels.append(_band_label(curves))
    return handles, labels


@functools.cache
def _shown_figure_class() -> type:
    """A matplotlib ``Figure`` that shows itself in a notebook (its PNG), with no pyplot state needed."""
    from matplotlib.figure import Figure

    class ShownFigure(Figure):
        def _repr_png_(self) -> bytes:
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            if not isinstance(self.canvas, FigureCanvasAgg):
                FigureCanvasAgg(self)
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100)
            return buffer.getvalue()

    return ShownFigure


def make_figure(curves: Mapping[str, PolicyCurves], panels: Sequence[str], title: str = "") -> Any:
    """One matplotlib ``Figure`` holding the named panels side by side, with a shared legend."""
    if not curves:
        raise ValueError("no curves to plot")
    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        raise ValueError(f"unknown panels {unknown}; known: {sorted(PANELS)}")
    n = len(panels)
    cols = n if n <= 3 else (n + 1) // 2 if n <= 6 else 4
    rows = -(-n // cols)
    figure = _shown_figure_class()(figsize=(4.2 * cols, 3.4 * rows + 0.6), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for k, name in enumerate(panels):
        _draw_panel(axes[k], chr(ord("a") + k), PANELS[name], curves)
    handles, labels = _legend_handles(curves)
    if n == 1:
        axes[0].legend(handles, labels, loc="best", fontsize=8, framealpha=0.85)
    elif n < len(axes):  # a free slot: the legend goes there
        for ax in axes[n:]:
            ax.set_axis_off()
        axes[n].legend(handles, labels, loc="center", frameon=False)
    else:
        figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), frameon=False)
    if title:
        figure.suptitle(title)
    return figure


#: The panels ``result.plot()`` and :func:`plot_results` draw by default.
RESULT_PANELS: tuple[str, ...] = ("regret", "queries", "rounds", "runtime")


def curves_of(results: Any) -> dict[str, PolicyCurves]:
    """Results grouped by policy name (in first-seen order), each policy's runs stacked as seeds.

    ``results`` is one :class:`~cmab_milp.SimulationResult`, a list of them, or a mapping
    ``{name: result or list of results}`` (the names label the curves). Runs of one policy
    must share their recording steps ``t``.

    >>> import cmab_milp as cm
    >>> env = cm.BernoulliArms([0.1, 0.3, 0.6, 0.8], seed=0)
    >>> runs = [cm.simulate(cm.CUCB(cm.Cardinality(4, 2), 200, oracle="enumerate"), env, 200, seed=s) for s in (0, 1)]
    >>> curves = curves_of(runs)
    >>> list(curves), curves["CUCB"].n_seeds
    (['CUCB'], 2)
    """
    groups: dict[str, list] = {}
    if isinstance(results, Mapping):
        for name, runs in results.items():
            groups[str(name)] = list(runs) if isinstance(runs, list | tuple) else [runs]
    else:
        for run in [results] if not isinstance(results, list | tuple) else results:
            groups.setdefault(run.policy, []).append(run)
    curves: dict[str, PolicyCurves] = {}
    for name, runs in groups.items():
        if not runs:
            raise ValueError(f"no results for {name!r}")
        t = np.asarray(runs[0].t)
        for run in runs[1:]:
            if not np.array_equal(np.asarray(run.t), t):
                raise ValueError(
                    f"the runs of {name!r} were recorded at different steps t: give them the same T and record"
                )
        values = {
            metric: np.vstack([np.asarray(getattr(run, metric), dtype=float) for run in runs]) for metric in _METRICS
        }
        curves[name] = PolicyCurves(t, values)
    return curves


_METRICS = ("regret", "queries", "rounds", "runtime", "oracle_runtime")


def plot_results(
    results: Any, panels: Sequence[str] = RESULT_PANELS, title: str = "", path: str | Path | None = None
) -> Any:
    """The CLI's figure of ``results`` (see :func:`curves_of`): a matplotlib ``Figure``, saved to ``path`` if given.

    Curves are the mean over a policy's runs (seeds) with a band of ±1 sample standard deviation;
    ``panels`` are names of :data:`PANELS` (regret on linear axes; queries, rounds and runtime on a
    log y axis; t linear). In a notebook the returned figure displays itself.

    >>> import cmab_milp as cm
    >>> env = cm.BernoulliArms([0.1, 0.3, 0.6, 0.8], seed=0)
    >>> run = cm.simulate(cm.CUCB(cm.Cardinality(4, 2), 200, oracle="enumerate"), env, 200)
    >>> [ax.get_title() for ax in plot_results([run], ["regret", "queries"]).axes[:2]]
    ['(a) regret', '(b) cumulative oracle queries']
    """
    figure = make_figure(curves_of(results), list(panels), title)
    if path is not None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
        figure.savefig(Path(path), dpi=130)
    return figure
