"""The terminal table of a run's ``summary.json``: mean ± std per policy, its seed count, and what did not run.

A row says how many of the run's seeds it averages (``n``); a row with fewer than all of them is marked
``*`` (incomplete), a policy with no finished seed is listed as not run, and the missing jobs are named,
so that a stopped or resumed run cannot pass for a finished one. One seed has no standard deviation:
its cells show the value alone.

Example
-------
>>> same = {"mean": 746.7, "std": 0.0}
>>> stats = dict.fromkeys(("regret", "queries", "rounds", "wall_seconds", "oracle_seconds"), same)
>>> summary = {
...     "policies": {"CUCB": stats, "AROQ": stats},
...     "policy_info": {"CUCB": {"seeds": [0]}, "AROQ": {"seeds": [0, 1, 2]}, "SROQ": {"seeds": []}},
...     "problem": {"seeds": [0, 1, 2]},
...     "missing_jobs": ["CUCB seed 1", "CUCB seed 2", "SROQ seed 0", "SROQ seed 1", "SROQ seed 2"],
... }
>>> print(summary_table(summary))
mean ± standard deviation over seeds; n: seeds finished of 3
policy  n     regret       queries      rounds       wall s       oracle s
CUCB    1/3*  746.7        746.7        746.7        746.7        746.7
AROQ    3/3   746.7 ± 0.0  746.7 ± 0.0  746.7 ± 0.0  746.7 ± 0.0  746.7 ± 0.0
* incomplete: fewer seeds than the run asks for (resume with --resume)
not run (no seed finished): SROQ
missing jobs (5): CUCB seed 1, CUCB seed 2, SROQ seed 0, SROQ seed 1, SROQ seed 2
note: AROQ's regret is the same on all 3 seeds (exactly equal, not rounded)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["mean_std", "summary_table"]

_COLUMNS = ("regret", "queries", "rounds", "wall_seconds", "oracle_seconds")
_HEADERS = ("regret", "queries", "rounds", "wall s", "oracle s")


def mean_std(mean: float, std: float | None) -> str:
    """``mean ± std`` in one format: both with the decimals that give the mean 4 significant digits.

    ``std=None`` (one seed: no standard deviation) shows the mean alone.

    >>> mean_std(3220.4, 391.6), mean_std(45.8, 3.214), mean_std(0.24681, 0.0751), mean_std(0.0, 0.0)
    ('3,220 ± 392', '45.80 ± 3.21', '0.2468 ± 0.0751', '0 ± 0')
    >>> mean_std(746.7, None)
    '746.7'
    """
    size = abs(mean)
    decimals = 0 if size >= 1000 or size == 0 else min(6, max(0, 3 - math.floor(math.log10(size))))
    if std is None:
        return f"{mean:,.{decimals}f}"
    return f"{mean:,.{decimals}f} ± {std:,.{decimals}f}"


def summary_table(summary: dict[str, Any]) -> str:
    """The per-policy table of a run (see the module docstring); ``alpha-regret`` / ``alpha`` columns when some
    policy ran an approximate oracle (Algorithm 5: ``-`` for the exact ones)."""
    policies = summary["policies"]
    info = summary.get("policy_info", {})
    asked = len(summary.get("problem", {}).get("seeds", [])) or None
    extra = [m for m in ("alpha_regret", "alpha") if any(m in stats for stats in policies.values())]
    rows = [("policy", "n", *_HEADERS, *(m.replace("_", "-") for m in extra))]
    notes, incomplete = [], False
    for name, stats in policies.items():
        seeds = len(info.get(name, {}).get("seeds", [])) or None
        single = seeds == 1
        cell = {m: mean_std(stats[m]["mean"], None if single else stats[m]["std"]) for m in stats}
        short = asked is not None and seeds is not None and seeds < asked
        incomplete |= short
        count = "?" if seeds is None else (f"{seeds}/{asked}" if asked else str(seeds)) + ("*" if short else "")
        rows.append((name, count, *(cell[m] for m in _COLUMNS), *(cell.get(m, "-") for m in extra)))
        if seeds is not None and seeds > 1 and stats["regret"]["std"] == 0:
            notes.append(f"note: {name}'s regret is the same on all {seeds} seeds (exactly equal, not rounded)")
    lines = ["mean ± standard deviation over seeds" + (f"; n: seeds finished of {asked}" if asked else "")]
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if incomplete:
        lines.append("* incomplete: fewer seeds than the run asks for (resume with --resume)")
    not_requested = set(summary.get("on_request_not_run", []))
    not_run = [n for n, i in info.items() if n not in policies and n not in not_requested]
    if not_run:
        lines.append(f"not run (no seed finished): {', '.join(not_run)}")
    missing = summary.get("missing_jobs", [])
    if missing:
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        lines.append(f"missing jobs ({len(missing)}): {shown}")
    return "\n".join(lines + notes)
