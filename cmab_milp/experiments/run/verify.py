"""``cmab-milp verify RESULTS`` and :func:`verify`: re-run a results folder and say, per run, identical or where not.

The folder is read, never written: the problem and seeds it records are run again
in memory (each re-run's curve is written to a temporary folder elsewhere and read
back, as the run wrote it), and each run is compared with its re-run bit for bit
(:mod:`.verify_report`). Before any work the folder itself is checked:

* ``manifest.json`` (:mod:`.manifest`): a file the run wrote that was edited, cut
  short or deleted is named. An edited ``problem.json`` or data file leaves nothing
  to re-run that can be trusted: :class:`VerifyError` (exit 2).
* ``summary.json`` against its runs (recomputed here), the seed list against the
  manifest's and the summary's, files under ``runs/`` that no run of the problem wrote.
* Each run's record: complete, of this problem (digest), its curve whole (rows,
  hash) and readable.

A folder written before manifests and recorded versions existed is still checked
(its runs against re-runs, its summary against its runs), with a note on what could
not be; its data files are read from beside the original problem file when the
folder has no copy (checked against their recorded SHA-256).

Example
-------
>>> import io, tempfile
>>> from cmab_milp.experiments.problem.demo import demo_problem
>>> from cmab_milp.experiments.run.runner import run_problem
>>> problem = demo_problem(horizon=40, seeds=2, oracle="enumerate")
>>> out = tempfile.mkdtemp()
>>> _ = run_problem(problem, out, jobs=1, plots=False, stream=io.StringIO())
>>> report = verify(out, jobs=1)
>>> report.exit_code, [str(run) for run in report.runs]
(0, ['CUCB seed 0: identical', 'CUCB seed 1: identical'])
>>> verify(out, seeds=[5])
Traceback (most recent call last):
...
ValueError: seed 5 is not among the folder's seeds [0, 1]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

from cmab_milp.provenance import provenance, software_differences

from ..problem.problem_file import Problem, parse_problem
from ..problem.schema import ProblemError
from ..report.summary import summarise
from .command_help import described
from .executors import open_executor
from .jobs import Job, run_job
from .manifest import MANIFEST, changed_files, data_files, read_manifest, recorded_provenance, sha256_file
from .storage import FolderError, job_paths, read_curve, read_json, write_curve
from .verify_report import RunCheck, VerifyReport, extras_difference, first_difference, totals_difference

__all__ = ["VerifyError", "add_command", "verify"]

#: Record fields that must agree with the problem for the run to be the problem's.
_RECORD_FIELDS = ("kind", "oracle", "steps")
_RUN_FILE = re.compile(r"seed_(\d+)\.(csv|json)")


class VerifyError(FolderError):
    """A results folder that cannot be checked (exit 2): not a run, its problem edited, a data file gone."""


def verify(
    path: str | os.PathLike,
    seeds: Sequence[int] | None = None,
    policies: Sequence[str] | None = None,
    *,
    jobs: int = 1,
    executor: str = "local",
    stream: TextIO | None = None,
) -> VerifyReport:
    """Re-run the runs recorded in the results folder ``path`` and compare each with its recorded numbers.

    ``seeds`` / ``policies`` check a subset (each must be the folder's); ``jobs`` re-runs at once on
    ``executor`` (as ``cmab-milp run``). ``stream`` gets the versions and a line per run as they finish.
    Returns a :class:`~.verify_report.VerifyReport` (``print`` it; ``.exit_code``). Raises
    :class:`VerifyError` for a folder that cannot be checked and ``ValueError`` for bad arguments.
    Nothing is written into ``path``.

    Examples
    --------
    >>> import io, tempfile
    >>> import cmab_milp as cm
    >>> from cmab_milp.experiments import run_problem
    >>> from cmab_milp.experiments.problem.demo import demo_problem
    >>> problem = demo_problem(horizon=40, seeds=1, oracle="enumerate")
    >>> out = tempfile.mkdtemp()
    >>> _ = run_problem(problem, out, jobs=1, plots=False, stream=io.StringIO())
    >>> report = cm.verify(out)
    >>> report.exit_code, [str(run) for run in report.runs]
    (0, ['CUCB seed 0: identical'])
    """
    folder = Path(path)
    if not folder.is_dir():
        raise VerifyError(f"{folder} is not a folder")
    lock = _shared_lock(folder)
    try:
        return _verify(folder, seeds, policies, jobs, executor, stream)
    finally:
        if lock >= 0:
            os.close(lock)


def _shared_lock(folder: Path) -> int:
    """A shared lock on the folder: no run writes into it meanwhile, other checks may read it (writes nothing).

    Returns the descriptor to close (-1 where locks are not available or the folder cannot be opened).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return -1
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise VerifyError(f"{folder} is in use by a cmab-milp run: check it once the run ends") from None
    except OSError:
        return fd
    return fd


def _verify(
    folder: Path,
    seeds: Sequence[int] | None,
    policies: Sequence[str] | None,
    jobs: int,
    executor: str,
    stream: TextIO | None,
) -> VerifyReport:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    report = VerifyReport(str(folder), [], here=provenance())
    manifest = _read_manifest(folder)
    changed = changed_files(folder, manifest) if manifest is not None else {}
    problem, digest_ok = _stored_problem(folder, manifest, changed, report)
    chosen = _chosen(problem, folder, manifest, seeds, policies)
    _check_folder_files(folder, problem, manifest, changed, report, digest_ok)
    checks: dict[Job, RunCheck] = {}
    todo: list[Job] = []
    for job in chosen:
        missing = _missing(folder, job, manifest)
        if missing is not None:
            checks[job] = missing
        else:
            todo.append(job)
    say = stream.write if stream is not None else (lambda text: None)
    recorded = {job: recorded_provenance(folder, problem, job) for job in todo}
    drift = sorted({d for job in todo for d in software_differences(recorded[job], report.here)})
    if drift:
        report.notes.append(f"versions differ from the recorded ones: {'; '.join(drift)}")
    say(f"verify {folder}: {len(todo)} run{'s' * (len(todo) != 1)} to re-run\n")
    if drift:  # before any work
        say(f"versions that differ from the recorded ones: {'; '.join(drift)}\n")
    with tempfile.TemporaryDirectory(prefix="cmab-milp-verify-") as scratch:
        if todo:
            with open_executor(executor, min(jobs, len(todo))) as runner:
                tasks = [(problem, job.policy, job.seed) for job in todo]
                for index, outcome in runner.run(run_job, tasks):
                    job = todo[index]
                    checks[job] = _compare(folder, job, outcome, changed, recorded[job], Path(scratch), problem)
                    say(f"{checks[job]}\n")
    report.runs = [checks[job] for job in chosen]
    return report


# ----------------------------------------------------------------- the folder
def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return read_manifest(folder)
    except FolderError as exc:
        raise VerifyError(f"cannot be checked: {exc}") from None


def _stored_problem(
    folder: Path, manifest: dict[str, Any] | None, changed: dict[str, str], report: VerifyReport
) -> tuple[Problem, bool]:
    """The problem ``problem.json`` records, rebuilt with its data files (the folder's copies first)."""
    if "problem.json" in changed:
        raise VerifyError(
            f"cannot be checked: {folder}/problem.json was {changed['problem.json']} after the run "
            f"(its sha256 differs from {MANIFEST}): the problem to re-run is not the one recorded"
        )
    stored = read_json(folder / "problem.json")
    if not isinstance(stored, dict) or not isinstance(stored.get("problem"), dict):
        raise VerifyError(
            f"cannot be checked: {folder} holds no readable problem.json (not a cmab-milp results folder)"
        )
    files = data_files(
        SimpleNamespace(space=stored["problem"].get("space"), environment=stored["problem"].get("environment"))
    )
    for data in files:
        if str(data.relative) in changed:
            raise VerifyError(
                f"cannot be checked: data file {data.name} was {changed[str(data.relative)]} after the run "
                f"(its sha256 differs from {MANIFEST})"
            )
    file = folder / "problem.toml"  # data file names are relative to the problem file's folder: here, the folder
    missing = [d.name for d in files if not (folder / d.relative).is_file()]
    original = stored.get("file")
    if missing:
        beside = Path(original).resolve().parent if isinstance(original, str) else None
        if beside is None or any(not (beside / d.relative).is_file() for d in files):
            raise VerifyError(
                f"cannot be checked: data file {missing[0]} is not in {folder} (folders written before they held "
                f"their data files record only its sha256), nor beside the original problem file {original}"
            )
        file = Path(original)
        report.notes.append(
            f"data files read from beside the original problem file {original} (checked against their sha256): "
            "the folder holds no copy"
        )
    try:
        problem = parse_problem(stored["problem"], str(file))
    except ProblemError as exc:
        first = str(exc).splitlines()[0]
        raise VerifyError(f"cannot be checked: the problem in problem.json does not build here: {first}") from None
    digest_ok = problem.digest() == stored.get("digest")
    if not digest_ok:
        why = (
            "written by a version whose problem format differs"
            if manifest is not None and "problem.json" not in changed
            else "edited, or written by a version whose problem format differs"
        )
        report.notes.append(
            f"problem.json's digest {stored.get('digest')!r} is not its problem's here ({problem.digest()}): {why}"
        )
    return problem, digest_ok


def _chosen(
    problem: Problem,
    folder: Path,
    manifest: dict[str, Any] | None,
    seeds: Sequence[int] | None,
    policies: Sequence[str] | None,
) -> list[Job]:
    """The runs to check: the given subset, or every run the folder holds or should hold."""
    names = [spec.name for spec in problem.policies]
    if policies is not None:
        policies = list(dict.fromkeys(policies))
        if not policies:
            raise ValueError("policies: name at least one policy")
        for name in policies:
            if name not in names:
                raise ValueError(f"no policy named {name!r} in the folder's problem; its policies: {', '.join(names)}")
    if seeds is not None:
        seeds = list(dict.fromkeys(seeds))
        if not seeds:
            raise ValueError("seeds: give at least one seed")
        for seed in seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or seed not in problem.seeds:
                raise ValueError(f"seed {seed!r} is not among the folder's seeds {problem.seeds}")
    listed = {(p, s) for p, s in manifest["jobs"]} if manifest is not None else set()
    out = []
    for spec in problem.policies:
        if policies is not None and spec.name not in policies:
            continue
        held = [s for s in problem.seeds if job_paths(folder, spec.name, s)[1].exists() or (spec.name, s) in listed]
        if policies is None and spec.on_request and not held:
            continue  # run only when named: not missing
        out += [Job(spec.name, s) for s in problem.seeds if seeds is None or s in seeds]
    return out


def _check_folder_files(
    folder: Path,
    problem: Problem,
    manifest: dict[str, Any] | None,
    changed: dict[str, str],
    report: VerifyReport,
    digest_ok: bool,
) -> None:
    """Folder-level findings: the summary, the seed list, files not written by a run, the problem file's copy."""
    if manifest is None:
        if any(isinstance((read_json(p) or {}).get("provenance"), dict) for p in folder.glob("runs/*/seed_*.json")):
            report.problems.append(f"{MANIFEST} is missing, though its runs were written by a version that writes one")
        else:
            report.notes.append(
                f"no {MANIFEST} (written by an older cmab_milp): edits are found only by the re-runs and the summary"
            )
    else:
        if manifest.get("seeds") != problem.seeds:
            report.problems.append(
                f"the seed list changed: {MANIFEST} records {manifest.get('seeds')}, problem.json {problem.seeds}"
            )
        for name in ("problem.toml", "summary.json"):
            if name in changed:
                report.problems.append(f"{name} was {changed[name]} after the run (sha256 differs from {MANIFEST})")
    known = {str(p.relative_to(folder)) for job in _all_jobs(problem) for p in job_paths(folder, job.policy, job.seed)}
    listed = set(manifest["files"]) if manifest is not None else known
    for path in sorted(folder.glob("runs/**/*")):
        name = path.relative_to(folder).as_posix()
        if path.is_file() and not path.name.startswith(".") and (name not in known or name not in listed):
            report.problems.append(f"{name} is not a file the recorded run wrote")
    if "summary.json" not in changed and digest_ok:
        report.problems += _summary_problems(folder, problem)


def _all_jobs(problem: Problem) -> list[Job]:
    return [Job(spec.name, seed) for spec in problem.policies for seed in problem.seeds]


def _summary_problems(folder: Path, problem: Problem) -> list[str]:
    """``summary.json`` against its runs: per policy and statistic, recomputed here (relative 1e-12)."""
    stored = read_json(folder / "summary.json")
    if stored is None:
        return []  # an interrupted run before its summary; the runs are still checked
    if not isinstance(stored, dict) or not isinstance(stored.get("policies"), dict):
        return ["summary.json is not a summary of runs"]
    problems = []
    seeds = (stored.get("problem") or {}).get("seeds") if isinstance(stored.get("problem"), dict) else None
    if seeds is not None and seeds != problem.seeds:
        problems.append(f"the seed list changed: summary.json records {seeds}, problem.json {problem.seeds}")
    fresh = summarise(problem, folder)
    names = sorted(set(stored["policies"]) | set(fresh["policies"]))
    for name in names:
        mine, theirs = stored["policies"].get(name), fresh["policies"].get(name)
        if not isinstance(mine, dict) or theirs is None:
            problems.append(
                f"summary.json does not match its runs: policy {name} is only in the "
                + ("runs" if mine is None else "summary")
            )
            continue
        mismatch = next(
            (
                f"summary.json does not match its runs: {name} {metric} {stat} is {value!r}, the runs give "
                f"{(theirs.get(metric) or {}).get(stat)!r}"
                for metric, stats in mine.items()
                for stat, value in (stats.items() if isinstance(stats, dict) else [("value", stats)])
                if not _close(value, (theirs.get(metric) or {}).get(stat))
            ),
            None,
        )
        if mismatch is not None:  # the first statistic that differs, per policy
            problems.append(mismatch)
    return problems[:3]


def _close(a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    return numbers and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


# -------------------------------------------------------------------- a run
def _missing(folder: Path, job: Job, manifest: dict[str, Any] | None) -> RunCheck | None:
    """A run with nothing to compare: no complete record, or no curve; ``None`` when it can be compared."""
    csv_path, json_path = job_paths(folder, job.policy, job.seed)
    record = read_json(json_path)
    listed = manifest is not None and [job.policy, job.seed] in manifest["jobs"]
    if not json_path.exists() or (isinstance(record, dict) and record.get("complete") is not True):
        why = f"deleted after the run (listed in {MANIFEST})" if listed else "no complete run in the folder"
        return RunCheck(job.policy, job.seed, "missing", why)
    if not csv_path.exists():
        return RunCheck(job.policy, job.seed, "missing", f"{csv_path.relative_to(folder)} is missing")
    return None


def _compare(
    folder: Path,
    job: Job,
    outcome: dict[str, Any],
    changed: dict[str, str],
    recorded: dict[str, Any] | None,
    scratch: Path,
    problem: Problem,
) -> RunCheck:
    """The run's recorded numbers against its re-run ``outcome``: identical, or the first difference."""
    csv_path, json_path = job_paths(folder, job.policy, job.seed)
    names = [p.relative_to(folder).as_posix() for p in (csv_path, json_path)]
    record = read_json(json_path)

    def check(status: str, detail: str = "") -> RunCheck:
        return RunCheck(job.policy, job.seed, status, detail, recorded, outcome.get("provenance"))

    if not isinstance(record, dict) or not isinstance(record.get("totals"), dict):
        return check("edited", f"{names[1]} is damaged (not a run record)")
    if "error" in outcome:
        return check("failed", "the re-run failed here: " + outcome["error"].strip().splitlines()[-1])
    edited = [f"{name} was {changed[name]} after the run" for name in names if name in changed]
    try:
        curve = read_curve(csv_path)
    except FolderError as exc:
        return check("truncated", f"{names[0]} is cut short or damaged: {str(exc).split(': ', 1)[-1]}")
    rows = record.get("rows")
    if isinstance(rows, int) and len(curve["t"]) < rows:
        return check("truncated", f"{names[0]} has {len(curve['t'])} of its {rows} rows")
    rerun = scratch / f"{job.policy}-{job.seed}.csv"
    write_curve(rerun, outcome["curve"])  # as the run writes it, read back as the folder's file is
    fresh = read_curve(rerun)
    difference = (
        first_difference(curve, fresh)
        or totals_difference(record["totals"], outcome["totals"])
        or extras_difference(record.get("extra_queries", []), outcome.get("extra_queries", []))
    )
    spec = problem.policy(job.policy)
    expected = {"kind": spec.kind, "oracle": spec.oracle, "steps": problem.steps}
    wrong = [key for key in _RECORD_FIELDS if key in record and record[key] != expected[key]]
    sha = record.get("curve_sha256")
    if not edited and isinstance(sha, str) and sha != sha256_file(csv_path):
        edited.append(f"{names[0]} was edited after the run (sha256 differs from {names[1]}'s)")
    if wrong:
        edited.append(f"{names[1]} says {wrong[0]} = {record[wrong[0]]!r}, problem.json {expected[wrong[0]]!r}")
    if edited:
        return check("edited", "; ".join(edited) + "; against the re-run: " + (difference or "the same numbers"))
    if difference is not None:
        drift = software_differences(recorded, outcome.get("provenance") or {"software": {}})
        return check("differs", difference + (f"; versions differ: {', '.join(drift)}" if drift else ""))
    return check("identical")


# ---------------------------------------------------------------- command line
def add_command(sub: Any) -> None:
    """Add ``verify`` to the ``cmab-milp`` subcommands (an ``argparse`` subparsers object).

    Its description (``cmab-milp verify --help``): re-run the problem and seeds a results folder records
    (nothing is written into it) and report per run: identical, or the first step and field that differ.
    Exit 0 all identical, 1 any run differs (or the folder was edited, or is incomplete), 2 the folder
    cannot be checked.
    """
    about = "re-run a results folder and check its numbers are reproduced bit for bit"
    p = sub.add_parser("verify", help=about, description=described(add_command))
    p.add_argument("results", help="results folder written by 'cmab-milp run'")
    p.add_argument("--seeds", metavar="K,...", help="check only these seeds (comma-separated)")
    p.add_argument("--policies", metavar="NAME,...", help="check only these policies (comma-separated)")
    p.add_argument("--jobs", type=int, default=1, help="re-runs at once (default 1)")
    p.add_argument("--executor", default="local", help="where re-runs run: local (default), serial, dask://HOST:PORT")
    p.set_defaults(handler=run_command)


def _split(text: str | None, what: str, convert: Any) -> list | None:
    if text is None:
        return None
    items = [part.strip() for part in text.split(",") if part.strip()]
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise ValueError(f"--{what}: expected comma-separated {what}, got {text!r}") from None


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``verify``: prints the per-run table; 0 identical, 1 differs or edited, 2 cannot be checked."""
    try:
        seeds = _split(args.seeds, "seeds", int)
        policies = _split(args.policies, "policies", str)
        report = verify(args.results, seeds, policies, jobs=args.jobs, executor=args.executor, stream=sys.stderr)
    except VerifyError as exc:
        sys.stderr.write(f"cmab-milp: verify: {exc}\n")
        return 2
    except ValueError as exc:
        sys.stderr.write(f"cmab-milp: error: {exc}\n")
        return 2
    print(report)
    return report.exit_code
