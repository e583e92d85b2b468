"""What ``cmab-milp verify`` finds: one :class:`RunCheck` per run, a :class:`VerifyReport`, and the comparisons.

A run is compared field by field with its re-run: the curve's ``t``, ``regret``,
``queries`` and ``rounds`` columns at every recorded point (bit for bit, as the CSV
holds them: 17 significant digits read back exactly), then the totals
(``regret``, ``queries``, ``rounds``, ``alpha_regret``, ``alpha``) and the extra queries. Times
(``runtime``, ``wall_seconds``, ...) are never compared. :func:`first_difference` names the first
point and field that differ.

Example
-------
>>> import numpy as np
>>> old = {"t": np.array([1, 10, 100]), "regret": np.array([0.5, 2.0, 7.25]),
...        "queries": np.array([1, 10, 100]), "rounds": np.array([1, 10, 100])}
>>> new = {**old, "regret": np.array([0.5, 2.0, 7.250000000000001])}
>>> first_difference(old, new)
'regret differs first at t=100 (recorded 7.25, re-run 7.250000000000001)'
>>> first_difference(old, old) is None
True
>>> print(RunCheck("CUCB", 3, "differs", first_difference(old, new)))
CUCB seed 3: regret differs first at t=100 (recorded 7.25, re-run 7.250000000000001)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cmab_milp.provenance import describe

__all__ = ["COMPARED_COLUMNS", "COMPARED_TOTALS", "STATUSES", "RunCheck", "VerifyReport", "first_difference"]

#: Curve columns compared bit for bit (the others are times).
COMPARED_COLUMNS: tuple[str, ...] = ("t", "regret", "queries", "rounds")
#: Totals compared bit for bit (when either side has them).
COMPARED_TOTALS: tuple[str, ...] = ("regret", "queries", "rounds", "alpha_regret", "alpha")
#: A run's result: identical to its re-run, or why not.
STATUSES: tuple[str, ...] = ("identical", "differs", "edited", "truncated", "missing", "failed")


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of two recorded numbers (NaN equals NaN, -0.0 differs from 0.0, 1 equals 1.0).

    >>> _same(1, 1.0), _same(float("nan"), float("nan")), _same(0.0, -0.0), _same(0.1 + 0.2, 0.3)
    (True, True, False, False)
    """
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def first_difference(recorded: Mapping[str, np.ndarray], rerun: Mapping[str, np.ndarray]) -> str | None:
    """The first recorded point and field where the curves differ, as one line; ``None`` if identical."""
    n = min(len(recorded["t"]), len(rerun["t"]))
    for row in range(n):
        for column in COMPARED_COLUMNS:
            a, b = recorded[column][row].item(), rerun[column][row].item()
            if not _same(a, b):
                if column == "t":
                    return f"the recorded steps differ at point {row + 1} (recorded t={a}, re-run t={b})"
                return f"{column} differs first at t={recorded['t'][row]} (recorded {a!r}, re-run {b!r})"
    if len(recorded["t"]) != len(rerun["t"]):
        return f"the file records {len(recorded['t'])} points, the re-run {len(rerun['t'])}"
    return None


def totals_difference(recorded: Mapping[str, Any], rerun: Mapping[str, Any]) -> str | None:
    """The first total that differs (``totals.regret differs (recorded x, re-run y)``); ``None`` if none."""
    for key in COMPARED_TOTALS:
        if key not in recorded and key not in rerun:
            continue
        a, b = recorded.get(key), rerun.get(key)
        numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
        if not numbers or not _same(a, b):
            return f"totals.{key} differs (recorded {a!r}, re-run {b!r})"
    return None


def extras_difference(recorded: Any, rerun: Any) -> str | None:
    """Whether the extra queries (beyond the schedule's) differ, as JSON data."""
    if json.dumps(recorded, sort_keys=True) == json.dumps(rerun, sort_keys=True):
        return None
    count = len(recorded) if isinstance(recorded, list) else "?"
    return f"the extra queries differ (recorded {count}, re-run {len(rerun)})"


@dataclass(frozen=True)
class RunCheck:
    """One run (policy, seed) of a results folder checked against its re-run.

    ``status`` is one of :data:`STATUSES`; ``detail`` says why (one line, empty when identical);
    ``recorded`` / ``rerun`` are the versions and machines on both sides (:mod:`cmab_milp.provenance`).
    """

    policy: str
    seed: int
    status: str
    detail: str = ""
    recorded: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    rerun: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def identical(self) -> bool:
        """Whether the run is bit-identical to its re-run."""
        return self.status == "identical"

    def __str__(self) -> str:
        return f"{self.policy} seed {self.seed}: {self.detail or self.status}"


@dataclass
class VerifyReport:
    """What ``verify`` found in a results folder: per run (``runs``), and for the folder as a whole.

    ``problems`` are findings that make the folder untrusted beyond its runs (``summary.json`` not
    matching its runs, a seed list changed, a file not part of the run); ``notes`` say what could not
    be checked, or which versions differ. :attr:`exit_code` is the command's: 0 every run identical
    and no problem, 1 something differs or was edited, 2 some run could not be re-run here.
    """

    folder: str
    runs: list[RunCheck]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    here: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def identical(self) -> bool:
        """Every checked run identical to its re-run, and nothing wrong with the folder."""
        return not self.problems and all(run.identical for run in self.runs)

    @property
    def exit_code(self) -> int:
        """0 all identical; 1 any run differs, or the folder was edited or is incomplete; 2 only unchecked runs."""
        if self.identical:
            return 0
        if self.problems or any(run.status not in ("identical", "failed") for run in self.runs):
            return 1
        return 2

    def counts(self) -> dict[str, int]:
        """How many runs have each status (statuses that occur only)."""
        out: dict[str, int] = {}
        for run in self.runs:
            out[run.status] = out.get(run.status, 0) + 1
        return out

    def versions(self) -> list[str]:
        """Lines naming the versions and machines the runs were recorded with, and this one's."""
        seen: dict[str, int] = {}
        for run in self.runs:
            if run.status != "missing":
                text = describe(run.recorded)
                seen[text] = seen.get(text, 0) + 1
        lines = [f"recorded with: {text} ({n} run{'s' * (n != 1)})" for text, n in seen.items()]
        if self.here is not None:
            lines.append(f"re-run with:   {describe(self.here)}")
        return lines

    def __str__(self) -> str:
        tally = ", ".join(f"{n} {status}" for status, n in self.counts().items()) or "no runs"
        verdict = "identical" if self.identical else "NOT identical"
        checked = f"{len(self.runs)} run{'s' * (len(self.runs) != 1)} checked"
        lines = [f"{self.folder}: {checked} ({tally}): {verdict}", *self.versions()]
        rows = [("policy", "seed", "result", "detail")]
        rows += [(r.policy, str(r.seed), r.status, r.detail) for r in self.runs]
        widths = [max(len(row[k]) for row in rows) for k in range(3)]
        for row in rows:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
        lines = [line.rstrip() for line in lines]
        lines += [f"problem: {text}" for text in self.problems]
        lines += [f"note: {text}" for text in self.notes]
        return "\n".join(lines)
