"""The results folder: where each file lives, atomic writes, and reading results back.

Layout of ``DIR`` (one run of one problem file)::

    problem.toml                  the problem file as given
    problem.json                  the resolved problem (drawn values, overrides) and its digest
    <data files>                  each data file the problem read (cov.npy, ...), at its path relative
                                  to the problem file: the folder runs and verifies alone (.manifest)
    runs/<policy>/seed_<k>.csv    one job's curves: t, regret, queries, rounds, runtime, oracle_runtime
    runs/<policy>/seed_<k>.json   its totals, the curve's SHA-256, versions and machine (provenance);
                                  written last, so it marks the job complete
    summary.json                  mean / std over seeds per policy (contract section 6)
    manifest.json                 SHA-256 of every file above but the figures (.manifest); written last
    figure.png, panels/*.png      plots

The run writing into the folder holds a lock on it (:func:`lock_folder`).
Every file is written to a temporary file in the same folder and moved into
place with :func:`os.replace`, so an interrupted run never leaves a half-written
file that looks finished.

Example
-------
>>> import tempfile, numpy as np
>>> folder = tempfile.mkdtemp()
>>> curve = {name: np.arange(1.0, 4.0) for name in CURVE_COLUMNS}
>>> len(write_curve(Path(folder) / "c.csv", curve))  # its SHA-256, kept in the run's record
64
>>> read_curve(Path(folder) / "c.csv")["regret"].tolist()
[1.0, 2.0, 3.0]
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ...untrusted_limits import check_json_depth

__all__ = [
    "CURVE_COLUMNS",
    "FolderError",
    "atomic_target",
    "atomic_write_text",
    "contained",
    "downsample",
    "job_paths",
    "lock_folder",
    "read_curve",
    "read_json",
    "write_curve",
    "write_json",
]

#: Columns of a job's curve CSV, in order.
CURVE_COLUMNS: tuple[str, ...] = ("t", "regret", "queries", "rounds", "runtime", "oracle_runtime")
_INTEGER_COLUMNS = {"t", "queries", "rounds"}


class FolderError(ValueError):
    """A results folder that cannot be used: a corrupt file, or a path leading out of the folder."""


def contained(root: str | Path, path: str | Path) -> Path:
    """``path`` if writing it stays inside ``root``: no folder between them is a symbolic link.

    Results are never written through a link that may lead out of the folder.

    >>> import tempfile, os
    >>> root = Path(tempfile.mkdtemp())
    >>> contained(root, root / "panels" / "a.png") == root / "panels" / "a.png"
    True
    >>> os.symlink(tempfile.mkdtemp(), root / "panels")
    >>> contained(root, root / "panels" / "a.png")
    Traceback (most recent call last):
    ...
    cmab_milp.experiments.run.storage.FolderError: refusing to write panels/a.png: panels is a symbolic link
    """
    root, path = Path(root), Path(path)
    relative = path.relative_to(root)
    current = root
    for part in relative.parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise FolderError(f"refusing to write {relative}: {current.relative_to(root)} is a symbolic link")
    return path


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; moved onto ``path`` (``os.replace``) if the block succeeds.

    The file gets the usual permissions (``0o666`` less the umask), not ``mkstemp``'s private ``0o600``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    with atomic_target(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_json(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def read_json(path: str | Path) -> Any:
    """Parsed JSON, or ``None`` if the file is missing, unreadable or nested deeper than any file of a run.

    The depth is scanned first (:func:`~cmab_milp.untrusted_limits.check_json_depth`): ``json.loads``
    recurses once per level, and a results folder is untrusted input.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
        check_json_depth(text, what=str(path))
        return json.loads(text)
    except (OSError, ValueError):
        return None


def job_paths(out_dir: str | Path, policy: str, seed: int) -> tuple[Path, Path]:
    """``(curve CSV, totals JSON)`` of the job (policy, seed)."""
    folder = Path(out_dir) / "runs" / policy
    return folder / f"seed_{seed}.csv", folder / f"seed_{seed}.json"


def downsample(t: np.ndarray, points: int) -> np.ndarray:
    """Indices of at most ``points`` entries of ``t``, log-spaced (as ``simulate`` records), keeping both ends.

    >>> downsample(np.arange(1, 11), 4).tolist()
    [0, 1, 4, 9]
    >>> len(downsample(np.arange(1, 100_001), 1000)) <= 1000
    True
    """
    n = len(t)
    if n <= points:
        return np.arange(n)
    return np.unique(np.geomspace(1, n, points).round().astype(np.int64) - 1)


def write_curve(path: str | Path, curve: dict[str, np.ndarray]) -> str:
    """A job's curves as CSV (integers exact, floats with 17 significant digits), atomically; returns its SHA-256."""
    columns = [np.asarray(curve[name]) for name in CURVE_COLUMNS]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CURVE_COLUMNS)
    for row in zip(*columns, strict=True):
        writer.writerow(
            int(v) if name in _INTEGER_COLUMNS else repr(float(v)) for name, v in zip(CURVE_COLUMNS, row, strict=True)
        )
    text = buffer.getvalue()
    atomic_write_text(path, text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_curve(path: str | Path) -> dict[str, np.ndarray]:
    """The columns of a curve CSV as float arrays (``t``, ``queries``, ``rounds`` as int)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise FolderError(f"{path}: cannot read the curve file ({exc})") from None
    if not rows or tuple(rows[0]) != CURVE_COLUMNS:
        found = rows[0] if rows else "nothing"
        raise FolderError(f"{path}: unexpected columns {found}, expected {list(CURVE_COLUMNS)}")
    header, body = rows[0], rows[1:]
    for k, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise FolderError(f"{path}: line {k} has {len(row)} values, expected {len(header)}")
    if not body:
        raise FolderError(f"{path}: no rows")
    try:
        data = np.array(body, dtype=float).reshape(len(body), len(header))
    except ValueError as exc:
        raise FolderError(f"{path}: not a curve file ({exc})") from None
    return {
        name: data[:, k].astype(np.int64) if name in _INTEGER_COLUMNS else data[:, k] for k, name in enumerate(header)
    }


class FolderBusy(FolderError):
    """Another process holds the results folder's lock (a run or ``--resume`` writing into it)."""


def lock_folder(out: Path) -> int:
    """Lock the existing results folder ``out`` for this process; returns the descriptor to close.

    The lock is an exclusive ``fcntl.flock`` on the folder itself (nothing is written into
    it), released when the descriptor is closed or the process ends (even by SIGKILL, so a
    killed run never leaves the folder locked). Raises :class:`FolderBusy` when another
    process holds it. On systems without ``fcntl`` the folder is not locked (returns -1).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> fd = lock_folder(folder)
    >>> lock_folder(folder)
    Traceback (most recent call last):
    ...
    cmab_milp.experiments.run.storage.FolderBusy: ... is in use by another cmab-milp run: wait until it ends, or ...
    >>> os.close(fd)
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks of this kind
        return -1
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise FolderBusy(
            f"{out} is in use by another cmab-milp run: wait until it ends, or choose another --out"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd
