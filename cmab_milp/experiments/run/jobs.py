"""One job of a run: a (policy, seed) pair, played in a worker, then recorded in the results folder.

:func:`run_job` builds the space, the environment and the policy afresh from
the picklable :class:`.Problem`, plays ``problem.steps`` time steps with
:func:`cmab_milp.simulate` and returns the curves (down-sampled to
``problem.curve_points``) and the totals; errors come back as data so that the
parent names the job that failed. In the parent, :func:`save_job` writes the
curve and then the record that marks the job complete; :func:`is_complete`
reads it back (``--resume`` skips complete jobs of the same problem digest).

Example
-------
>>> from cmab_milp.experiments.problem.demo import demo_problem
>>> problem = demo_problem(horizon=30, seeds=1)
>>> outcome = run_job(problem, "CUCB", 0)
>>> outcome["totals"]["queries"], int(outcome["curve"]["t"][-1]), str(Job("CUCB", 0))
(30, 30, 'CUCB seed 0')
>>> import tempfile
>>> out = Path(tempfile.mkdtemp())
>>> save_job(out, problem, Job("CUCB", 0), outcome)
>>> is_complete(out, problem, Job("CUCB", 0)), is_complete(out, problem, Job("CUCB", 1))
(True, False)
"""

from __future__ import annotations

import datetime as _dt
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..problem.problem_file import Problem
from ..problem.registry import load_plugins
from .progress import ProgressOptions, job_reporter
from .storage import CURVE_COLUMNS, contained, downsample, job_paths, read_json, write_curve, write_json

__all__ = ["Job", "is_complete", "json_label", "now", "run_job", "save_job", "told_horizon"]


@dataclass(frozen=True)
class Job:
    """One (policy, seed) pair of a run."""

    policy: str
    seed: int

    def __str__(self) -> str:
        return f"{self.policy} seed {self.seed}"


def run_job(
    problem: Problem, policy: str, seed: int, report_seconds: float = ProgressOptions.report_seconds
) -> dict[str, Any]:
    """Build the space, environment and policy afresh, simulate, and return curves and totals.

    Runs in a worker process: everything it needs is in the (picklable) problem. Its steps
    go to the parent at most every ``report_seconds`` (:class:`~.progress.ProgressOptions`).
    Errors are returned (``{"error": traceback}``), not raised, so that the
    parent can report them with the job's name.
    """
    import cmab_milp
    from cmab_milp.provenance import provenance

    started = time.perf_counter()
    try:
        load_plugins(problem.plugins)  # a fresh worker process: the trusted modules register their kinds again
        space = problem.build_space()
        env = problem.build_environment(space)
        agent = problem.build_policy(policy, space)
        result = cmab_milp.simulate(
            agent,
            env,
            problem.steps,
            seed=seed,
            record=problem.curve_points,
            progress=job_reporter(
                str(Job(policy, seed)), every=report_seconds
            ),  # steps done, to the parent (None: no channel)
        )
        t = np.asarray(result.t)
        curve = {"t": t}
        for column in CURVE_COLUMNS[1:]:
            values = getattr(result, column, None)
            curve[column] = np.full(len(t), np.nan) if values is None else np.asarray(values, dtype=float)
        keep = downsample(t, problem.curve_points)
        curve = {name: values[keep] for name, values in curve.items()}
        totals = {
            "regret": float(np.asarray(result.regret)[-1]),
            "queries": int(np.asarray(result.queries)[-1]),
            "rounds": int(np.asarray(result.rounds)[-1]),
            "wall_seconds": float(result.wall_seconds),
            "oracle_seconds": float(result.oracle_seconds),
        }
        if getattr(result, "alpha_regret", None) is not None:  # Algorithm 5: alpha-approximate oracles
            totals["alpha_regret"] = float(np.asarray(result.alpha_regret)[-1])
            totals["alpha"] = float(result.alpha)
        extra = [
            {**note, "arms": [json_label(a) for a in note["arms"]]} for note in result.info.get("extra_queries", ())
        ]
    except Exception:  # reported by the parent with the job's name; other jobs go on
        return {"error": traceback.format_exc()}
    return {
        "curve": curve,
        "totals": totals,
        "job_seconds": time.perf_counter() - started,
        "extra_queries": extra,
        "provenance": provenance(),  # the worker's versions and machine (a Dask worker may be another machine)
    }


def json_label(label: Any) -> Any:
    """A label as JSON data: an edge ``(u, v)`` becomes ``[u, v]``, other labels stay (or become strings)."""
    if isinstance(label, tuple):
        return [json_label(x) for x in label]
    if isinstance(label, (str, int, float, bool)) or label is None:
        return label
    return str(label)


def told_horizon(problem: Problem, name: str) -> int | str:
    """The horizon a policy was told: T, or ``"unknown"`` (built with ``T=None``)."""
    T = problem.policy_horizon(name)
    return "unknown" if T is None else T


def now() -> str:
    """The time as recorded in results: UTC, ISO 8601, to the second."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def is_complete(out: Path, problem: Problem, job: Job) -> bool:
    """Whether ``job``'s record in ``out`` marks it complete for this very problem (same digest)."""
    csv_path, json_path = job_paths(out, job.policy, job.seed)
    record = read_json(json_path)
    return (
        isinstance(record, dict)
        and record.get("complete") is True
        and record.get("digest") == problem.digest()
        and csv_path.is_file()
    )


def save_job(out: Path, problem: Problem, job: Job, outcome: dict[str, Any]) -> None:
    """Write a finished job's curve, then the record that marks it complete (both atomically)."""
    csv_path, json_path = job_paths(out, job.policy, job.seed)
    contained(out, csv_path)
    curve_sha256 = write_curve(csv_path, outcome["curve"])  # the curve first: the JSON marks the job complete
    spec = problem.policy(job.policy)
    write_json(
        json_path,
        {
            "policy": job.policy,
            "seed": job.seed,
            "kind": spec.kind,
            "oracle": spec.oracle,
            "horizon": told_horizon(problem, job.policy),
            "steps": problem.steps,
            "digest": problem.digest(),
            "totals": outcome["totals"],
            "rows": len(outcome["curve"]["t"]),
            "curve_sha256": curve_sha256,  # cmab-milp verify: an edited or truncated curve file is told apart
            "job_seconds": outcome["job_seconds"],
            # queries beyond the schedule's, with the step and why (cmab_milp.policies.index)
            "extra_queries": outcome.get("extra_queries", []),
            "finished": now(),
            "provenance": outcome.get("provenance"),  # versions and machine (cmab_milp.provenance)
            "complete": True,
        },
    )
