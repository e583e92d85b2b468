"""Checking a saved learner's header before anything of the size it states is built.

:func:`check_header` reads the header's sections and their types, the number
of arms the space declares (without building the space) and the memory a
learner on that many arms takes (:func:`fresh_bytes`, against ``max_bytes``);
:func:`check_params` matches the constants whose size the constructor allocates
(a histogram grid) with the saved arrays; :func:`check_ledger` the oracle's
counts. The state itself is checked afterwards by
:func:`~cmab_milp.policies.state_checks.check_state`. A refusal is a
``ValueError`` whose message starts with the key (``ledger.rounds: ...``).

Example
-------
>>> check_ledger({"queries": 3, "rounds": 2, "seconds": 0.5})
>>> check_ledger({"queries": 3, "rounds": -1, "seconds": 0.5})
Traceback (most recent call last):
...
ValueError: ledger.rounds: expected a count, got -1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..oracles.core.ties import TIE_MODES
from ..untrusted_limits import MAX_HORIZON
from .protocol import Stretch
from .state_checks import _MAX_INT, _fail, _kind

__all__ = ["check_header", "check_ledger", "check_params", "fresh_bytes"]

_HEADER_KEYS = {"format", "version", "policy", "T", "params", "space", "oracle", "ledger", "state"}
#: Keys a header may hold or not: files saved before versions were recorded have no ``provenance``.
_OPTIONAL_KEYS = {"provenance"}


def _space_d(data: Any, arrays: Mapping[str, np.ndarray], where: str = "space") -> int:
    """The number of arms the space data declares, read without building the space."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise _fail(where, "expected a space table with a kind")
    kind = data["kind"]
    if kind in ("ConstrainedSpace", "ConflictSpace"):
        return _space_d(data.get("parent"), arrays, f"{where}.parent")
    if kind == "Intersection":
        parts = data.get("spaces")
        if not isinstance(parts, list) or not parts:
            raise _fail(f"{where}.spaces", "expected a list of spaces")
        return _space_d(parts[0], arrays, f"{where}.spaces")
    if kind == "Cardinality":
        d = data.get("d")
    elif kind == "PartitionMatroid":
        blocks = data.get("blocks")
        d = (
            sum(len(b) for b in blocks)
            if isinstance(blocks, list) and all(isinstance(b, list) for b in blocks)
            else None
        )
    elif kind == "ExplicitActions":
        ref = data.get("actions")
        array = arrays.get(ref.get("__array__")) if isinstance(ref, Mapping) else None
        d = array.shape[1] if isinstance(array, np.ndarray) and array.ndim == 2 else None
        if d is not None and len(np.unique(array, axis=0)) != len(array):
            raise _fail(f"{where}.actions", "duplicate rows (a saved action list holds each action once)")
    elif kind in ("GraphicMatroid", "SpanningTrees", "STPaths", "Matchings"):
        graph = data.get("graph")
        edges = graph.get("edges") if isinstance(graph, Mapping) else None
        d = len(edges) if isinstance(edges, list) else None
    else:
        raise _fail(f"{where}.kind", f"unknown space kind {kind!r:.60}")
    if _kind(d) != "int" or d < 1:
        raise _fail(where, f"cannot tell the number of arms of a {kind!r:.40} space")
    return int(d)


_PER_ARM_BYTES: dict[type, tuple[float, float, float]] = {}


def _state_bytes(state: Any) -> int:
    todo, total = [state], 0
    while todo:
        item = todo.pop()
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif isinstance(item, Stretch):
            todo.append(item.actions)
        elif isinstance(item, Mapping):
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return total


def fresh_bytes(cls: type, d: int, T: int | None) -> float:
    """Bytes of the arrays a fresh ``cls`` holds on ``d`` arms: a quadratic in ``d`` fitted on 2, 3 and 4 arms."""
    if cls not in _PER_ARM_BYTES:
        from ..spaces.sets import Cardinality

        sizes = [_state_bytes(cls(Cardinality(k, 1), 100, oracle="enumerate").get_state()) for k in (2, 3, 4)]
        c = (sizes[2] - 2 * sizes[1] + sizes[0]) / 2.0
        b = sizes[1] - sizes[0] - 5 * c
        a = sizes[0] - 2 * b - 4 * c
        _PER_ARM_BYTES[cls] = (a, b, c)
    a, b, c = _PER_ARM_BYTES[cls]
    return a + b * d + c * d * d


def _check_provenance(record: Any) -> None:
    """``provenance`` is an object whose ``software`` maps package names to version strings."""
    if not isinstance(record, Mapping):
        raise _fail("provenance", f"expected an object, got {_kind(record)}")
    software = record.get("software", {})
    if not isinstance(software, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and len(k) <= 100 and len(v) <= 100 for k, v in software.items()
    ):
        raise _fail("provenance.software", "expected an object of package names and version strings")


def check_header(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray], max_bytes: int, cls: type) -> int:
    """The header's sections have their types; the arms match ``in_flight``; the rebuilt learner fits ``max_bytes``.

    Returns the number of arms. Runs before anything of the size the header states is built.
    """
    keys = set(header) - _OPTIONAL_KEYS
    if keys != _HEADER_KEYS:
        extra = sorted(keys ^ _HEADER_KEYS)
        raise _fail(extra[0], "unexpected" if extra[0] in header else "missing")
    if "provenance" in header:
        _check_provenance(header["provenance"])
    T = header["T"]
    if T is not None and (_kind(T) != "int" or not 1 <= T <= MAX_HORIZON):
        raise _fail("T", f"a horizon is null or an integer in [1, 2**53], got {T!r:.40}")
    for name in ("params", "space", "oracle", "ledger", "state"):
        if not isinstance(header[name], Mapping):
            raise _fail(name, f"expected an object, got {_kind(header[name])}")
    oracle = header["oracle"]
    if (
        not isinstance(oracle.get("backend"), str)
        or _kind(oracle.get("instance")) != "bool"
        or set(oracle) - {"ties"} != {"backend", "instance"}
    ):
        raise _fail("oracle", "expected {backend: name, instance: true or false} (and ties, a tie rule mode)")
    if "ties" in oracle and oracle["ties"] not in TIE_MODES:
        raise _fail("oracle.ties", f"one of {', '.join(map(repr, TIE_MODES))}, got {oracle['ties']!r:.40}")
    d = _space_d(header["space"], arrays)
    ref = header["state"].get("in_flight")
    flight = arrays.get(ref.get("__array__")) if isinstance(ref, Mapping) else None
    if not isinstance(flight, np.ndarray) or flight.shape != (d,):
        shown = flight.shape if isinstance(flight, np.ndarray) else _kind(ref)
        raise _fail("state.in_flight", f"expected an array of the space's {d} arms, got {shown}")
    need = fresh_bytes(cls, d, T)
    if need > max_bytes:
        raise _fail("space", f"a learner on {d} arms takes about {need:.3g} bytes, more than max_bytes = {max_bytes}")
    return d


def check_params(cls: type, space: Any, header: Mapping[str, Any], params: Mapping[str, Any], arrays: Any) -> None:
    """Constants whose size the constructor allocates (a histogram grid) match the saved histograms."""
    discretise = params.get("discretise")
    if discretise is None or discretise is False or _kind(discretise) not in ("int", "bool"):
        return  # the constructor checks the rest
    index = header["state"].get("index")
    hist = None
    if isinstance(index, Mapping) and isinstance(index.get("__map__"), list):
        for pair in index["__map__"]:
            if isinstance(pair, list) and len(pair) == 2 and pair[0] == "hist" and isinstance(pair[1], Mapping):
                hist = arrays.get(pair[1].get("__array__"))
    width = hist.shape[1] if isinstance(hist, np.ndarray) and hist.ndim == 2 else 0
    if discretise is True:
        from ..nonlinear.grid import n_intervals
        from ..nonlinear.rewards import make_reward

        reward = params.get("reward", "sqrt_sum")
        T = header["T"]
        if not isinstance(reward, str) or T is None:
            return
        lipschitz = make_reward(reward).lipschitz
        intervals = n_intervals(space.m, T, 1.0 if lipschitz is None else float(lipschitz))
    else:
        intervals = int(discretise)
    if intervals > width:
        raise _fail("params.discretise", f"{intervals} intervals, but the saved histograms have {width} values")


def check_ledger(ledger: Mapping[str, Any]) -> None:
    """Counts of queries and rounds (integers >= 0) and seconds (finite, >= 0)."""
    if set(ledger) != {"queries", "rounds", "seconds"}:
        raise _fail("ledger", f"expected queries, rounds and seconds, got {sorted(map(str, ledger))}")
    for name in ("queries", "rounds"):
        if _kind(ledger[name]) != "int" or not 0 <= ledger[name] <= _MAX_INT:
            raise _fail(f"ledger.{name}", f"expected a count, got {ledger[name]!r:.40}")
    seconds = ledger["seconds"]
    if _kind(seconds) not in ("int", "float") or not 0 <= seconds < np.inf:
        raise _fail("ledger.seconds", f"expected finite seconds >= 0, got {seconds!r:.40}")
