"""Matrices of an environment (``cov``, ``corr``) written briefly: a data file, factors, shared shocks.

A ``d x d`` parameter such as ``GaussianNoise``'s ``cov`` may be given in a
problem file as a table whose parts add up::

    cov = { file = "crew_cov.npy" }                  # the whole matrix from a data file
    cov = { factors = { file = "loadings.csv" }, diagonal = 0.01 }   # F F^T + 0.01 I (F: d x k)
    cov = { factors = [[0.3], [0.3], [0.0]], diagonal = [0.01, 0.01, 0.02] }
    cov = { shared = [ { arms = ["a", "b"], variance = 0.04 }, { nodes = [0, 1], variance = 0.02 } ],
            diagonal = 0.0025 }

* ``file``: a ``.npy`` (read with ``allow_pickle=False``) or ``.csv`` (comma
  separated numbers, ``#`` comments) file, named relative to the problem file's
  folder and inside it (no absolute path, no ``..``). Its size is checked
  before it is read: the ``.npy`` header's shape against ``d`` and the limit
  ``draw_size``, a CSV's bytes against that limit; it must be a ``d x d``
  matrix (``file``) or ``d x k`` with ``k <= d`` (``factors``).
* ``factors``: a ``d x k`` matrix ``F`` (an array of ``d`` rows, or ``{ file = ... }``); adds ``F F^T``.
* ``shared``: groups of arms hit by a common shock: each ``{ arms = [...], variance = v }`` adds ``v`` to
  every entry ``(i, j)`` with ``i, j`` in the group (arms by index, label or edge); ``{ nodes = [...],
  variance = v }`` on a graph space is one group per node, the arms (edges) at that node.
* ``diagonal``: a number, ``d`` numbers or ``{ label = x }`` (independent noise per arm).

The stored problem (``problem.json``) keeps this recipe, with the SHA-256 of
each data file: a changed file is refused when the problem is rebuilt (a
worker, ``--resume``) instead of silently giving other numbers.

Example
-------
>>> import cmab_milp as cm
>>> from cmab_milp.experiments.problem.limits import Limits
>>> space = cm.Cardinality(3, 2, labels=["a", "b", "c"])
>>> table = Table({"shared": [{"arms": ["a", "b"], "variance": 0.04}], "diagonal": 0.01}, "environment.cov", "f.toml")
>>> matrix_value(table, space, Limits())[0]
[[0.05, 0.04, 0.0], [0.04, 0.05, 0.0], [0.0, 0.0, 0.01]]
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np

from .limits import Limits
from .rules import _arm_vector, _arms
from .schema import ProblemError, ProblemErrors, Table, check_number, describe, join_key

__all__ = ["MATRIX_KEYS", "matrix_value"]

#: Keys that make a table parameter a matrix recipe (``diagonal`` alone keeps its own meaning).
MATRIX_KEYS = ("file", "factors", "shared")
#: Bytes a CSV may hold per value allowed by ``draw_size`` (digits, sign, exponent, separator).
_CSV_BYTES_PER_VALUE = 32


def matrix_value(table: Table, space: Any, limits: Limits) -> tuple[list[list[float]], dict[str, Any]]:
    """The ``d x d`` matrix a recipe table states, and the recipe as stored (with each file's ``sha256``)."""
    d = space.d
    limits.check("draw_size", d * d, table.key, table.file, f"a {d} x {d} matrix, which")
    recipe = dict(table.data)
    errors: list[ProblemError] = []
    total = np.zeros((d, d))
    if "file" in table:
        try:
            matrix, digest = _read_matrix(table, "file", space, limits, square=True)
            total += matrix
            recipe["sha256"] = digest
        except ProblemError as exc:
            errors.append(exc)
    elif "sha256" in table:
        errors.append(table.error("sha256", "only with file = ..."))
    table.used.add("sha256")
    if "factors" in table:
        try:
            factors, digest = _factors(table, space, limits)
            total += factors @ factors.T
            if digest is not None:
                recipe["factors"] = {**recipe["factors"], "sha256": digest}
        except ProblemError as exc:
            errors.append(exc)
    if "shared" in table:
        try:
            total += _shared(table, space)
        except ProblemError as exc:
            errors.append(exc)
    if "diagonal" in table:
        try:
            total += np.diag(_diagonal_values(table, space))
        except ProblemError as exc:
            errors.append(exc)
    try:
        table.finish()
    except ProblemError as exc:
        errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else ProblemErrors(errors)
    return total.tolist(), recipe


# ------------------------------------------------------------------ parts
def _diagonal_values(table: Table, space: Any) -> list[float]:
    raw = table.raw("diagonal")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = check_number(raw, table.path("diagonal"), table.file)
        if value < 0:
            raise table.error("diagonal", f"variances must be >= 0, got {value}")
        return [value] * space.d
    values = _arm_vector(Table({"diagonal": raw}, table.key, table.file), space, "diagonal")
    bad = [k for k, v in enumerate(values) if v < 0]
    if bad:
        raise table.error(
            "diagonal", f"variances must be >= 0; arm {space.arm_labels.display[bad[0]]!r} has {values[bad[0]]}"
        )
    return values


def _factors(table: Table, space: Any, limits: Limits) -> tuple[np.ndarray, str | None]:
    raw = table.raw("factors")
    key = table.path("factors")
    if isinstance(raw, dict):
        inner = Table(dict(raw), key, table.file)
        inner.used.add("sha256")
        matrix, digest = _read_matrix(inner, "file", space, limits, square=False, expected=raw.get("sha256"))
        inner.finish()
        return matrix, digest
    if not isinstance(raw, list) or not raw:
        raise table.error(
            "factors", f"expected {space.d} rows of factor loadings or {{ file = ... }}, got {describe(raw)}"
        )
    if len(raw) != space.d:
        raise table.error("factors", f"needs one row per arm: d={space.d}, got {len(raw)} rows")
    rows = []
    for i, row in enumerate(raw):
        row_key = join_key(key, i)
        if not isinstance(row, list) or not row:
            raise ProblemError(
                table.file, row_key, f"a row of factor loadings is an array of numbers, got {describe(row)}"
            )
        rows.append([check_number(v, join_key(row_key, j), table.file) for j, v in enumerate(row)])
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise table.error("factors", f"every row needs the same number of factors, got {sorted(widths)}")
    return np.array(rows, dtype=float), None


def _shared(table: Table, space: Any) -> np.ndarray:
    raw = table.raw("shared")
    key = table.path("shared")
    if not isinstance(raw, list) or not raw:
        raise table.error(
            "shared", f"expected an array of groups {{ arms = [...], variance = v }}, got {describe(raw)}"
        )
    total = np.zeros((space.d, space.d))
    for g, group in enumerate(raw):
        gkey = join_key(key, g)
        if not isinstance(group, dict):
            raise ProblemError(table.file, gkey, f"a group is {{ arms = [...], variance = v }}, got {describe(group)}")
        gtable = Table(dict(group), gkey, table.file)
        if ("arms" in gtable) == ("nodes" in gtable):
            raise gtable.error(None, "give exactly one of arms = [...] (one group) or nodes = [...] (a group per node)")
        variance = gtable.number("variance")
        if not variance >= 0:
            raise gtable.error("variance", f"a variance is >= 0, got {variance}")
        if "arms" in gtable:
            groups = [sorted(set(_arms(gtable, space)))]
        else:
            groups = _node_groups(gtable, space)
        gtable.finish()
        for arms in groups:
            total[np.ix_(arms, arms)] += variance
    return total


def _node_groups(table: Table, space: Any) -> list[list[int]]:
    graph = getattr(space, "graph", None)
    if graph is None:
        raise table.error("nodes", "nodes = [...] needs a graph space (its arms are edges); give arms = [...]")
    raw = table.raw("nodes")
    if not isinstance(raw, list) or not raw:
        raise table.error("nodes", f"expected an array of nodes, got {describe(raw)}")
    arms = list(space.arms)
    groups = []
    for k, node in enumerate(raw):
        node = tuple(node) if isinstance(node, list) else node
        if node not in graph:
            raise ProblemError(table.file, join_key(table.path("nodes"), k), f"{node!r} is not a node of the graph")
        groups.append([i for i, (u, v) in enumerate(arms) if node in (u, v)])
    return groups


# ------------------------------------------------------------------ files
def _data_path(table: Table, name: str) -> Path:
    """The data file ``table[name]`` names: relative to the problem file's folder and inside it."""
    return confined_path(table, name, (".npy", ".csv"), "file", "a data file is .npy (numpy, no pickle) or .csv")


def confined_path(table: Table, name: str, suffixes: tuple[str, ...], noun: str, kinds: str) -> Path:
    """The existing file ``table[name]`` names, relative to the problem file's folder and inside it.

    Refused, naming the key: an absolute path, ``..``, a suffix not in ``suffixes`` (``kinds`` says which
    are), a link leading out of the folder, a missing file. ``noun`` names the file in the messages.
    """
    given = table.string(name)
    if not given or PurePosixPath(given).is_absolute() or PureWindowsPath(given).is_absolute():
        raise table.error(name, f"name the {noun} relative to the problem file's folder, got {given!r}")
    if ".." in PurePosixPath(given.replace("\\", "/")).parts:
        raise table.error(name, f"the {noun} must be in the problem file's folder or below it, got {given!r}")
    if PurePosixPath(given).suffix.lower() not in suffixes:
        raise table.error(name, f"{kinds}, got {given!r}")
    base = Path(table.file).resolve().parent
    path = (base / given).resolve()
    if not path.is_relative_to(base):
        raise table.error(name, f"{given!r} leads out of the problem file's folder (a link?)")
    if not path.is_file():
        raise table.error(name, f"no such file {given!r} beside the problem file (looked for {path})")
    return path


def _read_matrix(
    table: Table, name: str, space: Any, limits: Limits, *, square: bool, expected: str | None = None
) -> tuple[np.ndarray, str]:
    """The matrix in the data file ``table[name]``, size-checked before it is read, and its SHA-256."""
    path = _data_path(table, name)
    key = table.path(name)
    d = space.d
    what = f"a {d} x {d} matrix" if square else f"a {d} x k matrix of factor loadings (k <= {d})"
    size = path.stat().st_size
    if path.suffix.lower() == ".npy":
        with open(path, "rb") as handle:
            try:
                version = np.lib.format.read_magic(handle)
                read_header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = read_header(handle)  # the header only: nothing large is read yet
            except (ValueError, OSError) as exc:
                raise ProblemError(table.file, key, f"not a readable .npy file: {exc}") from None
        if dtype.kind not in "fiu":
            raise ProblemError(table.file, key, f"holds {dtype} values; {what} of numbers is needed")
        _check_shape(tuple(shape), d, square, what, key, table.file, limits)
        digest = _sha256(path)
        _check_digest(digest, expected if expected is not None else table.data.get("sha256"), key, table.file)
        try:
            matrix = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ProblemError(table.file, key, f"not a readable .npy file: {exc}") from None
    else:
        limits.check(
            "draw_size",
            size // _CSV_BYTES_PER_VALUE,
            key,
            table.file,
            f"a CSV of {size:,} bytes (about {size // _CSV_BYTES_PER_VALUE:,} values at most), which",
        )
        digest = _sha256(path)
        _check_digest(digest, expected if expected is not None else table.data.get("sha256"), key, table.file)
        try:
            matrix = np.loadtxt(path, delimiter=",", comments="#", ndmin=2, dtype=float)
        except ValueError as exc:
            raise ProblemError(table.file, key, f"not a CSV of numbers: {exc}") from None
        _check_shape(matrix.shape, d, square, what, key, table.file, limits)
    matrix = np.asarray(matrix, dtype=float)
    if not np.isfinite(matrix).all():
        r, c = np.argwhere(~np.isfinite(matrix))[0]
        raise ProblemError(table.file, key, f"entry [{r}, {c}] is {matrix[r, c]}; values must be finite")
    return matrix, digest


def _check_shape(shape: tuple, d: int, square: bool, what: str, key: str, file: str, limits: Limits) -> None:
    ok = len(shape) == 2 and shape[0] == d and (shape[1] == d if square else 1 <= shape[1] <= d)
    if not ok:
        raise ProblemError(file, key, f"needs {what}, the file holds shape {tuple(int(n) for n in shape)}")
    limits.check("draw_size", int(shape[0]) * int(shape[1]), key, file, f"a {shape[0]} x {shape[1]} matrix, which")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_digest(digest: str, expected: Any, key: str, file: str) -> None:
    if expected is not None and expected != digest:
        raise ProblemError(
            file,
            key,
            f"the data file changed since the problem was read "
            f"(sha256 {digest[:12]}..., expected {str(expected)[:12]}...)",
        )
