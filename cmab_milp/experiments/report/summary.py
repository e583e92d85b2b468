"""``summary.json`` and the figures' curves, read back from the complete jobs of a results folder.

:func:`summarise` gives, per policy, the mean, standard deviation, minimum and
maximum over seeds of the final totals (:data:`METRICS`, contract section 6),
what each policy was told (kind, oracle, constants, horizon), the jobs still
missing, and the problem (its steps, seeds, arms and optimal action).
:func:`collect_curves` stacks every complete job's curves for the plots.

Example
-------
>>> import io, tempfile
>>> from cmab_milp.experiments.problem.demo import demo_problem
>>> from cmab_milp.experiments.run.runner import run_problem
>>> problem = demo_problem(horizon=30, seeds=2)
>>> out = tempfile.mkdtemp()
>>> _ = run_problem(problem, out, jobs=1, plots=False, stream=io.StringIO())
>>> summary = summarise(problem, out)
>>> summary["complete"], summary["problem"]["steps"], summary["problem"]["optimal_action"]
(True, 30, [2, 3])
>>> collect_curves(problem, out)["CUCB"].values["queries"].shape
(2, 30)
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..problem.problem_file import Problem
from ..problem.registry import load_plugins
from ..run.jobs import Job, is_complete, json_label, told_horizon
from ..run.storage import CURVE_COLUMNS, job_paths, read_curve, read_json
from .plots import PolicyCurves

__all__ = ["METRICS", "OPTIONAL_METRICS", "collect_curves", "describe_arms", "summarise"]

#: Totals summarised per policy (contract section 6).
METRICS: tuple[str, ...] = ("regret", "queries", "rounds", "wall_seconds", "oracle_seconds")
#: Totals present only for some policies: runs with an approximate oracle or a declared ``alpha < 1``
#: (Algorithm 5) report the ``alpha_regret`` and the ``alpha`` it used (declared, or the oracle's proven ratio).
OPTIONAL_METRICS: tuple[str, ...] = ("alpha_regret", "alpha")


def _versions() -> dict[str, str]:
    import cmab_milp

    out = {"cmab_milp": cmab_milp.__version__, "python": platform.python_version(), "platform": platform.platform()}
    for package in ("numpy", "scipy", "networkx", "highspy", "pulp", "pyscipopt"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return out


def _stats(values: list[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=float)
    std = float(array.std(ddof=1)) if len(array) > 1 else 0.0
    return {"mean": float(array.mean()), "std": std, "min": float(array.min()), "max": float(array.max())}


def summarise(
    problem: Problem, out_dir: str | Path, run_info: dict[str, Any] | None = None, *, optimum: bool = True
) -> dict[str, Any]:
    """``summary.json``'s content from the job files in ``out_dir`` (complete jobs of this problem only).

    ``optimum=False`` leaves out the arms and the optimal action (:func:`describe_arms`): an interrupted run
    stops at once instead of solving the problem once more (a resumed run's summary has them).
    """
    out = Path(out_dir)
    arms = describe_arms(problem) if optimum else None
    policies: dict[str, Any] = {}
    info: dict[str, Any] = {}
    missing: list[str] = []
    not_requested: list[str] = []  # on_request policies never run here: not missing, just not asked for
    for spec in problem.policies:
        totals: dict[str, list[float]] = {metric: [] for metric in (*METRICS, *OPTIONAL_METRICS)}
        seeds = []
        done = [seed for seed in problem.seeds if is_complete(out, problem, Job(spec.name, seed))]
        if spec.on_request and not done:
            not_requested.append(spec.name)
        for seed in problem.seeds:
            job = Job(spec.name, seed)
            if seed not in done:
                if not (spec.on_request and not done):
                    missing.append(str(job))
                continue
            record = read_json(job_paths(out, spec.name, seed)[1])
            for metric in METRICS:
                totals[metric].append(record["totals"][metric])
            for metric in OPTIONAL_METRICS:
                if metric in record["totals"]:
                    totals[metric].append(record["totals"][metric])
            seeds.append(seed)
        if seeds:
            policies[spec.name] = {metric: _stats(totals[metric]) for metric in METRICS}
            for metric in OPTIONAL_METRICS:
                if len(totals[metric]) == len(seeds):
                    policies[spec.name][metric] = _stats(totals[metric])
        info[spec.name] = {
            "kind": spec.kind,
            "oracle": spec.oracle,
            **({"oracle_options": spec.oracle_options} if spec.oracle_options else {}),
            "constants": spec.constants,
            "horizon": told_horizon(problem, spec.name),
            "seeds": seeds,
        }
    return {
        "policies": policies,
        "std": "sample standard deviation over seeds (ddof=1; 0 for one seed)",
        "policy_info": info,
        "complete": not missing,
        "missing_jobs": missing,
        "on_request_not_run": not_requested,
        "problem": {
            "file": problem.file,
            "title": problem.title,
            "digest": problem.digest(),
            "horizon": "unknown" if problem.horizon is None else problem.horizon,
            "steps": problem.steps,
            "seeds": problem.seeds,
            "space": problem.space,
            "environment": problem.environment.get("kind"),
            **(arms if arms is not None else {}),
        },
        "run": run_info or {},
        "versions": _versions(),
    }


def describe_arms(problem: Problem) -> dict[str, Any] | None:
    """The arms' labels and an optimal action by label (``None`` if the problem cannot be built here).

    ``{"arm_labels": [...], "optimal_action": [labels], "optimal_reward": x}``: read with the regret,
    they say which arms the policies should end up playing. ``arm_labels`` is left out when the arms
    are plain indices.
    """
    try:
        load_plugins(problem.plugins)
        space = problem.build_space()
        env = problem.build_environment(space)
        best, value = env.optimal(space)
    except Exception:  # a summary must not fail because the optimum cannot be recomputed here
        return None
    labels = space.arm_labels
    out: dict[str, Any] = {}
    if labels.custom is not None or labels.edges is not None:
        out["arm_labels"] = [json_label(x) for x in labels.display]
    root = space
    while getattr(root, "parent", None) is not None and not hasattr(root, "path_edges"):
        root = root.parent  # side rules wrap the graph space; a path is still a path of its graph
    if hasattr(root, "path_edges") and labels.custom is None:  # a path: its edges in the order travelled
        out["optimal_action"] = [json_label(x) for x in root.path_edges(best)]
    else:
        out["optimal_action"] = [json_label(x) for x in space.labels_of(best)]
    out["optimal_reward"] = float(value)
    return out


def collect_curves(problem: Problem, out_dir: str | Path) -> dict[str, PolicyCurves]:
    """Every complete job's curves, per policy, on the first seed's ``t`` grid."""
    out = Path(out_dir)
    curves: dict[str, PolicyCurves] = {}
    for spec in problem.policies:
        runs = [
            read_curve(job_paths(out, spec.name, seed)[0])
            for seed in problem.seeds
            if is_complete(out, problem, Job(spec.name, seed))
        ]
        if not runs:
            continue
        t = runs[0]["t"]
        values = {}
        for column in CURVE_COLUMNS[1:]:
            rows = [r[column] if np.array_equal(r["t"], t) else np.interp(t, r["t"], r[column]) for r in runs]
            values[column] = np.vstack(rows)
        curves[spec.name] = PolicyCurves(t, values)
    return curves
