"""Run a problem: one job per (policy, seed), results on disk as they finish, then summary and plots.

:func:`run_problem` prepares the results folder (refusing to overwrite an earlier
run unless resuming it, and refusing to resume a run of a changed problem), runs
the missing jobs on an executor (:mod:`.executors`), writes each job's curves and
totals atomically the moment it finishes (:mod:`.storage`), then writes
``summary.json`` and the figures. A job that fails is reported and the others go
on; an interrupted run keeps every finished job for ``--resume``.

Example
-------
>>> import io, tempfile
>>> from cmab_milp.experiments.problem import parse_problem
>>> problem = parse_problem({
...     "space": {"kind": "Cardinality", "d": 4, "m": 2},
...     "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4]},
...     "policies": [{"name": "CUCB", "kind": "CUCB"}],
...     "run": {"horizon": 30, "seeds": 2},
... }, "demo.toml")
>>> summary = run_problem(problem, tempfile.mkdtemp(), jobs=1, plots=False, stream=io.StringIO())
>>> summary["policies"]["CUCB"]["queries"]
{'mean': 30.0, 'std': 0.0, 'min': 30.0, 'max': 30.0}
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .executors import open_executor
from .plots import PolicyCurves, save_figures
from .problem import Problem
from .progress import Progress, format_seconds, job_reporter
from .registry import load_plugins
from .storage import (
    CURVE_COLUMNS,
    FolderBusy,
    FolderError,
    contained,
    downsample,
    job_paths,
    lock_folder,
    read_curve,
    read_json,
    write_curve,
    write_json,
)

__all__ = [
    "METRICS",
    "JobsFailed",
    "RunError",
    "RunFailed",
    "RunInterrupted",
    "collect_curves",
    "run_job",
    "run_problem",
    "summarise",
]

#: Totals summarised per policy (contract section 6).
METRICS: tuple[str, ...] = ("regret", "queries", "rounds", "wall_seconds", "oracle_seconds")
#: Totals present only for some policies: runs with an approximate oracle or a declared ``alpha < 1``
#: (Algorithm 5) report the ``alpha_regret`` and the ``alpha`` it used (declared, or the oracle's proven ratio).
OPTIONAL_METRICS: tuple[str, ...] = ("alpha_regret", "alpha")


class RunError(RuntimeError):
    """A run that cannot start (a folder conflict) or that ended with failed jobs."""


class RunInterrupted(RunError):
    """The run was interrupted; finished jobs are on disk."""


class RunFailed(RunError):
    """The run started but did not finish: results could not be written, or the executor was lost."""


class JobsFailed(RunFailed):
    """Some jobs raised; the others finished and are on disk."""


@dataclass(frozen=True)
class Job:
    policy: str
    seed: int

    def __str__(self) -> str:
        return f"{self.policy} seed {self.seed}"


# ------------------------------------------------------------------ one job
def run_job(problem: Problem, policy: str, seed: int) -> dict[str, Any]:
    """Build the space, environment and policy afresh, simulate, and return curves and totals.

    Runs in a worker process: everything it needs is in the (picklable) problem.
    Errors are returned (``{"error": traceback}``), not raised, so that the
    parent can report them with the job's name.
    """
    import cmab_milp

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
            progress=job_reporter(str(Job(policy, seed))),  # rounds done, to the parent (None: no channel)
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
            {**note, "arms": [_json_label(a) for a in note["arms"]]} for note in result.info.get("extra_queries", ())
        ]
    except Exception:  # reported by the parent with the job's name; other jobs go on
        return {"error": traceback.format_exc()}
    return {"curve": curve, "totals": totals, "job_seconds": time.perf_counter() - started, "extra_queries": extra}


# --------------------------------------------------------------- the folder
def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    parts = [k for k in ("space", "environment", "policies") if old.get(k) != new.get(k)]
    old_run = dict(old.get("run", {}))
    if "rounds" in old_run:  # a folder written before [run] steps: the same number under its former name
        old_run.setdefault("steps", old_run.pop("rounds"))
    for key in ("horizon", "steps", "curve_points"):
        if old_run.get(key) != new["run"].get(key):
            parts.append(f"run.{key} ({old_run.get(key)} -> {new['run'].get(key)})")
    return parts


def _is_run(stored: Any) -> bool:
    return isinstance(stored, dict) and isinstance(stored.get("digest"), str) and "problem" in stored


def _check_folder(problem: Problem, out: Path, resume: bool) -> None:
    """Refuse a file, a folder holding other files, an earlier run (unless resuming), or a run of another problem."""
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is not a folder")
    stored = read_json(out / "problem.json")
    entries = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if entries and not _is_run(stored):
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise RunError(
            f"{out} is not empty and holds no cmab-milp run ({shown}); choose a new or empty folder for --out"
        )
    for name in ("runs", "panels"):
        if (out / name).is_symlink():
            raise RunError(f"{out / name} is a symbolic link: results are never written through a link")
    if stored is not None or (out / "runs").exists():
        if not resume:
            raise RunError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
        if stored is None:
            raise RunError(f"{out} holds results but no problem.json; cannot check they belong to this problem")
        if stored.get("digest") != problem.digest():
            changed = ", ".join(_differences(stored.get("problem", {}), problem.to_dict())) or "details"
            raise RunError(
                f"{out} holds a run of a different problem (changed: {changed}); "
                "resume only continues the same problem: choose another --out"
            )


def _write_problem(problem: Problem, out: Path) -> None:
    """The resolved problem, its digest and a copy of the problem file, in the results folder."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "problem.json", {"digest": problem.digest(), "problem": problem.to_dict(), "file": problem.file})
    source = Path(problem.file)
    if source.is_file():
        from .storage import atomic_write_text

        atomic_write_text(out / "problem.toml", source.read_text(encoding="utf-8"))


def _is_complete(out: Path, problem: Problem, job: Job) -> bool:
    csv_path, json_path = job_paths(out, job.policy, job.seed)
    record = read_json(json_path)
    return (
        isinstance(record, dict)
        and record.get("complete") is True
        and record.get("digest") == problem.digest()
        and csv_path.is_file()
    )


def _save_job(out: Path, problem: Problem, job: Job, outcome: dict[str, Any]) -> None:
    csv_path, json_path = job_paths(out, job.policy, job.seed)
    contained(out, csv_path)
    write_curve(csv_path, outcome["curve"])  # the curve first: the JSON marks the job complete
    spec = problem.policy(job.policy)
    write_json(
        json_path,
        {
            "policy": job.policy,
            "seed": job.seed,
            "kind": spec.kind,
            "oracle": spec.oracle,
            "horizon": _horizon_of(problem, job.policy),
            "steps": problem.steps,
            "digest": problem.digest(),
            "totals": outcome["totals"],
            "rows": len(outcome["curve"]["t"]),
            "job_seconds": outcome["job_seconds"],
            # queries beyond the schedule's, with the step and why (cmab_milp.policies.index)
            "extra_queries": outcome.get("extra_queries", []),
            "finished": _now(),
            "complete": True,
        },
    )


# ------------------------------------------------------------------ summary
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


def summarise(problem: Problem, out_dir: str | Path, run_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``'s content from the job files in ``out_dir`` (complete jobs of this problem only)."""
    out = Path(out_dir)
    arms = describe_arms(problem)
    policies: dict[str, Any] = {}
    info: dict[str, Any] = {}
    missing: list[str] = []
    not_requested: list[str] = []  # on_request policies never run here: not missing, just not asked for
    for spec in problem.policies:
        totals: dict[str, list[float]] = {metric: [] for metric in (*METRICS, *OPTIONAL_METRICS)}
        seeds = []
        done = [seed for seed in problem.seeds if _is_complete(out, problem, Job(spec.name, seed))]
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
            "horizon": _horizon_of(problem, spec.name),
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


def _horizon_of(problem: Problem, name: str) -> int | str:
    """The horizon a policy was told: T, or ``"unknown"`` (built with ``T=None``)."""
    T = problem.policy_horizon(name)
    return "unknown" if T is None else T


def _json_label(label: Any) -> Any:
    """A label as JSON data: an edge ``(u, v)`` becomes ``[u, v]``, other labels stay (or become strings)."""
    if isinstance(label, tuple):
        return [_json_label(x) for x in label]
    if isinstance(label, (str, int, float, bool)) or label is None:
        return label
    return str(label)


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
        out["arm_labels"] = [_json_label(x) for x in labels.display]
    root = space
    while getattr(root, "parent", None) is not None and not hasattr(root, "path_edges"):
        root = root.parent  # side rules wrap the graph space; a path is still a path of its graph
    if hasattr(root, "path_edges") and labels.custom is None:  # a path: its edges in the order travelled
        out["optimal_action"] = [_json_label(x) for x in root.path_edges(best)]
    else:
        out["optimal_action"] = [_json_label(x) for x in space.labels_of(best)]
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
            if _is_complete(out, problem, Job(spec.name, seed))
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


# ---------------------------------------------------------------------- run
def run_problem(
    problem: Problem,
    out_dir: str | Path,
    *,
    jobs: int | None = None,
    executor: str = "local",
    resume: bool = False,
    plots: bool = True,
    stream: TextIO | None = None,
    policies: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run every (policy, seed) job of ``problem`` into ``out_dir``; return the summary (:func:`_run_problem`).

    The folder is locked while the run writes into it (:func:`~.storage.lock_folder`): a second
    run or ``--resume`` on the same folder at the same time is refused with :class:`RunError`.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is not a folder")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        lock = lock_folder(out)
    except FolderBusy as exc:
        raise RunError(str(exc)) from None
    except OSError as exc:
        raise RunError(f"cannot write to --out {out}: {exc.strerror or exc}") from None
    try:
        return _run_problem(
            problem, out, jobs=jobs, executor=executor, resume=resume, plots=plots, stream=stream, policies=policies
        )
    except RunError:
        if created and not any(out.iterdir()):  # refused before anything was written: leave no folder
            out.rmdir()
        raise
    finally:
        if lock >= 0:
            os.close(lock)


def _run_problem(
    problem: Problem,
    out_dir: str | Path,
    *,
    jobs: int | None = None,
    executor: str = "local",
    resume: bool = False,
    plots: bool = True,
    stream: TextIO | None = None,
    policies: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run every (policy, seed) job of ``problem`` into ``out_dir``; return the summary.

    ``policies`` (names) runs only their jobs; the folder still belongs to the
    whole problem, so the others can be run later with ``resume``. Without
    ``policies``, entries marked ``on_request = true`` are left out (they run
    only when named).

    ``jobs`` workers (default: the number of cores) on the named ``executor``.
    With ``resume``, jobs whose results are already complete are skipped.
    Raises :class:`RunError` if the folder holds another run, if a job failed
    (after finishing the others), and :class:`RunInterrupted` on Ctrl-C.
    """
    stream = sys.stderr if stream is None else stream
    for warning in problem.warnings:
        stream.write(f"warning: {warning}\n")
    out = Path(out_dir)
    workers = jobs or os.cpu_count() or 1
    _check_folder(problem, out, resume)
    names = [spec.name for spec in problem.policies]
    by_default = [spec.name for spec in problem.policies if not spec.on_request]
    if policies is None and not by_default:
        raise RunError(f"every policy of {problem.file} runs on request only: name them with --policies NAME,...")
    chosen = by_default if policies is None else list(dict.fromkeys(policies))
    unknown = [name for name in chosen if name not in names]
    if unknown or not chosen:
        raise RunError(
            f"no policy named {', '.join(unknown) or '(none given)'} in {problem.file}; its policies: "
            f"{', '.join(names)}"
        )
    all_jobs = [Job(name, seed) for seed in problem.seeds for name in names if name in chosen]
    todo = [job for job in all_jobs if not (resume and _is_complete(out, problem, job))]
    skipped = len(all_jobs) - len(todo)
    try:
        runner = open_executor(executor, min(workers, max(len(todo), 1)))
    except (ValueError, ImportError) as exc:
        raise RunError(f"cannot start the executor {executor!r}: {exc}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
        _write_problem(problem, out)
    except OSError as exc:
        runner.close(cancel=True)
        raise RunError(f"cannot write to --out {out}: {exc.strerror or exc}") from None
    stream.write(
        f"{problem.file}: {len(problem.policies)} policies x {len(problem.seeds)} seeds, {problem.horizon_text}; "
        f"{len(todo)} jobs to run" + (f" ({skipped} already complete)" if skipped else "") + f" -> {out}\n"
    )
    left_out = [name for name in names if name not in chosen and problem.policy(name).on_request]
    if left_out and policies is None:
        stream.write(f"on request only (run them with --policies {','.join(left_out)}): {', '.join(left_out)}\n")
    started, clock = _now(), time.perf_counter()
    failures: list[str] = []
    interrupted = False
    broken: str | None = None  # why the run stopped early: results not writable, executor lost
    progress = Progress(len(todo), stream=stream, channel=getattr(runner, "progress_channel", None))
    try:
        for index, outcome in runner.run(run_job, [(problem, job.policy, job.seed) for job in todo]):
            job = todo[index]
            if "error" in outcome:
                failures.append(str(job))
                progress.note(f"job {job} failed:\n{outcome['error'].rstrip()}")
                progress.advance(f"{job} FAILED", label=str(job))
                continue
            try:
                _save_job(out, problem, job, outcome)
            except (OSError, FolderError) as exc:
                broken = f"cannot write the results of {job} to {out}: {getattr(exc, 'strerror', None) or exc}"
                break
            progress.advance(f"{job} ({outcome['job_seconds']:.1f} s)", label=str(job))
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # the executor itself failed (a lost Dask cluster, a dead pool); jobs never raise
        broken = f"the executor {executor!r} failed: {type(exc).__name__}: {exc}"
    finally:
        progress.close()
    try:
        runner.close(cancel=interrupted or broken is not None)
    except Exception as exc:  # closing a lost cluster may fail too; the run's outcome is already known
        broken = broken or f"the executor {executor!r} failed while closing: {exc}"
    run_info = {
        "started": started,
        "finished": _now(),
        "wall_seconds": time.perf_counter() - clock,
        "executor": executor,
        "workers": runner.workers,
        "jobs_run": len(todo) - len(failures),
        "jobs_resumed": skipped,
        "failed_jobs": failures,
        "interrupted": interrupted,
    }
    summary = summarise(problem, out, run_info)
    resume = f"finished jobs are saved, continue with --resume --out {out}"
    try:
        write_json(contained(out, out / "summary.json"), summary)
        if plots and summary["policies"] and broken is None:
            save_figures(collect_curves(problem, out), problem.panels, out, problem.title)
    except (OSError, FolderError) as exc:
        broken = broken or f"cannot write the summary or figures to {out}: {getattr(exc, 'strerror', None) or exc}"
    elapsed = format_seconds(run_info["wall_seconds"])
    if interrupted:
        raise RunInterrupted(
            f"interrupted after {elapsed}: {len(summary['missing_jobs'])} jobs not finished; " + resume
        )
    if broken is not None:
        raise RunFailed(f"{broken}; {resume}")
    if failures:
        raise JobsFailed(f"{len(failures)} job(s) failed: {', '.join(failures)}; other results are in {out}")
    stream.write(f"done in {elapsed}: {out / 'summary.json'}\n")
    return summary
