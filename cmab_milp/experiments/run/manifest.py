"""A results folder that stands alone and shows its edits: its data files copied in, and ``manifest.json``.

**Data files.** A problem file may read data files (``cov = { file = "cov.npy" }``,
``factors = { file = ... }``); the stored problem keeps each one's name and SHA-256
(any table of the problem holding both ``file`` and ``sha256``, :func:`data_files`).
:func:`copy_data_files` copies each into the results folder at the same path
relative to the folder as it had to the problem file, after checking its hash, so
that ``RESULTS/problem.toml`` reads them from the folder: ``cmab-milp run
RESULTS/problem.toml`` and ``cmab-milp verify RESULTS`` work from the folder alone,
on another machine.

**The manifest.** ``manifest.json``, written atomically at the end of every run
(also an interrupted one, and rewritten by ``--resume``)::

    {"format": "cmab_milp.results", "version": 1, "written": "<UTC time>",
     "provenance": {...},            # versions and machine of the process that wrote it
     "digest": "<problem digest>", "seeds": [0, 1, ...],
     "jobs": [["CUCB", 0], ...],     # the complete (policy, seed) runs
     "files": {"problem.json": "<sha256>", "runs/CUCB/seed_0.csv": "<sha256>", ...}}

``files`` holds every file the run wrote that carries numbers or the problem:
``problem.toml``, ``problem.json``, the data files, each complete run's CSV and
JSON, and ``summary.json``. Figures are views of the runs (``cmab-milp plot``
redraws them) and are not listed. The hashes tell an edited, truncated or deleted
file from the one the run wrote; they are not a signature (whoever edits a file can
edit the manifest too): the check that counts is ``verify``'s re-run.

Example
-------
>>> import tempfile
>>> out = Path(tempfile.mkdtemp())
>>> _ = (out / "problem.json").write_text("{}")
>>> files = listed_files(out, ["problem.json", "summary.json"])
>>> list(files)
['problem.json']
>>> changed_files(out, {"files": files})
{}
>>> _ = (out / "problem.json").write_text("{ }")
>>> changed_files(out, {"files": files})
{'problem.json': 'edited'}
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..problem.problem_file import Problem
from .jobs import Job, is_complete, now
from .storage import FolderError, atomic_target, contained, job_paths, read_json, write_json

__all__ = [
    "MANIFEST",
    "DataFile",
    "changed_files",
    "copy_data_files",
    "data_files",
    "listed_files",
    "read_manifest",
    "sha256_file",
    "write_manifest",
]

#: The manifest's file name in a results folder.
MANIFEST = "manifest.json"
_FORMAT = "cmab_milp.results"
_VERSION = 1
#: Names the results folder uses itself: a data file may not be copied over them.
_RESERVED = ("runs", "panels", "problem.toml", "problem.json", "summary.json", MANIFEST, "figure.png")


@dataclass(frozen=True)
class DataFile:
    """A data file the problem read: its name relative to the problem file's folder, and its SHA-256."""

    name: str
    sha256: str

    @property
    def relative(self) -> PurePosixPath:
        """The name as a relative POSIX path (backslashes read as separators)."""
        return PurePosixPath(self.name.replace("\\", "/"))


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def data_files(problem: Problem) -> list[DataFile]:
    """Every data file the problem read: each table of its space or environment with ``file`` and ``sha256``.

    >>> from types import SimpleNamespace
    >>> fake = SimpleNamespace(space={}, environment={"cov": {"file": "cov.npy", "sha256": "ab", "diagonal": 1},
    ...                                                "corr": {"factors": {"file": "f.csv", "sha256": "cd"}}})
    >>> [f.name for f in data_files(fake)]
    ['cov.npy', 'f.csv']
    """
    found: dict[str, DataFile] = {}
    todo: list[Any] = [problem.space, problem.environment]
    while todo:
        value = todo.pop(0)
        if isinstance(value, dict):
            name, digest = value.get("file"), value.get("sha256")
            if isinstance(name, str) and isinstance(digest, str):
                found.setdefault(name, DataFile(name, digest))
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return list(found.values())


def copy_data_files(problem: Problem, out: Path) -> list[DataFile]:
    """Copy the problem's data files into ``out`` (same relative paths), each checked against its SHA-256.

    A file already in ``out`` with the right hash is left as it is (a resumed run, or a
    problem run from its own results folder). Raises :class:`~.storage.FolderError` for a
    data file whose name would land on the folder's own files, that is missing, or that
    changed since the problem was read.
    """
    base = Path(problem.file).resolve().parent
    files = data_files(problem)
    for data in files:
        relative = data.relative
        if relative.parts[0] in _RESERVED:
            raise FolderError(
                f"data file {data.name!r} would be copied onto the results folder's own {relative.parts[0]}: "
                "rename it (or move it to another sub-folder)"
            )
        target = contained(out, out.joinpath(*relative.parts))
        if target.is_file() and sha256_file(target) == data.sha256:
            continue
        source = base.joinpath(*relative.parts)
        if not source.is_file():
            raise FolderError(f"data file {data.name!r} is no longer beside {problem.file}: cannot copy it")
        with atomic_target(target) as tmp:
            shutil.copyfile(source, tmp)
            if sha256_file(tmp) != data.sha256:
                raise FolderError(f"data file {data.name!r} changed since {problem.file} was read: run it again")
    return files


def listed_files(out: Path, names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` for those of ``names`` (relative to ``out``) that are files."""
    return {name: sha256_file(out / name) for name in names if (out / name).is_file()}


def write_manifest(problem: Problem, out: Path) -> None:
    """Write ``out/manifest.json`` (module docstring) for the run of ``problem`` in ``out``, atomically."""
    from cmab_milp.provenance import provenance

    jobs = [Job(spec.name, seed) for spec in problem.policies for seed in problem.seeds]
    complete = [job for job in jobs if is_complete(out, problem, job)]
    names = ["problem.toml", "problem.json", *(str(f.relative) for f in data_files(problem))]
    for job in complete:
        names += [p.relative_to(out).as_posix() for p in job_paths(out, job.policy, job.seed)]
    names.append("summary.json")
    write_json(
        contained(out, out / MANIFEST),
        {
            "format": _FORMAT,
            "version": _VERSION,
            "written": now(),
            "provenance": provenance(),
            "digest": problem.digest(),
            "seeds": list(problem.seeds),
            "jobs": [[job.policy, job.seed] for job in complete],
            "files": listed_files(out, names),
        },
    )


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The folder's manifest; ``None`` if it has none (written before manifests); ``FolderError`` if damaged."""
    path = out / MANIFEST
    if not path.exists():
        return None
    manifest = read_json(path)
    ok = (
        isinstance(manifest, dict)
        and manifest.get("format") == _FORMAT
        and isinstance(manifest.get("files"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in manifest["files"].items())
        and isinstance(manifest.get("seeds"), list)
        and isinstance(manifest.get("jobs"), list)
        and all(
            isinstance(job, list) and len(job) == 2 and isinstance(job[0], str) and type(job[1]) is int
            for job in manifest["jobs"]
        )
    )
    if not ok:
        raise FolderError(f"{path} is damaged or not a cmab_milp manifest")
    if manifest.get("version") != _VERSION:
        raise FolderError(f"{path} has manifest version {manifest.get('version')!r:.20}; this cmab_milp reads 1")
    return manifest


def changed_files(out: Path, manifest: dict[str, Any]) -> dict[str, str]:
    """``{name: "missing" | "edited"}`` for each file the manifest lists that is gone or has other bytes."""
    changed = {}
    for name, digest in manifest["files"].items():
        path = out / name
        if ".." in PurePosixPath(name).parts or PurePosixPath(name).is_absolute():
            changed[name] = "edited"  # a manifest naming a path outside the folder was not written by a run
        elif not path.is_file():
            changed[name] = "missing"
        elif sha256_file(path) != digest:
            changed[name] = "edited"
    return changed


def recorded_provenance(out: Path, problem: Problem, job: Job) -> dict[str, Any] | None:
    """The versions and machine recorded with ``job``'s run in ``out`` (``None`` when not recorded).

    A run written before runs recorded them falls back on ``summary.json``'s ``versions``
    (the library's and numpy's versions of the last run that wrote the summary, no machine).
    """
    record = read_json(job_paths(out, job.policy, job.seed)[1])
    if isinstance(record, dict) and isinstance(record.get("provenance"), dict):
        return record["provenance"]
    summary = read_json(out / "summary.json")
    versions = summary.get("versions") if isinstance(summary, dict) else None
    if isinstance(versions, dict):
        return {"software": {k: v for k, v in versions.items() if k != "platform"}, "from": "summary.json"}
    return None


def version_differences(out: Path, problem: Problem) -> list[str]:
    """What differs between the versions the complete runs in ``out`` were recorded with and this process's.

    One line per difference (``"numpy 2.3.1 -> 2.4.6 (2 of 4 runs)"``), and a line when some runs
    recorded no versions; ``[]`` when every run was recorded with this very software.
    """
    from cmab_milp.provenance import provenance, software_differences

    here = provenance()
    jobs = [Job(s.name, seed) for s in problem.policies for seed in problem.seeds]
    complete = [job for job in jobs if is_complete(out, problem, job)]
    counts: dict[str, int] = {}
    unrecorded = 0
    for job in complete:
        recorded = recorded_provenance(out, problem, job)
        if recorded is None:
            unrecorded += 1
        for line in software_differences(recorded, here):
            counts[line] = counts.get(line, 0) + 1
    lines = [f"{line} ({n} of {len(complete)} runs)" for line, n in counts.items()]
    if unrecorded:
        lines.append(f"{unrecorded} of {len(complete)} runs recorded no versions (written by an older cmab_milp)")
    return lines
