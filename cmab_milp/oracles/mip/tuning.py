"""The ``highs`` backend's tuning choices: one typed, documented record, today's measured choices as defaults.

Each field turns a speed-up on or off (or picks among exact methods); none changes
which value is optimal, and every one keeps the tie rule (it depends on the query
and the space only). The measurements behind the defaults are in
``docs/performance.md`` (section "Oracles").

Set them per oracle: ``make_oracle(space, "highs", tuning={"side_starts": False})``
(a mapping of field names, or a :class:`HighsTuning`); a problem file's policy entry
takes the same mapping as ``tuning = {side_starts = false}``. Unknown names and
values of the wrong type are refused with ``ValueError`` before any work.

>>> HighsTuning.of({"minus_paths": False}).minus_paths, HighsTuning().minus_paths
(False, True)
>>> try:
...     HighsTuning.of({"side_start": False})
... except ValueError as exc:
...     print(str(exc)[:60])
tuning: unknown option 'side_start'; the highs backend's tun
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["HighsTuning"]


@dataclass(frozen=True)
class HighsTuning:
    """What the ``highs`` backend does beyond the plain MILP; each choice is exact either way.

    MIP queries (:mod:`~cmab_milp.oracles.mip`):

    prepare_queries:
        Set each query's MIP start, candidate repair and candidate cuts (:func:`~.starts.prepare_query`).
    candidate_cuts:
        Collect the cuts of every integer candidate HiGHS meets (not only of its answer), for
        formulations that name a start heuristic (s-t paths).
    side_starts:
        Give queries on a base space plus side rows the Lagrangian start of :mod:`~.side_starts`.
    solve_cores:
        With arms fixed, answer by enumerating the few arms left free (the region bound proves it).
    side_cover_cuts:
        Also add extended cover cuts of knapsack side rows (:mod:`~.cover_cuts`); off: slower.
    fix_arms:
        Fix the arms a start's Lagrangian bounds prove (side starts; shortest-path starts).

    Norm queries (:mod:`~cmab_milp.oracles.norm.solver`):

    uniform_start:
        Sign +1's first incumbent also ascends from the uniform point's gradient step.
    space_cuts:
        The space's root cuts in the norm model before its first MILP.
    minus_outer:
        Sign -1 by disaggregated tangents (:mod:`~cmab_milp.oracles.norm.outer`) instead of the secants; off: slower.
    minus_branch:
        Sign -1 by :mod:`~cmab_milp.oracles.norm.minus_branch` when ``M`` is definite and the space has a
        combinatorial linear oracle; otherwise the secant MILPs.
    plus_branch:
        Sign +1 by :mod:`~cmab_milp.oracles.norm.plus_branch` where the space's MILP needs lazy cuts
        (``"always"``: on every space with a combinatorial oracle; ``False``: never).
    plus_branch_definite:
        The concave branch only with ``M`` definite (``False``: an indefinite ``M`` too, on its PSD majorant).
    branch_light_start:
        The concave branch's first incumbent: the hints and an ascent only.
    minus_paths, plus_paths:
        s-t paths of cyclic graphs by the LP branch and bounds of :mod:`~cmab_milp.oracles.norm.minus_paths`
        (sign -1) and :mod:`~cmab_milp.oracles.norm.plus_paths` (sign +1).
    """

    prepare_queries: bool = True
    candidate_cuts: bool = True
    side_starts: bool = True
    solve_cores: bool = True
    side_cover_cuts: bool = False
    fix_arms: bool = True
    uniform_start: bool = True
    space_cuts: bool = True
    minus_outer: bool = False
    minus_branch: bool = True
    plus_branch: bool | str = True
    plus_branch_definite: bool = False
    branch_light_start: bool = True
    minus_paths: bool = True
    plus_paths: bool = True

    @classmethod
    def of(cls, value: Any) -> HighsTuning:
        """``None`` (the defaults), a :class:`HighsTuning`, or a mapping of field names to values."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"tuning must be a mapping of option names to values, got {type(value).__name__}")
        known = {f.name: f for f in fields(cls)}
        for key, item in value.items():
            if key not in known:
                raise ValueError(
                    f"tuning: unknown option {key!r}; the highs backend's tuning options: {', '.join(known)}"
                )
            allowed = "true, false or 'always'" if key == "plus_branch" else "true or false"
            if not (isinstance(item, bool) or (key == "plus_branch" and item == "always")):
                raise ValueError(f"tuning: option {key!r} must be {allowed}, got {item!r}")
        return replace(cls(), **dict(value))
