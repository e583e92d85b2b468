"""The report of a solver swap: agreement per backend, ratios of approximate backends, and its plot.

:func:`build_report` judges every answer independently of the backend that
gave it (see :mod:`cmab_milp.experiments.report.compare`); :func:`save_plot` draws
the median seconds per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...oracles.core.base import tolerance
from ...oracles.core.queries import LinearQuery, NormQuery

__all__ = ["EXAMPLES", "build_report", "describe", "feasible", "save_plot"]

#: Disagreements kept as examples per backend in the report.
EXAMPLES = 5


def describe(query: Any, d: int) -> dict[str, Any]:
    """The query as JSON-able data, enough to ask it again (a norm query's ``M`` and an index query's
    ``pmf`` only for small ``d``)."""
    r = query.restrictions
    if isinstance(query, LinearQuery):
        out: dict[str, Any] = {"kind": "linear", "weights": query.weights.tolist()}
    elif isinstance(query, NormQuery):
        out = {"kind": "norm", "mu": query.mu.tolist(), "f": query.f, "sign": query.sign}
        if d <= 20:
            out["M"] = query.M.tolist()
    else:  # a distribution-index query (cmab_milp.nonlinear.oracles.IndexQuery)
        out = {"kind": "index", "reward": query.reward.name, "grid": query.grid.values.tolist()}
        if query.pmf.size <= 400:
            out["pmf"] = query.pmf.tolist()
    out.update(include=list(r.include), exclude=list(r.exclude), forbid_pairs=[list(p) for p in r.forbid_pairs])
    return out


def feasible(space: Any, query: Any, action: np.ndarray) -> bool:
    """Whether ``action`` is an action of ``space`` obeying the query's restrictions."""
    action = np.asarray(action, dtype=bool)
    return action.shape == (space.d,) and bool(space.contains(action)) and query.restrictions.admits(action)


def build_report(
    space: Any,
    queries: Sequence[Any],
    names: list[str],
    outcomes: dict[str, list[tuple]],
    setup: dict,
    ratios: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The report of :func:`.compare.compare_backends` from the outcome per (backend, query).

    ``ratios`` holds the declared ratio of each approximate backend (its ``proven_ratio``): its answers
    are checked against ``ratio * best`` instead of ``best``, and its worst ratio is reported.
    """
    ratios = dict(ratios or {})
    n = len(queries)
    stats = {
        name: {
            "agree": 0,
            "disagree": 0,
            "declined": 0,
            "errors": 0,
            "declined_reasons": {},
            "disagreements": [],
            "error_examples": [],
            "_seconds": [],
            "_ratios": [],
        }
        for name in names
    }
    unverified = 0
    for k, query in enumerate(queries):
        values: dict[str, float | None] = {}  # feasible value, or None for "no action"
        infeasible: set[str] = set()
        for name in names:
            outcome = outcomes[name][k]
            if outcome[0] != "answer":
                continue
            stats[name]["_seconds"].append(outcome[2])
            action = outcome[1]
            if action is None:
                values[name] = None
            elif feasible(space, query, action):
                values[name] = query.value(np.asarray(action, dtype=bool))
            else:
                infeasible.add(name)
        if len(values) + len(infeasible) < 2:
            unverified += 1
        found = {name: v for name, v in values.items() if v is not None}
        best_by = max(found, key=found.get) if found else None
        best = found[best_by] if found else None
        for name in names:
            outcome, entry = outcomes[name][k], stats[name]
            if outcome[0] == "declined":
                entry["declined"] += 1
                entry["declined_reasons"][outcome[1]] = entry["declined_reasons"].get(outcome[1], 0) + 1
                continue
            if outcome[0] == "error":
                entry["errors"] += 1
                if len(entry["error_examples"]) < EXAMPLES:
                    entry["error_examples"].append({"query": k, "error": outcome[1], "asked": describe(query, space.d)})
                continue
            problem, value = None, values.get(name)
            if name in ratios and value is not None and best is not None and best > 0:
                entry["_ratios"].append(value / best)
            if name in infeasible:
                problem = "infeasible"
            elif value is None and best is not None:
                problem = "missed"
            elif value is not None and value < ratios.get(name, 1.0) * best - tolerance(best):
                problem = "suboptimal" if name not in ratios else "below its declared ratio"
            if problem is None:
                entry["agree"] += 1
                continue
            entry["disagree"] += 1
            if len(entry["disagreements"]) < EXAMPLES:
                example = {"query": k, "problem": problem, "value": value, "best": best, "best_by": best_by}
                if value is not None and best is not None:
                    example["gap"] = best - value
                example["action"] = (
                    np.flatnonzero(np.asarray(outcome[1], dtype=bool)).tolist() if outcome[1] is not None else None
                )
                example["asked"] = describe(query, space.d)
                entry["disagreements"].append(example)
    backends = {}
    for name in names:
        entry = stats[name]
        seconds = np.asarray(entry.pop("_seconds"), dtype=float)
        worst = entry.pop("_ratios")
        approximate = {}
        if name in ratios:  # Algorithm 5's alpha-approximate backends: the ratio they declare and the one seen
            approximate = {"declared_ratio": ratios[name], "worst_ratio": min(worst) if worst else None}
        backends[name] = {
            "answered": len(seconds),
            "agree": entry["agree"],
            "disagree": entry["disagree"],
            "declined": entry["declined"],
            "errors": entry["errors"],
            "median_seconds": float(np.median(seconds)) if len(seconds) else None,
            "p95_seconds": float(np.percentile(seconds, 95)) if len(seconds) else None,
            "total_seconds": float(seconds.sum()),
            **setup[name],
            "declined_reasons": entry["declined_reasons"],
            "disagreements": entry["disagreements"],
            "error_examples": entry["error_examples"],
            **approximate,
        }
    kinds = {"linear": sum(isinstance(q, LinearQuery) for q in queries)}
    kinds["norm"] = sum(isinstance(q, NormQuery) for q in queries)
    kinds["index"] = n - kinds["linear"] - kinds["norm"]
    return {
        "queries": n,
        "kinds": kinds,
        "tolerance": "1e-9 * (1 + |best|), best = the largest value reached by a feasible answer "
        "(approximate backends: against declared_ratio * best)",
        "unverified_queries": unverified,
        "all_agree": all(b["disagree"] == 0 and b["errors"] == 0 for b in backends.values()),
        "backends": backends,
    }


# --------------------------------------------------------------------- plot
def save_plot(report: dict[str, Any], path: str | Path) -> Path:
    """A bar chart of median seconds per query (p95 as the whisker), log scale, one bar per backend.

    Bars are labelled with agree / disagree / declined counts; a backend with
    disagreements or errors is drawn in red.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = list(report["backends"].items())
    timed = [b for _, b in rows if b["median_seconds"] is not None]
    low = max(min((b["median_seconds"] for b in timed), default=1e-4) / 3, 1e-7)
    high = max((b["p95_seconds"] for b in timed), default=1e-2) * 60
    figure = Figure(figsize=(7.5, 0.55 * max(len(rows), 1) + 1.4), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for y, (_, b) in enumerate(rows):
        label = f"{b['agree']} agree, {b['disagree']} disagree, {b['declined']} declined"
        if b["errors"]:
            label += f", {b['errors']} errors"
        if b["median_seconds"] is None:  # declined (or failed) every query: no time to show
            ax.text(low * 1.15, y, "no answers: " + label, va="center", fontsize=8, color="#7f8c8d")
            continue
        bad = b["disagree"] or b["errors"]
        ax.barh(y, b["median_seconds"], color="#c0392b" if bad else "#2e86c1")
        ax.plot([b["median_seconds"], b["p95_seconds"]], [y, y], color="black", lw=1)
        ax.text(b["p95_seconds"] * 1.15, y, label, va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("seconds per query (bar: median, line to p95)")
    ax.set_title(f"{report['queries']} replayed queries" + ("" if report["all_agree"] else "  (DISAGREEMENTS)"))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=120)
    return path
