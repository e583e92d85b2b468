"""Close names for "did you mean" hints: same letters in another case, a part of the name, then edit distance.

>>> close_names("GEANT", ["sndlib/geant", "topozoo/Geant2012", "topozoo/Abilene", "topozoo/Geant2001"])
['sndlib/geant', 'topozoo/Geant2001', 'topozoo/Geant2012']
>>> close_names("uk", ["at1.at", "uk1.uk", "be1.be"])
['uk1.uk']
>>> close_names("Abilen", ["topozoo/Abilene", "topozoo/Arnes"])
['topozoo/Abilene']
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["close_names", "shown_names"]


def _forms(text: str) -> tuple[str, ...]:
    """The lower-cased name, and its last ``/`` segment when it has one."""
    low = text.lower()
    tail = low.rsplit("/", 1)[-1]
    return (low, tail) if tail != low else (low,)


def close_names(name: Any, candidates: Iterable[Any], n: int = 5, cutoff: float = 0.6) -> list:
    """Up to ``n`` of ``candidates`` that ``name`` probably meant, best first (compared as text, ignoring case).

    Ranked: equal ignoring case (the whole candidate or its last ``/`` segment), then one contains
    the other, then by ``difflib``'s similarity ratio (at least ``cutoff``); ties in candidate order,
    sorted by name within a rank.
    """
    want = str(name).lower()
    if not want:
        return []
    ranked: list[tuple[int, float, str, Any]] = []
    for candidate in candidates:
        forms = _forms(str(candidate))
        if want in forms:
            ranked.append((0, 0.0, str(candidate), candidate))
        elif any(want in f or (len(f) >= 2 and f in want) for f in forms):
            ranked.append((1, 0.0, str(candidate), candidate))
        else:
            ratio = max(difflib.SequenceMatcher(None, want, f).ratio() for f in forms)
            if ratio >= cutoff:
                ranked.append((2, -ratio, str(candidate), candidate))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:n]]


def shown_names(items: list, limit: int = 40, first: int = 20) -> str:
    """All of ``items`` (repr, comma-separated) when at most ``limit``, else the first ``first`` and the count.

    >>> shown_names(["a", "b"])
    "'a', 'b'"
    >>> shown_names(list(range(50)), first=3)
    '0, 1, 2, ... (50 in all)'
    """
    if len(items) <= limit:
        return ", ".join(repr(x) for x in items)
    return ", ".join(repr(x) for x in items[:first]) + f", ... ({len(items)} in all)"
