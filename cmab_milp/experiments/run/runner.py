"""Run a problem: one job per (policy, seed), results on disk as they finish, then summary and plots.

:func:`run_problem` prepares the results folder (refusing to overwrite an earlier
run unless resuming it, and refusing to resume a run of a changed problem), runs
the missing jobs (:mod:`.jobs`) on an executor (:mod:`.executors`), saves each
job's curves and totals atomically the moment it finishes, then writes
``summary.json`` (:mod:`.summary`) and the figures. A job that fails is reported and the others go
on; an interrupted run keeps every finished job for ``--resume`` and stops at once: its summary leaves out
the optimal action (one more solve) and it draws no figures (``cmab-milp plot DIR`` draws a partial run's).

Example
-------
>>> import io, tempfile
>>> from cmab_milp.experiments.problem.demo import demo_problem
>>> problem = demo_problem(horizon=30, seeds=2)
>>> summary = run_problem(problem, tempfile.mkdtemp(), jobs=1, plots=False, stream=io.StringIO())
>>> summary["policies"]["CUCB"]["queries"]
{'mean': 30.0, 'std': 0.0, 'min': 30.0, 'max': 30.0}
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..problem.problem_file import Problem
from ..report.plots import save_figures
from ..report.summary import METRICS, collect_curves, summarise
from .executors import open_executor
from .jobs import Job, is_complete, now, run_job, save_job
from .manifest import copy_data_files, version_differences, write_manifest
from .progress import Progress, ProgressOptions, format_seconds
from .storage import FolderBusy, FolderError, atomic_write_text, contained, lock_folder, read_json, write_json

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


class RunError(RuntimeError):
    """A run that cannot start (a folder conflict) or that ended with failed jobs."""


class RunInterrupted(RunError):
    """The run was interrupted; finished jobs are on disk."""


class RunFailed(RunError):
    """The run started but did not finish: results could not be written, or the executor was lost."""


class JobsFailed(RunFailed):
    """Some jobs raised; the others finished and are on disk."""


# --------------------------------------------------------------- the folder
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
    """The resolved problem, its digest, a copy of the problem file and of each data file it read, in the folder.

    With the data files beside it (:func:`~.manifest.copy_data_files`), ``out/problem.toml`` runs
    from the folder alone.
    """
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "problem.json", {"digest": problem.digest(), "problem": problem.to_dict(), "file": problem.file})
    source = Path(problem.file)
    if source.is_file() and (out / "problem.toml").resolve() != source.resolve():
        atomic_write_text(out / "problem.toml", source.read_text(encoding="utf-8"))
    copy_data_files(problem, out)


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
    progress: ProgressOptions | None = None,
) -> dict[str, Any]:
    """Run every (policy, seed) job of ``problem`` into ``out_dir``; return the summary (:func:`_run_problem`).

    ``progress`` says how often the running jobs' steps are reported (default :class:`~.progress.ProgressOptions`).
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
    every = ProgressOptions() if progress is None else progress
    request = _Request(jobs, executor, resume, plots, sys.stderr if stream is None else stream, policies, every)
    try:
        return _run_problem(problem, out, request)
    except RunError:
        if created and not any(out.iterdir()):  # refused before anything was written: leave no folder
            out.rmdir()
        raise
    finally:
        if lock >= 0:
            os.close(lock)


@dataclass(frozen=True)
class _Request:
    """The options of :func:`run_problem`, read by :func:`_run_problem` (defaults applied)."""

    jobs: int | None
    executor: str
    resume: bool
    plots: bool
    stream: TextIO
    policies: Sequence[str] | None
    progress: ProgressOptions


def _run_problem(problem: Problem, out: Path, request: _Request) -> dict[str, Any]:
    """Run every (policy, seed) job of ``problem`` into ``out`` with the options of ``request``; return the summary.

    ``policies`` (names) runs only their jobs; the folder still belongs to the
    whole problem, so the others can be run later with ``resume``. Without
    ``policies``, entries marked ``on_request = true`` are left out (they run
    only when named).

    ``jobs`` workers (default: the number of cores) on the named ``executor``.
    With ``resume``, jobs whose results are already complete are skipped.
    Raises :class:`RunError` if the folder holds another run, if a job failed
    (after finishing the others), and :class:`RunInterrupted` on Ctrl-C (and on SIGTERM under the command line).
    """
    stream, policies, executor, resume = request.stream, request.policies, request.executor, request.resume
    for warning in problem.warnings:
        stream.write(f"warning: {warning}\n")
    workers = request.jobs or os.cpu_count() or 1
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
    todo = [job for job in all_jobs if not (resume and is_complete(out, problem, job))]
    if resume:  # before any work: the versions the earlier runs were recorded with, where they differ
        drift = version_differences(out, problem)
        if drift:
            stream.write(
                f"note: {out}'s runs were recorded with other versions than this one's: {'; '.join(drift)}; "
                "resumed runs use this one's (the same seed gives the same numbers for the same versions)\n"
            )
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
    except FolderError as exc:
        runner.close(cancel=True)
        raise RunError(str(exc)) from None
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
    started, clock = now(), time.perf_counter()
    failures: list[str] = []
    saved = 0  # jobs of this run finished and written
    interrupted = False
    broken: str | None = None  # why the run stopped early: results not writable, executor lost
    every = request.progress
    channel = getattr(runner, "progress_channel", None)
    shown = Progress(len(todo), stream=stream, channel=channel, line_seconds=every.line_seconds)
    tasks = [(problem, job.policy, job.seed, every.report_seconds) for job in todo]
    try:
        for index, outcome in runner.run(run_job, tasks):
            job = todo[index]
            if "error" in outcome:
                failures.append(str(job))
                shown.note(f"job {job} failed:\n{outcome['error'].rstrip()}")
                shown.advance(f"{job} FAILED", label=str(job))
                continue
            try:
                save_job(out, problem, job, outcome)
            except (OSError, FolderError) as exc:
                broken = f"cannot write the results of {job} to {out}: {getattr(exc, 'strerror', None) or exc}"
                break
            saved += 1
            shown.advance(f"{job} ({outcome['job_seconds']:.1f} s)", label=str(job))
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # the executor itself failed (a lost Dask cluster, a dead pool); jobs never raise
        broken = f"the executor {executor!r} failed: {type(exc).__name__}: {exc}"
    finally:
        shown.close()
    try:
        runner.close(cancel=interrupted or broken is not None)
    except Exception as exc:  # closing a lost cluster may fail too; the run's outcome is already known
        broken = broken or f"the executor {executor!r} failed while closing: {exc}"
    run_info = {
        "started": started,
        "finished": now(),
        "wall_seconds": time.perf_counter() - clock,
        "executor": executor,
        "workers": runner.workers,
        "jobs_run": len(todo) - len(failures),
        "jobs_resumed": skipped,
        "failed_jobs": failures,
        "interrupted": interrupted,
    }
    summary = summarise(problem, out, run_info, optimum=not interrupted)  # stopped: no solve of the optimum
    continuing = f"finished jobs are saved, continue with --resume --out {out}"
    try:
        write_json(contained(out, out / "summary.json"), summary)
        write_manifest(problem, out)  # hashes of what the run wrote: cmab-milp verify tells edits apart
        if request.plots and summary["policies"] and broken is None and not interrupted:  # stopped: stop now
            save_figures(collect_curves(problem, out), problem.panels, out, problem.title)
    except (OSError, FolderError) as exc:
        broken = broken or f"cannot write the summary or figures to {out}: {getattr(exc, 'strerror', None) or exc}"
    elapsed = format_seconds(run_info["wall_seconds"])
    if interrupted:
        left = len(todo) - saved - len(failures)  # this run's jobs, not those of policies it was not asked for
        raise RunInterrupted(f"interrupted after {elapsed}: {left} of {len(todo)} jobs not finished; {continuing}")
    if broken is not None:
        raise RunFailed(f"{broken}; {continuing}")
    if failures:
        raise JobsFailed(f"{len(failures)} job(s) failed: {', '.join(failures)}; other results are in {out}")
    stream.write(f"done in {elapsed}: {out / 'summary.json'}\n")
    return summary
