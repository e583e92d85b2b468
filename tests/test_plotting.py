"""Plotting from Python (issue 39, item 6): ``result.plot()`` and ``cm.plot_results`` draw the CLI's figure.

Found: no documented way to plot a SimulationResult or several; the notebooks wrote their own matplotlib
code and the figure style was reachable only through ``experiments.PolicyCurves`` + ``make_figure``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm


def runs(policy=cm.CUCB, seeds=(0, 1, 2), T=300):
    space = cm.Cardinality(5, 2)
    env = cm.BernoulliArms([0.1, 0.2, 0.5, 0.6, 0.9], seed=0)
    return [cm.simulate(policy(space, T, oracle="enumerate"), env, T, seed=s) for s in seeds]


def test_a_result_plots_itself_in_the_cli_s_style(tmp_path: Path) -> None:
    result = runs(seeds=(0,))[0]
    figure = result.plot(path=tmp_path / "run.png")
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == ["(a) regret", "(b) cumulative oracle queries", "(c) cumulative oracle adaptivity", "(d) runtime"]
    line = figure.axes[0].get_lines()[0]
    np.testing.assert_array_equal(line.get_ydata(), result.regret)  # one seed: the curve itself
    assert (tmp_path / "run.png").read_bytes()[:4] == b"\x89PNG"
    legends = figure.legends + [ax.get_legend() for ax in figure.axes if ax.get_legend()]
    legend = [t.get_text() for box in legends for t in box.get_texts()]
    assert "one seed (no band)" in legend  # not "mean over 1 seeds"


def test_several_results_average_seeds_per_policy_with_the_sample_std() -> None:
    cucb, aroq = runs(cm.CUCB), runs(cm.AROQ)
    figure = cm.plot_results(cucb + aroq, ["regret"])
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    assert set(lines) == {"CUCB", "AROQ"}
    stacked = np.vstack([r.regret for r in cucb])
    np.testing.assert_allclose(lines["CUCB"].get_ydata(), stacked.mean(axis=0))
    band = figure.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    upper = stacked.mean(axis=0) + stacked.std(axis=0, ddof=1)
    assert np.isclose(band.max(), upper.max())


def test_a_mapping_names_the_curves_and_bad_input_is_refused() -> None:
    figure = cm.plot_results({"mine": runs(seeds=(0,))}, ["queries"])
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["mine"]
    with pytest.raises(ValueError, match="different steps"):
        cm.plot_results(runs(seeds=(0,), T=300) + runs(seeds=(1,), T=200))
    with pytest.raises(ValueError, match="unknown panels"):
        runs(seeds=(0,))[0].plot(["regrets"])


def test_the_figure_shows_itself_in_a_notebook() -> None:
    """A notebook displays an object through ``_repr_png_``: no pyplot or inline backend needed."""
    png = runs(seeds=(0,))[0].plot(["regret"])._repr_png_()
    assert png[:4] == b"\x89PNG" and len(png) > 1000
