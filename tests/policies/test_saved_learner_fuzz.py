"""Damaged saved learners: refused naming the field, or loaded as a learner that behaves exactly as before.

Every policy of the library's table (:func:`~cmab_milp.policies.persistence.policy_classes`, so a policy
added later is covered without editing this file) is played for a few rounds, with some selections left
outstanding, and saved. Then every field of the file -- each JSON value of the header's state, ``T``,
``version``, constants, ledger and space, and each array -- is damaged in each applicable way: its
**type** (a string, a float for an integer, an integer for a boolean, a list for an array), its
**shape** (a row more or less, an extra axis), its **sign** (negative counts), **NaN / inf** and its
**size** (2**62, 1e300, a million-element array). Loading must then either raise ``ValueError`` naming the
field, or give a learner whose next selections and state equal the undamaged learner's on the same
outcomes. Only damages that could be legitimate values are left out: the sign of a float (outcomes may
be negative), the size of a constant (any finite positive constant is a valid choice) and the sign and
size of unsigned words (a random generator's state, of which any value is one).

The default run damages a deterministic sample of the cases; the exhaustive variant is marked slow.
"""

from __future__ import annotations

import inspect
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.persistence import policy_classes

SPACE = cm.Cardinality(4, 2)
STEPS = 8


def _outcome(step: int, arms: np.ndarray) -> np.ndarray:
    """Deterministic 0/1 outcomes (valid for every family, general rewards included)."""
    return np.where(arms, ((np.arange(len(arms)) * 7 + step * 3) % 5 > 1).astype(float), np.nan)


def _played(name: str, T: int | None) -> Any:
    cls = policy_classes()[name]
    seeded = {"seed": 0} if "seed" in inspect.signature(cls).parameters else {}  # the same cases on every worker
    policy = cls(SPACE, T, oracle="enumerate", **seeded)
    waiting = []
    for step in range(12):
        waiting.append(policy.select())
        if step % 3 != 2:
            a = waiting.pop(0)
            policy.observe(a, _outcome(step, a))
    return policy


def _behaviour(policy: Any) -> tuple[list, Any]:
    """The next selections on fixed outcomes, the outstanding ones observed midway, and the final state."""
    actions = []
    for step in range(STEPS):
        if step == 3:
            for key in sorted(policy.outstanding):
                for _ in list(policy.outstanding.get(key, [])):
                    a = np.frombuffer(key, dtype=bool)
                    policy.observe(a, _outcome(100 + step, a))
        a = policy.select()
        actions.append(a.astype(int).tolist())
        policy.observe(a, _outcome(step, a))
    return actions, _plain(policy.get_state())


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [value.dtype.str, value.tolist()]
    if hasattr(value, "actions") and hasattr(value, "length"):
        return ["stretch", value.actions.tolist(), value.length]
    if isinstance(value, float) and np.isnan(value):
        return "nan"
    return value


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    return json.loads(bytes(arrays.pop("header")).decode()), arrays


def _write(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, header=blob, **arrays)
    path.write_bytes(buffer.getvalue())


# ------------------------------------------------------------------ damages
def _leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """(path, leaf) of the JSON header: scalars, array references, byte strings, lists of scalars."""
    out = []
    if isinstance(value, dict):
        if set(value) in ({"__array__"}, {"__bytes__"}, {"__float__"}):
            return [(path, value)]
        for k, v in value.items():
            out += _leaves(v, (*path, k))
    elif isinstance(value, list):
        if value and all(not isinstance(v, (dict, list)) for v in value):
            out.append((path, value))
        for k, v in enumerate(value):
            out += _leaves(v, (*path, k))
    else:
        out.append((path, value))
    return out


def _get(root: Any, path: tuple) -> Any:
    for p in path:
        root = root[p]
    return root


def _set(root: Any, path: tuple, value: Any) -> None:
    _get(root, path[:-1])[path[-1]] = value


def _named(header: dict, path: tuple) -> list[str]:
    """Names that locate ``path``: dict keys and the names of ``__map__`` pairs on the way."""
    names, node = [], header
    for k, p in enumerate(path):
        if isinstance(p, str) and not p.startswith("__"):
            names.append(p)
        if isinstance(node, list) and k >= 1 and path[k - 1] == "__map__" and isinstance(node[p], list):
            first = node[p][0]
            if isinstance(first, str):
                names.append(first)
        node = node[p]
    return names


def _damages(leaf: Any, section: str) -> list[tuple[str, Any]]:
    """(label, replacement or callable on the arrays) for one leaf."""
    constant = section == "params"
    if isinstance(leaf, dict) and "__array__" in leaf:
        key = leaf["__array__"]
        out = [("type:scalar", 0), ("type:list", [0, 1])]

        def change(fn):
            return ("array", key, fn)

        out += [
            ("shape:row-", change(lambda a: a[:-1] if a.ndim and len(a) else a.reshape(-1)[:0])),
            ("shape:row+", change(lambda a: np.concatenate([a, a[-1:]]) if a.ndim and len(a) else a.reshape(1))),
            ("shape:axis", change(lambda a: a[None])),
            ("type:dtype", change(lambda a: a.astype(float) if a.dtype.kind != "f" else a.astype(np.int64))),
            ("size:million", change(lambda a: np.zeros(10**6, a.dtype))),
        ]
        # unsigned arrays are words of a random generator's state (any value is one): no sign or size damage
        out += [
            ("sign", change(lambda a: (-a - 1) if a.dtype.kind == "i" else a)),
            (
                "size:huge",
                change(
                    lambda a: np.full_like(a, 2**62 if a.dtype.kind == "i" else 1e300) if a.dtype.kind != "u" else a
                ),
            ),
            ("nan", change(lambda a: np.full_like(a, np.nan) if a.dtype.kind == "f" else a)),
            ("inf", change(lambda a: np.full_like(a, np.inf) if a.dtype.kind == "f" else a)),
        ]
        return out
    if isinstance(leaf, dict) and "__bytes__" in leaf:
        hexed = leaf["__bytes__"]
        return [
            ("shape:bytes-", {"__bytes__": hexed[:-2]}),
            ("type:bytes", {"__bytes__": "02" * (len(hexed) // 2)}),
            ("size:all-arms", {"__bytes__": "01" * (len(hexed) // 2)}),
        ]
    if isinstance(leaf, dict) and "__float__" in leaf:
        return [("type:string", "inf"), ("nan", {"__float__": "nan"})]
    if isinstance(leaf, bool):
        return [("type:int", int(leaf)), ("type:string", str(leaf).lower())]
    if isinstance(leaf, int):
        out = [("type:string", str(leaf)), ("type:float", leaf + 0.5), ("type:bool", True), ("type:list", [leaf])]
        out += [("sign", -1 - leaf)]
        if not constant:
            out += [("size", 2**62)]
        return out
    if isinstance(leaf, float):
        out = [("type:string", "x"), ("type:bool", True), ("nan", {"__float__": "nan"}), ("inf", {"__float__": "inf"})]
        return out + ([] if constant else [("size", 1e300)])
    if isinstance(leaf, str):
        return [("type:int", 3), ("value:unknown-name", leaf + "_x")] if section not in ("format",) else []
    if isinstance(leaf, list):
        return [("shape:list-", leaf[:-1]), ("shape:list+", [*leaf, leaf[-1]]), ("type:nested", [leaf])]
    if leaf is None:
        return [("type:string", "none"), ("type:list", [])]
    return []


def cases(name: str) -> list[tuple[tuple, str]]:
    header = SAVED[name]["header"]
    out = []
    for path, leaf in _leaves(header):
        if path and path[0] in ("format", "oracle"):
            continue  # the format tag and backend name are refused by lookup (tested in test_saved_learners)
        for label, _ in _damages(leaf, path[0] if path else ""):
            out.append((path, label))
    return out


def _saved(name: str, tmp: Path) -> dict:
    policy = _played(name, 200)
    path = tmp / f"{name}.npz"
    policy.save(path)
    header, arrays = _read(path)
    return {"header": header, "arrays": arrays, "behaviour": _behaviour(cm.load_policy(path))}


SAVED: dict[str, dict] = {}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("learners")
    for name in policy_classes():
        SAVED[name] = _saved(name, tmp)
    return SAVED


def _check_case(name: str, path: tuple, label: str, tmp_path: Path) -> None:
    original = SAVED[name]
    header = json.loads(json.dumps(original["header"]))
    arrays = dict(original["arrays"])
    leaf = _get(header, path)
    replacement = dict(_damages(leaf, path[0] if path else ""))[label]
    if isinstance(replacement, tuple) and replacement and replacement[0] == "array":
        _, key, change = replacement
        damaged = change(arrays[key])
        if damaged is arrays[key] or (damaged.shape == arrays[key].shape and np.array_equal(damaged, arrays[key])):
            return  # the damage does not apply to this dtype
        arrays[key] = damaged
    else:
        _set(header, path, replacement)
    file = tmp_path / f"{name}.npz"
    _write(file, header, arrays)
    try:
        loaded = cm.load_policy(file)
    except ValueError as exc:
        message = str(exc)
        names = _named(original["header"], path)
        assert "\n" not in message
        assert any(n in message for n in names[-2:]) or (label == "shape:axis" and "in_flight" in message), (
            f"{name} {path} {label}: the refusal does not name the field {names[-2:]}: {message}"
        )
        return
    try:
        behaviour = _behaviour(loaded)
    except Exception as exc:  # a damaged learner that loads must work exactly as before
        pytest.fail(f"{name} {path} {label}: loaded, then failed: {type(exc).__name__}: {exc}")
    assert behaviour == original["behaviour"], f"{name} {path} {label}: loaded a learner that behaves differently"


def _all_cases() -> list[tuple[str, tuple, str]]:
    # built once at collection from fresh saves (tmp files in memory)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in policy_classes():
            if name not in SAVED:
                SAVED[name] = _saved(name, Path(tmp))
    return [(name, path, label) for name in policy_classes() for path, label in cases(name)]


ALL = _all_cases()
SAMPLE = ALL[::12]


def test_every_policy_of_the_registry_is_fuzzed() -> None:
    assert {name for name, _, _ in SAMPLE} == set(policy_classes())


@pytest.mark.parametrize(("name", "path", "label"), SAMPLE, ids=lambda v: str(v))
def test_damaged_learner_is_refused_or_unchanged(name, path, label, tmp_path) -> None:
    _check_case(name, path, label, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path", "label"), ALL, ids=lambda v: str(v))
def test_damaged_learner_is_refused_or_unchanged_exhaustive(name, path, label, tmp_path) -> None:
    _check_case(name, path, label, tmp_path)


# ------------------------------------------------------------------ the file itself
def test_a_fifo_or_a_link_to_one_is_refused_at_once(tmp_path) -> None:
    import os

    fifo = tmp_path / "learner.npz"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        cm.load_policy(fifo)
    link = tmp_path / "link.npz"
    link.symlink_to(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        cm.load_policy(link)


def _zip_with(path: Path, source: Path, name: str, data: bytes | None = None, npy: bytes | None = None) -> None:
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
        zout.writestr(name, npy if npy is not None else data)


def test_an_unreferenced_member_is_refused_before_it_is_decompressed(tmp_path) -> None:
    source = tmp_path / "ok.npz"
    _played("CUCB", 200).save(source)
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
        with zout.open("a99.npy", "w", force_zip64=True) as member:  # 64 MiB of zeros, ~64 KB deflated
            chunk = bytes(2**20)
            for _ in range(64):
                member.write(chunk)
    with pytest.raises(ValueError, match=r"unknown member 'a99\.npy'"):
        cm.load_policy(bomb)
    renamed = tmp_path / "extra.npz"
    _zip_with(renamed, source, "notes.txt", b"hello")
    with pytest.raises(ValueError, match=r"unknown member 'notes\.txt'"):
        cm.load_policy(renamed)


def test_a_member_declaring_a_huge_array_is_refused_from_its_header(tmp_path) -> None:
    source = tmp_path / "ok.npz"
    _played("CUCB", 200).save(source)
    huge = io.BytesIO()
    np.lib.format.write_array_header_1_0(huge, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    tampered = tmp_path / "huge.npz"
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(tampered, "w") as zout:
        for info in zin.infolist():
            if info.filename == "a3.npy":
                zout.writestr("a3.npy", huge.getvalue() + bytes(64))
            else:
                zout.writestr(info.filename, zin.read(info.filename))
    with pytest.raises(ValueError, match=r"a3.npy: declares 8000000000000 bytes, more than max_bytes"):
        cm.load_policy(tampered)
    # a shape that disagrees with the archive's directory
    small = io.BytesIO()
    np.lib.format.write_array_header_1_0(small, {"descr": "<f8", "fortran_order": False, "shape": (1000,)})
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(tampered, "w") as zout:
        for info in zin.infolist():
            data = small.getvalue() + bytes(64) if info.filename == "a3.npy" else zin.read(info.filename)
            zout.writestr(info.filename, data)
    with pytest.raises(ValueError, match=r"a3.npy: its .npy header declares shape \(1000,\)"):
        cm.load_policy(tampered)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda h: h["space"].update(d=10**9), "in_flight"),
        (lambda h: h["params"].update(discretise=10**12), "discretise"),
        (lambda h: h.update(version=True), "version True"),
        (lambda h: h["state"].update(deep=json.loads("[" * 5000 + "]" * 5000)), "nests"),
    ],
)
def test_headers_that_would_allocate_or_recurse_are_refused(change, fragment, tmp_path) -> None:
    source = tmp_path / "ok.npz"
    _played("SDCB", 200).save(source)
    header, arrays = _read(source)
    if "deep" in repr(change.__code__.co_consts):
        text = json.dumps(header)[:-1] + ', "deep": ' + "[" * 5000 + "]" * 5000 + "}"
        blob = np.frombuffer(text.encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, header=blob, **arrays)
        (tmp_path / "bad.npz").write_bytes(buffer.getvalue())
    else:
        change(header)
        _write(tmp_path / "bad.npz", header, arrays)
    with pytest.raises(ValueError, match=fragment):
        cm.load_policy(tmp_path / "bad.npz")
