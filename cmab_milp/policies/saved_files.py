"""Reading a saved learner's file without trusting it: the file, the archive's members, their sizes, the JSON.

:func:`read_saved` opens the file without blocking (a FIFO, or a link to one, is
refused, as is anything but a regular file), lists the zip archive's members
(only ``header.npy`` and ``a0.npy``, ``a1.npy``, ... are allowed), reads each
``.npy`` header from its member (a few hundred bytes decompressed) and checks
the declared dtype and shape against the size in the zip directory and against
``max_bytes``, all *before* any array data is decompressed. The JSON header is
scanned for nesting depth before it is parsed. Every array member must be
referenced exactly once by the header; one referenced by nothing is never decompressed.

Refusals are ``ValueError`` with one line naming the member or the field.
"""

from __future__ import annotations

import json
import math
import os
import stat
import warnings
import zipfile
from typing import Any

import numpy as np

from ..provenance import provenance, software_differences
from ..untrusted_limits import MAX_NESTING, MAX_SAVED_BYTES, check_json_depth

__all__ = [
    "MAX_BYTES",
    "MAX_JSON_DEPTH",
    "SavedVersionsWarning",
    "check_json_depth",
    "read_saved",
    "warn_if_versions_differ",
]

#: Default bound on the bytes a saved learner's arrays may declare (``load_policy(..., max_bytes=)``).
MAX_BYTES = MAX_SAVED_BYTES
#: JSON headers nested deeper than this are refused (a saved learner needs about ten levels).
MAX_JSON_DEPTH = MAX_NESTING
#: dtypes an array member may have (what :meth:`Policy.save` writes).
_DTYPES = {"b", "i", "u", "f"}


def _open_regular(path: str) -> Any:
    """The file at ``path`` opened for reading, if it is a regular file (checked on the open descriptor)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO opened without O_NONBLOCK blocks forever
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise ValueError(f"{path} is {kind}: a saved learner is a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _npy_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """``(dtype, shape, fortran_order, header_bytes)`` of a ``.npy`` member, decompressing only its header."""
    with archive.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"member {info.filename}: unsupported .npy version {version}")
        offset = stream.tell()
    return dtype, tuple(int(s) for s in shape), bool(fortran), int(offset)


def _array_refs(value: Any, found: dict[str, str], where: str) -> None:
    """Collect ``{"__array__": key}`` references of the decoded JSON ``value`` (key -> field), iteratively."""
    todo = [(value, where)]
    while todo:
        item, path = todo.pop()
        if isinstance(item, list):
            todo.extend((v, path) for v in item)
        elif isinstance(item, dict):
            if set(item) == {"__array__"}:
                key = item["__array__"]
                if not isinstance(key, str):
                    raise ValueError(f"{path}: an array reference must name a member, got {key!r:.40}")
                if key in found:
                    raise ValueError(f"{path}: array {key!r} is referenced twice (also by {found[key]})")
                found[key] = path
                continue
            todo.extend((v, path if k.startswith("__") else f"{path}.{k}" if path else k) for k, v in item.items())


def read_saved(path: str, *, max_bytes: int = MAX_BYTES) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    """The JSON header, the arrays and the unreferenced members of the saved learner at ``path``.

    Everything is checked before it is read; members the header never refers to
    are listed, not decompressed (the caller refuses them once it has checked
    the fields, so that a damaged field is named first).

    Raises ``ValueError`` (one line, naming the member or field) for anything a
    saved learner cannot hold; ``FileNotFoundError`` / ``PermissionError`` as the
    file system says.
    """
    with _open_regular(path) as raw:
        try:
            archive = zipfile.ZipFile(raw)
        except zipfile.BadZipFile as exc:
            raise ValueError(f"not a zip archive ({exc})") from None
        with archive:
            infos = archive.infolist()
            names = [info.filename for info in infos]
            if len(set(names)) != len(names):
                raise ValueError("the archive lists a member twice")
            arrays_expected = {f"a{k}.npy" for k in range(len(names) - 1)}
            unknown = sorted(set(names) - arrays_expected - {"header.npy"}, key=lambda n: (len(n), n))
            if "header.npy" not in names:
                raise ValueError("the archive has no header member")
            if unknown:
                raise ValueError(f"the archive holds unknown member {unknown[0]!r:.60} (a saved learner holds none)")
            declared: dict[str, tuple[np.dtype, tuple[int, ...], int]] = {}
            total = 0
            for info in infos:
                if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise ValueError(f"member {info.filename}: unsupported compression {info.compress_type}")
                dtype, shape, fortran, offset = _npy_header(archive, info)
                if dtype.kind not in _DTYPES or dtype.hasobject or dtype.itemsize > 8 or fortran:
                    raise ValueError(f"member {info.filename}: arrays of {dtype} (order F: {fortran}) are not saved")
                if any(s < 0 for s in shape) or len(shape) > 3:
                    raise ValueError(f"member {info.filename}: impossible shape {shape}")
                size = math.prod(shape) * dtype.itemsize
                if size > max_bytes or total + size > max_bytes:
                    raise ValueError(
                        f"member {info.filename}: declares {size} bytes, more than max_bytes = {max_bytes} "
                        "(raise it with load_policy(..., max_bytes=N) if the file is yours)"
                    )
                if info.file_size != offset + size:
                    raise ValueError(
                        f"member {info.filename}: its .npy header declares shape {shape} ({offset + size} bytes) "
                        f"but the archive lists {info.file_size} bytes"
                    )
                total += size
                declared[info.filename[:-4]] = (dtype, shape, offset)
            dtype, shape, _ = declared.pop("header")
            if dtype != np.uint8 or len(shape) != 1:
                raise ValueError("member header.npy: the header is a 1-D uint8 array")
            text = archive.read("header.npy")[declared_offset(archive) :].decode("utf-8")
            check_json_depth(text)
            header = json.loads(text)
            if not isinstance(header, dict):
                raise ValueError("the header is not a JSON object")
            refs: dict[str, str] = {}
            _array_refs(header, refs, "")
            missing = sorted(set(refs) - set(declared))
            if missing:
                raise ValueError(f"{refs[missing[0]]}: refers to array {missing[0]!r:.40}, absent from the archive")
            unused = sorted(set(declared) - set(refs), key=lambda n: (len(n), n))
            arrays: dict[str, np.ndarray] = {}
            for key in refs:  # members the header never refers to are never decompressed (refused later)
                with archive.open(f"{key}.npy") as stream:
                    arrays[key] = np.lib.format.read_array(stream, allow_pickle=False)
    return header, arrays, unused


def declared_offset(archive: zipfile.ZipFile) -> int:
    """Where ``header.npy``'s data starts (after its ``.npy`` header)."""
    return _npy_header(archive, archive.getinfo("header.npy"))[3]


class SavedVersionsWarning(UserWarning):
    """A saved learner was written by other versions of the library or its solvers (named in the message)."""


def warn_if_versions_differ(header: dict, where: str) -> None:
    """Warn (:class:`SavedVersionsWarning`) naming each recorded version that differs in this process.

    A header without ``provenance`` (saved before versions were recorded) says nothing.
    """
    drift = software_differences(header.get("provenance"), provenance())
    if drift:
        warnings.warn(
            f"{where} was saved with other versions ({', '.join(drift)}): it is read as saved, but its "
            "continuation may differ from the original's where those versions compute differently",
            SavedVersionsWarning,
            stacklevel=3,
        )
