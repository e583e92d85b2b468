"""``cmab-milp evaluate PROBLEM.toml --log FILE --out DIR``: every policy of a problem, valued on a log.

For each policy of the problem file:

* **frozen**: the action it would play on the log's per-arm estimates (its own
  oracle's argmax of :meth:`~cmab_milp.logged.table.LoggedFeedback.arm_means`,
  arms the log never includes left out), valued by every off-policy estimator
  with its interval (:func:`~cmab_milp.offline_value`);
* **learning**: :func:`~cmab_milp.replay` of the policy against the log (exact
  match, or per arm for a full-information log), with the mean logged reward
  per accepted round and its interval.

The logging policy's own value (the mean reward per logged round) is given
for reference. The log is read and checked first: a refused log (or problem
file) writes nothing. The results go to ``DIR/offline.json``,
``DIR/offline.csv`` (one row per policy and method: value, low, high, n) and
``DIR/offline.png`` (the intervals), each written atomically.

Columns are named as in the problem's ``[environment]`` when it is
``kind = "logged"``, else by ``--round``, ``--arm``, ``--reward``,
``--inclusion``, ``--action-propensity`` (defaults ``round``, ``arm``, ``reward``).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from ...logged.estimators import ESTIMATORS, offline_value
from ...logged.replaying import replay
from ...logged.table import LoggedFeedback
from ..problem.logged_env import LOGGED_KIND, log_options
from ..problem.schema import Table
from .command_help import described
from .storage import atomic_target, atomic_write_text, write_json

__all__ = ["add_command", "evaluate_problem", "run_command"]

#: Columns of ``offline.csv``.
CSV_COLUMNS = ("policy", "method", "value", "low", "high", "n")


def _columns(problem: Any, args: argparse.Namespace | None) -> dict[str, Any]:
    """Reading options: the problem's logged environment's, overridden by the command line's."""
    options: dict[str, Any] = {}
    if problem.environment.get("kind") == LOGGED_KIND:
        options = log_options(Table(dict(problem.environment), "environment", problem.file))
    for key in ("round", "arm", "reward", "inclusion", "action_propensity"):
        value = getattr(args, key, None) if args is not None else None
        if value is not None:
            options[key] = tuple(value.split(",")) if key == "arm" and "," in value else value
    if args is not None and getattr(args, "full_information", False):
        options["full_information"] = True
    return options


def _interval(value: float, se: float, level: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return value - z * se, value + z * se


def evaluate_problem(
    problem: Any,
    log: LoggedFeedback,
    *,
    estimators: list[str] | None = None,
    level: float = 0.95,
    policies: list[str] | None = None,
) -> dict[str, Any]:
    """The report of :mod:`this module <cmab_milp.experiments.run.evaluate>` as plain data (nothing written)."""
    estimators = list(ESTIMATORS) if estimators is None else estimators
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown:
        raise ValueError(f"unknown estimators {unknown}; choose from {', '.join(ESTIMATORS)}")
    space = problem.build_space()
    if space.d != log.d:
        raise ValueError(f"the log has d={log.d} arms but the problem's space has d={space.d}")
    names = [p.name for p in problem.policies if policies is None or p.name in policies]
    missing = [n for n in policies or () if n not in names]
    if missing:
        raise ValueError(f"no policies {missing} in {problem.file}; it has {[p.name for p in problem.policies]}")
    means = log.arm_means()
    unseen = np.flatnonzero(~np.isfinite(means)).tolist()
    totals = log.round_rewards()
    logging_se = float(totals.std(ddof=1) / math.sqrt(log.n)) if log.n > 1 else float("inf")
    low, high = _interval(float(totals.mean()), logging_se, level)
    report: dict[str, Any] = {
        "problem": problem.file,
        "log": {"source": log.source, "rounds": log.n, "rows": log.n_rows, "dropped": dict(log.dropped)},
        "level": level,
        "logging": {"value": float(totals.mean()), "low": low, "high": high, "n": log.n},
        "policies": {},
    }
    if unseen:
        report["log"]["arms_never_included"] = [str(space.label_of(i)) for i in unseen]
    for name in names:
        policy = problem.build_policy(name, space)
        action = policy.oracle.argmax(np.nan_to_num(means, nan=0.0), exclude=unseen)
        frozen: dict[str, Any] = {"action": [str(x) for x in space.labels_of(action)] if action is not None else None}
        estimates: dict[str, Any] = {}
        for estimator in estimators:
            if action is None:
                estimates[estimator] = {"refused": "no action of the space avoids the arms the log never includes"}
                continue
            try:
                estimates[estimator] = offline_value(action, log, estimator=estimator, level=level).to_dict()
            except ValueError as exc:
                estimates[estimator] = {"refused": str(exc)}
        frozen["estimates"] = estimates
        entry: dict[str, Any] = {"frozen": frozen}
        try:
            result = replay(policy, log, means=np.nan_to_num(means, nan=0.0))
            low, high = _interval(result.mean_reward, result.reward_se, level)
            entry["replay"] = {
                "mode": result.mode,
                "accepted": result.accepted,
                "logged_rounds": result.logged_rounds,
                "acceptance": result.acceptance,
                "value": result.mean_reward,
                "low": low,
                "high": high,
                "n": result.accepted,
                "regret": float(result.regret[-1]),
                "queries": int(result.queries[-1]),
                "rounds": int(result.rounds[-1]),
            }
        except ValueError as exc:
            entry["replay"] = {"refused": str(exc)}
        report["policies"][name] = entry
    return report


def _rows(report: dict[str, Any]) -> list[tuple]:
    rows = [("logging", "on-policy", *(report["logging"][k] for k in ("value", "low", "high", "n")))]
    for name, entry in report["policies"].items():
        for estimator, est in entry["frozen"]["estimates"].items():
            if "refused" not in est:
                rows.append((name, estimator, est["value"], est["low"], est["high"], est["n"]))
        rep = entry["replay"]
        if "refused" not in rep:
            rows.append((name, "replay", rep["value"], rep["low"], rep["high"], rep["n"]))
    return rows


def _figure(rows: list[tuple], path: Path, level: float) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 0.35 * len(rows) + 1.2))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ys = np.arange(len(rows))[::-1]
    values = np.array([r[2] for r in rows])
    errors = np.array([[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]])
    ax.errorbar(values, ys, xerr=errors, fmt="o", capsize=3)
    ax.set_yticks(ys, [f"{r[0]}: {r[1]}" for r in rows])
    ax.set_xlabel(f"value per round ({level:.0%} intervals)")
    ax.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    with atomic_target(path) as tmp:
        figure.savefig(tmp, format="png", dpi=120)


def write_report(report: dict[str, Any], out: str | Path) -> list[Path]:
    """Write ``offline.json``, ``offline.csv`` and ``offline.png`` into ``out``; return their paths."""
    out = Path(out)
    rows = _rows(report)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(rows)
    paths = [out / "offline.json", out / "offline.csv", out / "offline.png"]
    write_json(paths[0], report)
    atomic_write_text(paths[1], buffer.getvalue())
    _figure(rows, paths[2], report["level"])
    return paths


def add_command(sub: Any) -> None:
    """Add ``evaluate`` to the ``cmab-milp`` subcommands (an ``argparse`` subparsers object).

    Its description (``cmab-milp evaluate --help``): read a log of (round, arm, reward) rows, value each
    policy of the problem on it (frozen: off-policy estimators; learning: replay) and write
    DIR/offline.json, offline.csv and offline.png. A refused log writes nothing.
    """
    about = "value a problem's policies on a log (off-policy estimates and replay)"
    p = sub.add_parser("evaluate", help=about, description=described(add_command))
    p.add_argument("problem", help="problem file (TOML): the space and the policies")
    p.add_argument("--log", required=True, help="log file (CSV, or Parquet: .parquet / .pq)")
    p.add_argument("--out", required=True, help="folder for offline.json, offline.csv and offline.png")
    p.add_argument("--round", help="round column (default: the problem's logged environment's, else 'round')")
    p.add_argument("--arm", help="arm column, or two comma-separated (an edge's ends) (default 'arm')")
    p.add_argument("--reward", help="reward column (default 'reward')")
    p.add_argument("--inclusion", help="inclusion-probability column (default: none)")
    p.add_argument("--action-propensity", dest="action_propensity", help="action-propensity column (default: none)")
    p.add_argument("--full-information", action="store_true", help="the log holds every arm's outcome each round")
    p.add_argument("--estimators", help=f"comma-separated (default all: {','.join(ESTIMATORS)})")
    p.add_argument("--level", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--policies", help="comma-separated policy names (default: all)")
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``evaluate``: 0 written, 2 refused input (nothing written)."""
    from .. import load_problem

    problem = load_problem(args.problem)
    if not 0 < args.level < 1:
        sys.stderr.write(f"cmab-milp: error: --level must lie in (0, 1), got {args.level}\n")
        return 2
    try:
        log = LoggedFeedback.from_csv(args.log, problem.build_space(), **_columns(problem, args))
        report = evaluate_problem(
            problem,
            log,
            estimators=[e.strip() for e in args.estimators.split(",")] if args.estimators else None,
            level=args.level,
            policies=[n.strip() for n in args.policies.split(",")] if args.policies else None,
        )
    except (ValueError, ImportError) as exc:
        sys.stderr.write(f"cmab-milp: error: {exc}\n")
        return 2
    for path in write_report(report, args.out):
        print(path)
    return 0
