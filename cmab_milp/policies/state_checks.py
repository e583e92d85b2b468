"""Checking a saved learner's state against what the library could have written.

:func:`check_state` compares a decoded state with the state of a fresh policy
built from the same header (same fields, same types, arrays of the same dtype
kind, rank and shape -- only action lists, grids and supports may differ in
length), then applies the rules that the constructor, ``select`` and
``observe`` keep true: counts are integers >= 0 and at most the rounds
observed, sums are finite and within ``counts * MAX_OUTCOME``, ``1 <= t <= T +
1``, every outstanding selection is an action of the space selected at a past
round, in flight exactly as ``in_flight`` says, ``observed_rounds + pending =
t - 1``, held and cycled actions are actions of the space, and so on. A
refusal is a ``ValueError`` whose message starts with the field
(``state.index.counts: ...``). The header around the state is checked first, by
:mod:`.header_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .anytime import MAX_HORIZON, first_horizon, next_horizon
from .protocol import MAX_OUTCOME, Stretch

__all__ = ["check_state"]

#: Fields whose arrays may have another length along their first axis than a fresh policy's.
_VARIABLE_ROWS = {"cover", "cycle", "grid", "support", "actions", "_stretch", "phases", "action"}
#: Fields a fresh policy may hold as None (or without a value) that a saved one may hold as a value.
_NULLABLE = {"_stretch", "action", "cycle", "cover"}
#: Largest integer anywhere in a state (counts and rounds of at most 2**53 rounds, per pair).
_MAX_INT = MAX_HORIZON * 4


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


def _kind(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if value is None:
        return "None"
    return type(value).__name__


def _structure(value: Any, template: Any, where: str, field: str) -> None:
    """``value`` has the structure of ``template`` (a fresh policy's state), recursively without deep recursion."""
    todo = [(value, template, where, field)]
    while todo:
        value, template, where, field = todo.pop()
        if template is None and field in _NULLABLE:
            continue  # checked by the field's own rule
        if value is None and field in _NULLABLE:
            continue
        if isinstance(template, np.ndarray):
            if not isinstance(value, np.ndarray):
                raise _fail(where, f"expected an array, got {_kind(value)}")
            if value.dtype.kind != template.dtype.kind or value.ndim != template.ndim:
                raise _fail(
                    where, f"expected a {template.ndim}-D {template.dtype} array, got {value.ndim}-D {value.dtype}"
                )
            fixed = template.shape[1:] if field in _VARIABLE_ROWS else template.shape
            got = value.shape[1:] if field in _VARIABLE_ROWS else value.shape
            if field == "hist":  # a learned support grows: its width is checked against the support
                fixed, got = template.shape[:1], value.shape[:1]
            if got != fixed:
                raise _fail(where, f"expected shape {template.shape}, got {value.shape}")
            continue
        if isinstance(template, Mapping):
            if not isinstance(value, Mapping):
                raise _fail(where, f"expected a mapping, got {_kind(value)}")
            if field in ("outstanding",):
                continue
            optional = {"carries"}
            if set(value) - optional != set(template) - optional:
                raise ValueError(f"{where} has fields {sorted(map(str, value))}, expected {sorted(map(str, template))}")
            todo.extend((value[k], template[k], f"{where}.{k}", str(k)) for k in template if k in value)
            continue
        if isinstance(template, Stretch):
            if not isinstance(value, Stretch):
                raise _fail(where, f"expected a stretch, got {_kind(value)}")
            continue
        if isinstance(template, (list, tuple)):
            if not isinstance(value, type(template)):
                raise _fail(where, f"expected a {type(template).__name__}, got {_kind(value)}")
            continue  # lists: checked by their field's rule
        if _kind(value) != _kind(template):
            raise _fail(where, f"expected {_kind(template)}, got {_kind(value)} ({value!r:.40})")


def _numbers(value: Any, where: str) -> None:
    """Integers in ``[0, _MAX_INT]`` and finite floats anywhere in ``value`` (iteratively)."""
    todo = [(value, where)]
    while todo:
        item, path = todo.pop()
        if isinstance(item, Stretch):
            todo.append((item.actions, path))
            if not 1 <= item.length <= _MAX_INT:
                raise _fail(path, f"a stretch lasts 1 to {_MAX_INT} rounds, got {item.length}")
        elif isinstance(item, np.ndarray):
            # signed integers are counts and rounds; unsigned ones are words (a random generator's state)
            if item.dtype.kind == "i" and item.size and (item.min() < 0 or item.max() > _MAX_INT):
                raise _fail(path, f"counts lie in [0, {_MAX_INT}], got {item.min()} .. {item.max()}")
            if item.dtype.kind == "f" and not np.isfinite(item).all():
                raise _fail(path, "must be finite (no NaN or inf)")
        elif isinstance(item, Mapping):
            todo.extend((v, f"{path}.{k}") for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            todo.extend((v, path) for v in item)
        elif isinstance(item, (bool, np.bool_, bytes, str)) or item is None:
            continue
        elif isinstance(item, (int, np.integer)):
            if not 0 <= item <= _MAX_INT:
                raise _fail(path, f"lies in [0, {_MAX_INT}], got {item}")
        elif isinstance(item, (float, np.floating)):
            if not np.isfinite(item) or abs(item) > MAX_OUTCOME:
                raise _fail(path, f"must be finite, got {item}")
        else:
            raise _fail(path, f"unexpected value of type {type(item).__name__}")


def _actions(policy: Any, value: Any, where: str) -> None:
    """Each row of ``value`` (bool, ``(p, d)`` or ``(d,)``) is an action of the policy's space."""
    rows = np.atleast_2d(value)
    if rows.dtype != bool or rows.shape[-1] != policy.d or rows.ndim != 2:
        raise _fail(where, f"expected bool actions of {policy.d} arms, got {rows.dtype} {rows.shape}")
    for row in rows:
        if not policy.space.contains(row):
            raise _fail(where, f"holds {np.flatnonzero(row).tolist()}, not an action of the space")


def _pairs(value: Any, d: int, where: str) -> None:
    if not isinstance(value, list):
        raise _fail(where, "expected a list of pairs")
    seen = set()
    for pair in value:
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in pair)
            or not 0 <= pair[0] < pair[1] < d
            or pair in seen
        ):
            raise _fail(where, f"expected distinct pairs (i, j) with 0 <= i < j < {d}, got {pair!r:.40}")
        seen.add(pair)


def _protocol(policy: Any, state: Mapping[str, Any]) -> None:
    """Round, horizon, outstanding selections and in-flight counts (the rules of select / observe)."""
    T, t, d = policy.T, state["t"], policy.d
    if T is not None and not 1 <= t <= T + 1:
        raise _fail("state.t", f"must lie in [1, T + 1 = {T + 1}], got {t}")
    horizon = state["horizon"]
    if T is not None and horizon != T:
        raise _fail("state.horizon", f"must be T = {T} for a known horizon, got {horizon}")
    if T is None:
        guess = first_horizon()
        while guess < horizon and guess < MAX_HORIZON:
            guess = next_horizon(guess)
        if guess != horizon or t > horizon + 1:
            raise _fail("state.horizon", f"{horizon} is not a horizon guess reached by round {t}")
    outstanding = state["outstanding"]
    if not isinstance(outstanding, Mapping):
        raise _fail("state.outstanding", "expected a mapping of actions to rounds")
    in_flight = np.zeros(d, np.int64)
    rounds_seen: set[int] = set()
    for key, rounds in outstanding.items():
        if not isinstance(key, bytes) or len(key) != d or set(key) - {0, 1}:
            raise _fail("state.outstanding", f"an action is {d} bytes of 0 or 1, got {key!r:.40}")
        action = np.frombuffer(key, dtype=bool)
        _actions(policy, action, "state.outstanding")
        if (
            not isinstance(rounds, list)
            or not rounds
            or not all(isinstance(r, int) and not isinstance(r, bool) and 1 <= r < t for r in rounds)
            or rounds != sorted(set(rounds))
            or rounds_seen & set(rounds)
        ):
            raise _fail("state.outstanding", f"rounds must be distinct past rounds (before {t}), oldest first")
        rounds_seen |= set(rounds)
        in_flight += action.astype(np.int64) * len(rounds)
    if not np.array_equal(state["in_flight"], in_flight):
        raise _fail("state.in_flight", f"must count the outstanding selections per arm ({in_flight.tolist()})")
    if state["observed_rounds"] + len(rounds_seen) != t - 1:
        raise _fail(
            "state.observed_rounds",
            f"{state['observed_rounds']} observed and {len(rounds_seen)} outstanding do not make the {t - 1} "
            "rounds played",
        )
    stretch = state["_stretch"]
    if stretch is not None:
        if not isinstance(stretch, Stretch):
            raise _fail("state._stretch", f"expected a stretch or null, got {_kind(stretch)}")
        _actions(policy, stretch.actions, "state._stretch")


def _index(policy: Any, index: Mapping[str, Any], observed: int) -> None:
    """Statistics: counts within the rounds observed, sums within the outcomes observe() accepts."""
    counts = index["counts"]
    for k, carry in enumerate(index.get("carries", [])):
        where = f"state.index.carries[{k}]"
        if not isinstance(carry, Mapping) or not {"reuse", "solved", "reused"} <= set(carry):
            raise _fail(where, "a carry holds reuse, solved and reused")
        if _kind(carry["solved"]) != "int" or _kind(carry["reused"]) != "int":
            raise _fail(where, "solved and reused are counts")
        if carry["reuse"] is not None and (_kind(carry["reuse"]) != "float" or not 0 <= carry["reuse"] <= 1):
            raise _fail(f"{where}.reuse", f"a share in [0, 1], got {carry['reuse']!r:.40}")
    if counts.max(initial=0) > observed:
        raise _fail("state.index.counts", f"an arm observed more often than the {observed} rounds observed")
    if "sums" in index:
        sums = index["sums"]
        if (np.abs(sums) > counts * MAX_OUTCOME).any():
            raise _fail("state.index.sums", "beyond what the counts' outcomes (at most 1e100 each) can sum to")
    if "successes" in index:  # Bernoulli-trick successes (CTS): between none and every observation
        successes = index["successes"]
        if (successes < 0).any() or (successes > counts).any():
            raise _fail("state.index.successes", "must lie between 0 and the counts")
    if "estimator" in index:
        est = index["estimator"]
        n, pairs, sums, outer = est["counts"], est["pair_counts"], est["sums"], est["outer_sums"]
        where = "state.index.estimator"
        if not np.array_equal(n, counts):
            raise _fail(f"{where}.counts", "must equal the index counts")
        if not np.array_equal(pairs, pairs.T) or not np.array_equal(np.diag(pairs), n):
            raise _fail(f"{where}.pair_counts", "must be symmetric with the counts on its diagonal")
        if (pairs > np.minimum.outer(n, n)).any():
            raise _fail(f"{where}.pair_counts", "a pair observed more often than one of its arms")
        if (np.abs(sums) > n * MAX_OUTCOME).any():
            raise _fail(f"{where}.sums", "beyond what the counts' outcomes (at most 1e100 each) can sum to")
        if not np.array_equal(outer, outer.T) or (np.diag(outer) < 0).any():
            raise _fail(f"{where}.outer_sums", "must be symmetric with a non-negative diagonal")
        if (np.abs(outer) > pairs * MAX_OUTCOME**2).any():
            raise _fail(f"{where}.outer_sums", "beyond what the pair counts' outcomes can sum to")
    if "hist" in index:
        hist = index["hist"]
        width = len(index["support"]) if "support" in index else policy.index.hist.shape[1]
        if hist.shape[1] != width:
            raise _fail("state.index.hist", f"expected {width} values per arm, got {hist.shape[1]}")
        if not np.array_equal(hist.sum(axis=1), counts):
            raise _fail("state.index.hist", "the histograms must sum to the counts")
    if "support" in index:
        support = index["support"]
        if support.ndim != 1 or not len(support) or (np.diff(support) <= 0).any():
            raise _fail("state.index.support", "expected increasing outcome values")
        if index.get("intervals", 0) > len(support):
            raise _fail("state.index.intervals", f"more intervals than the {len(support)} support values")


def _schedule(policy: Any, state: Mapping[str, Any]) -> None:
    """Epoch counters within the rounds played; held, cycled and cover actions in the space."""
    t, d = state["t"], policy.d
    for name in ("epochs", "previous", "current", "updates", "phase_start", "warmup_queries"):
        if name in state and np.max(state[name], initial=0) > max(t, 1) * max(1, policy.m):
            raise _fail(f"state.{name}", f"larger than the {t - 1} rounds played allow")
    for name in ("action", "cover", "cycle"):
        if state.get(name) is not None:
            _actions(policy, state[name], f"state.{name}")
    if "grid" in state:
        grid = state["grid"]
        if (np.diff(grid) <= 0).any() or (len(grid) and grid[0] < 1):
            raise _fail("state.grid", "epoch starts must increase from round 1 on")
        if "epoch" in state and state["epoch"] > len(grid):
            raise _fail("state.epoch", f"beyond the grid's {len(grid)} epochs")
        if state["phase_start"] > t:
            raise _fail("state.phase_start", f"after the current round {t}")
    if "active_pairs" in state:
        _pairs(state["active_pairs"], d, "state.active_pairs")
        _pairs(state["forbidden"], d, "state.forbidden")
        if set(state["active_pairs"]) & set(state["forbidden"]):
            raise _fail("state.forbidden", "a pair both active and forbidden")
        for k, phase in enumerate(state["phases"]):
            if not isinstance(phase, tuple) or len(phase) != 2 or _kind(phase[0]) != "int":
                raise _fail("state.phases", f"phase {k} is (first round, cycle)")
            _actions(policy, phase[1], "state.phases")
    if "history" in state:
        _history(policy, state)


_RECORD_KEYS = {
    "arm": {"start", "survivors", "plays"},
    "pair": {"start", "survivors", "pairs", "pair_rounds", "length"},
}
_RECORD_OPTIONAL = {"pair_queries", "pairs_skipped"}


def _history(policy: Any, state: Mapping[str, Any]) -> None:
    """Per epoch: its start (a past round, in order), the surviving arms and the counts of its plays."""
    t, d = state["t"], policy.d
    keys = _RECORD_KEYS["pair" if getattr(policy, "unit", "arm") == "pair" else "arm"]
    last = 0
    for k, record in enumerate(state["history"]):
        where = f"state.history[{k}]"
        if not isinstance(record, Mapping) or not keys <= set(record) <= keys | _RECORD_OPTIONAL:
            raise _fail(where, f"an epoch's record holds {sorted(keys)}")
        for key, value in record.items():
            if key == "survivors":
                if (
                    not isinstance(value, list)
                    or not all(_kind(i) == "int" and 0 <= i < d for i in value)
                    or value != sorted(set(value))
                ):
                    raise _fail(f"{where}.survivors", f"expected increasing arms below {d}")
            elif _kind(value) != "int" or not 0 <= value <= _MAX_INT:
                raise _fail(f"{where}.{key}", f"expected a count, got {value!r:.40}")
        if not last <= record["start"] < t:
            raise _fail(f"{where}.start", f"epochs start in order at past rounds, got {record['start']}")
        last = record["start"]


def check_state(policy: Any, state: Mapping[str, Any]) -> None:
    """Refuse a decoded ``state`` that ``policy`` (fresh, built from the same header) could not have reached.

    Raises ``ValueError`` naming the field (``state.FIELD: ...``).
    """
    if not isinstance(state, Mapping):
        raise _fail("state", "expected a mapping")
    _structure(state, policy.get_state(), "state", "state")
    _numbers(state, "state")
    _protocol(policy, state)
    index = state.get("index")
    if isinstance(index, Mapping):
        _index(policy, index, state["observed_rounds"])
        unreachable = state.get("unreachable")
        if (
            isinstance(unreachable, np.ndarray)
            and (unreachable & ((index["counts"] > 0) | (state["in_flight"] > 0))).any()
        ):
            raise _fail("state.unreachable", "an arm in no action was observed or selected")
    _schedule(policy, state)
    _replayed(policy, state)


def _replayed(policy: Any, state: Mapping[str, Any]) -> None:
    """What the schedule derives from other fields: the grid, the warm-up cover, the cycle, the stretch."""
    if state.get("cover") is not None and hasattr(policy, "warmup_cover"):
        if not np.array_equal(state["cover"], policy.warmup_cover()):
            raise _fail("state.cover", "is not the warm-up cover of this space")
    if "grid" in state and hasattr(policy, "phase_grid"):
        saved = {k: getattr(policy, k) for k in ("phase_start", "horizon", "t", "warmup_rounds") if hasattr(policy, k)}
        try:
            for k in saved:
                if k in state:
                    setattr(policy, k, state[k])
            expected = policy.phase_grid()
            allowed = [expected.tolist()]
            if getattr(policy, "warmup_rounds", 0) and len(expected):
                policy.warmup_rounds = 0  # the paper's grid of the phase, before the warm-up is cut out
                raw = policy.phase_grid()
                # learners saved before the short first epoch was merged into the next kept every grid point
                allowed.append([int(expected[0]), *(int(g) for g in raw if g > expected[0])])
        finally:
            for k, v in saved.items():
                setattr(policy, k, v)
        if state["grid"].tolist() not in allowed:
            raise _fail("state.grid", f"is not the epoch grid of this phase ({expected.tolist()})")
    history = state.get("history")
    if state.get("cycle") is not None:
        if "phases" in state:
            if not state["phases"] or not np.array_equal(state["phases"][0][1], state["cycle"]):
                raise _fail("state.cycle", "must be the first phase's cycle")
        elif history and len(state["cycle"]) != history[-1]["plays"]:
            raise _fail("state.cycle", f"the epoch plays {history[-1]['plays']} representatives")
    if history and "active" in state:
        if history[-1]["survivors"] != np.flatnonzero(state["active"]).tolist():
            raise _fail(f"state.history[{len(history) - 1}].survivors", "must be the surviving arms")
    stretch = state["_stretch"]
    if stretch is None:
        return
    candidates = []
    if state.get("action") is not None:
        candidates.append(state["action"][None])
    for name in ("cycle", "cover"):
        if state.get(name) is not None:
            candidates.append(state[name])
    for _, cycle in state.get("phases", []):
        candidates.append(cycle)
    if not candidates:
        if len(stretch.actions) != 1:
            raise _fail("state._stretch", "a stretch of one action per round")
        return
    rows = stretch.actions
    for cycle in candidates:
        if len(rows) == len(cycle) and any(np.array_equal(rows, np.roll(cycle, -k, axis=0)) for k in range(len(cycle))):
            return
    raise _fail("state._stretch", "is not a turn of the held action, the cycle or the warm-up cover")
