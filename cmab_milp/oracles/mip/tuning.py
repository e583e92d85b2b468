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

The options are set and stored flat (their names above are the public ones); :attr:`HighsTuning.norm` and
:attr:`HighsTuning.mip` read them grouped by the method that reads them (:data:`OPTION_GROUPS`):

>>> HighsTuning.of({"plus_branch_try": 0}).norm.plus_branch.budget
0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["OPTION_GROUPS", "HighsTuning", "OptionGroup"]


# -- readers of the norm searches' numeric options (a field's ``metadata["read"]``: name, value -> the value kept)
def _count(name: str, value: Any) -> int:
    """A whole number >= 0 (``true``/``false`` refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"tuning: option {name!r} must be a whole number >= 0, got {value!r}")
    return value


def _share(name: str, value: Any) -> float:
    """A number in ``[0, 1]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"tuning: option {name!r} must be a number in [0, 1], got {value!r}")
    return float(value)


def _positives(name: str, value: Any) -> tuple[float, ...]:
    """A list of finite numbers > 0 (kept as a tuple; empty allowed)."""
    ok = isinstance(value, Sequence) and not isinstance(value, str)
    ok = ok and all(not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v < math.inf for v in value)
    if not ok:
        raise ValueError(f"tuning: option {name!r} must be a list of finite numbers > 0, got {value!r}")
    return tuple(float(v) for v in value)


#: Each option under the method that reads it: ``group -> {short name: flat field name}`` (``norm`` one level
#: deeper, one group per norm method of :mod:`cmab_milp.oracles.norm`; ``branch``, ``paths``: the searches that both
#: signs' methods of a family share; ``engine``: the norm solver's own steps). Every field stands in exactly one group.
OPTION_GROUPS: dict[str, dict[str, Any]] = {
    "mip": {
        name: name
        for name in (
            "prepare_queries",
            "root_cuts_nonpositive",
            "candidate_cuts",
            "side_starts",
            "solve_cores",
            "side_cover_cuts",
            "fix_arms",
            "path_start_min_arms",
            "path_start_min_arcs",
            "side_min_arms",
            "positive_cost_options",
        )
    },
    "norm": {
        "engine": {
            "space_cuts": "space_cuts",
            "exact_row_bounds": "exact_row_bounds",
            "recovery_enumeration": "recovery_enumeration",
        },
        "starts": {
            "uniform": "uniform_start",
            "plus_restarts": "plus_restart_budget",
            "plus_local_checks": "plus_local_checks",
            "minus_local_checks": "minus_local_checks",
        },
        "plus_paths": {
            "enabled": "plus_paths",
            "vertex_taus": "paths_vertex_taus",
            "size_form": "paths_size_form",
            "plain": "paths_plain",
            "plain_share": "paths_plain_share",
        },
        "minus_paths": {"enabled": "minus_paths"},
        "paths": {
            name.removeprefix("paths_"): name
            for name in (
                "paths_early",
                "paths_unoriented",
                "paths_incumbent_tangents",
                "paths_visit_branch",
                "paths_in_out",
                "paths_both_points",
                "paths_st_lazy",
                "paths_dense_bound",
                "paths_shifted_tangents",
                "paths_chord",
                "paths_heuristics",
                "paths_local_search",
                "paths_purge_above",
                "paths_idle_lps",
            )
        },
        "plus_branch": {
            "enabled": "plus_branch",
            "definite": "plus_branch_definite",
            "budget": "plus_branch_try",
            "light_start": "branch_light_start",
            **{
                name.removeprefix("concave_"): name
                for name in (
                    "concave_early",
                    "concave_steps",
                    "concave_overestimator",
                    "concave_plain_with_conflicts",
                    "concave_shift_down",
                    "concave_reform",
                    "concave_reform_uniform",
                    "concave_tune_after",
                    "concave_tune_after_approximate",
                )
            },
        },
        "minus_branch": {
            "enabled": "minus_branch",
            "early": "branch_early",
            "shift": "branch_shift",
            "steps": "branch_steps",
        },
        "branch": {"fractional_matchings": "fractional_matchings"},
        "plus_outer": {"presolve": "plus_presolve"},
        "minus_outer": {"enabled": "minus_outer"},
    },
}


class OptionGroup:
    """A read-only view of a tuning record's options under their group's short names (:data:`OPTION_GROUPS`).

    Reads go to the record itself, so a view never disagrees with the flat options.

    >>> view = HighsTuning(concave_steps=3).norm.plus_branch
    >>> view.steps, view.names()["steps"], sorted(view.as_dict())[:2]
    (3, 'concave_steps', ['budget', 'definite'])
    """

    __slots__ = ("_names", "_record")

    def __init__(self, record: Any, names: Mapping[str, Any]):
        object.__setattr__(self, "_record", record)
        object.__setattr__(self, "_names", names)

    def __getattr__(self, short: str) -> Any:
        try:
            name = self._names[short]
        except KeyError:
            raise AttributeError(f"no tuning option {short!r} here; its options: {', '.join(self._names)}") from None
        return getattr(self._record, name) if isinstance(name, str) else OptionGroup(self._record, name)

    def __setattr__(self, short: str, value: Any) -> None:
        raise AttributeError("tuning views are read-only: set the flat option (HighsTuning.of, dataclasses.replace)")

    def __dir__(self) -> list[str]:
        return list(self._names)

    def names(self) -> dict[str, Any]:
        """Short name -> the flat option's name (a nested dict for a group of groups)."""
        return dict(self._names)

    def as_dict(self) -> dict[str, Any]:
        """Short name -> value (nested for a group of groups)."""
        return {
            short: getattr(self._record, name) if isinstance(name, str) else OptionGroup(self._record, name).as_dict()
            for short, name in self._names.items()
        }

    def __repr__(self) -> str:
        return f"OptionGroup({self.as_dict()!r})"


_COUNT = {"read": _count}
_SHARE = {"read": _share}
_POSITIVES = {"read": _positives}


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
    path_start_min_arms, path_start_min_arcs, side_min_arms:
        Sizes from which s-t paths get MIP starts and side rules get side plans (non-negative integers).

    Norm queries (:mod:`~cmab_milp.oracles.norm.solver`):

    uniform_start:
        Sign +1's first incumbent also ascends from the uniform point's gradient step.
    space_cuts:
        The space's root cuts in the norm model before its first MILP.
    minus_outer:
        Sign -1 by disaggregated tangents (:mod:`.outer.minus`) instead of the secants; off: slower.
    minus_branch:
        Sign -1 by :mod:`.branch.minus` when ``M`` is definite and the space has a
        combinatorial linear oracle; otherwise the secant MILPs.
    plus_branch:
        Sign +1 by :mod:`.branch.plus` where the space's MILP needs lazy cuts
        (``"always"``: on every space with a combinatorial oracle; ``False``: never).
    plus_branch_definite:
        The concave branch only with ``M`` definite (``False``: an indefinite ``M`` too, on its PSD majorant).
    branch_light_start:
        The concave branch's first incumbent: the hints and an ascent only.
    minus_paths, plus_paths:
        s-t paths of cyclic graphs by the LP branch and bounds of :mod:`.paths.minus`
        (sign -1) and :mod:`.paths.plus` (sign +1).

    The searches' own steps (``paths_*``, ``branch_*``, ``concave_*``, ``fractional_matchings``,
    ``exact_row_bounds``): each field's comment below says what it turns on. The norm searches' budgets
    (``plus_branch_try``, ``*_local_checks``, ``*_steps``, ``concave_tune_after*``, ...) are numbers, checked
    by ``of``:

    >>> HighsTuning.of({"plus_branch_try": 0, "paths_vertex_taus": [0.5, 1.0]}).paths_vertex_taus
    (0.5, 1.0)
    """

    prepare_queries: bool = True
    #: Root cuts also for queries whose arm costs are all <= 0 where the formulation says no cut can pay (s-t paths
    #: whose rows hold every s-t cut: a cycle only lowers such an objective). Off: the separators found nothing on
    #: the measured shortest-path queries while their LPs cost time (docs/performance.md, "Oracles").
    root_cuts_nonpositive: bool = False
    candidate_cuts: bool = True
    side_starts: bool = True
    solve_cores: bool = True
    side_cover_cuts: bool = False
    fix_arms: bool = True
    # -- graph and side-row thresholds (oracles/mip/starts.py): from which size a speed-up pays
    #: s-t paths get the MIP start of :mod:`~.graph_starts` (and its fixing, candidate repair and cuts, and the
    #: positive-cost HiGHS options) from this many edges; below, their queries solve in milliseconds.
    path_start_min_arms: int = field(default=100, metadata=_COUNT)
    #: ... and digraphs with cycles from ``min(path_start_min_arms, path_start_min_arcs)`` arcs (their LP is weaker).
    path_start_min_arcs: int = field(default=40, metadata=_COUNT)
    #: Side plans (:mod:`~.side_starts`) for spaces of at least this many arms (below, a plan costs more than it saves).
    side_min_arms: int = field(default=50, metadata=_COUNT)
    #: A query with some positive arm cost on a formulation family that has its own HiGHS options for such queries
    #: (:data:`~.options.FAMILY_POSITIVE_COST_OPTIONS`: paths without restarts) runs with them.
    positive_cost_options: bool = True
    uniform_start: bool = True
    space_cuts: bool = True
    minus_outer: bool = False
    minus_branch: bool = True
    plus_branch: bool | str = True
    plus_branch_definite: bool = False
    branch_light_start: bool = True
    minus_paths: bool = True
    plus_paths: bool = True
    # -- s-t paths, both signs (norm/paths/minus.py, norm/paths/plus.py)
    #: Split a node (its tangents kept for the children) as soon as an LP point that violates no row of the space
    #: is worth more than the incumbent: every bound of the node is at least that point's value.
    paths_early: bool = True
    #: Leave out the orientation columns of undirected paths (a smaller LP) and separate s-t cuts ``a(delta(S)) >= 1``
    #: (``s`` in ``S``, ``t`` not; one max flow) instead: same polytope once separated, ~25% faster at f = 1.
    paths_unoriented: bool = True
    #: Add ``M``'s tangent at every new incumbent.
    paths_incumbent_tangents: bool = True
    #: Branch on the visit columns of undirected paths first (a node of the graph on the path or not) when one is
    #: more fractional than ``the search's visit fraction``.
    paths_visit_branch: bool = True
    #: Kelley rounds with in-out separation: tangents at the midpoint of the LP point and the best point of the
    #: node's relaxation seen so far (when they cut the LP point off; else at the LP point).
    paths_in_out: bool = True
    #: Tangents at the LP point as well as at the separation point.
    paths_both_points: bool = False
    #: Undirected: separate the s-t cuts (one max flow) only in rounds that found no tangent to add (then another LP
    #: follows anyway, whose point is checked).
    paths_st_lazy: bool = True
    #: :func:`safe_bound` on one dense copy of the rows (False: the sparse rows and the tangents apart).
    paths_dense_bound: bool = True
    #: Also bound with tangents of the shifted matrix of :func:`~.branch.minus.relaxation_matrix`.
    paths_shifted_tangents: bool = True
    #: Bound ``t`` with the chord form of :mod:`.paths_chord` instead of the shifted matrix (``L``: the fewest edges of
    #: an s-t path avoiding the excluded arms).
    paths_chord: bool = True
    #: Incumbent heuristics at every LP point (False: integral LP points only).
    paths_heuristics: bool = True
    #: Improve each new incumbent by :func:`~.paths.local_search.improve_path` (sub-paths swapped for short detours).
    paths_local_search: bool = True
    #: Also bound with the overestimator's size term (``kappa |a| (m - |a|)``, when ``kappa > 0``).
    paths_size_form: bool = True
    #: Also bound with the plain (diagonal) form, not only the vertex forms (always when no vertex form is made).
    paths_plain: bool = True
    # -- the branches on a combinatorial linear oracle (norm/branch/minus.py, norm/branch/plus.py)
    #: Split a node as soon as a relaxed point is worth more than the incumbent.
    branch_early: bool = True
    #: Bound with the shifted matrix of :func:`relaxation_matrix` (False: ``M`` itself, as before).
    branch_shift: bool = True
    #: General (non-bipartite) matchings: linear queries over the fractional matching polytope
    #: (:func:`~cmab_milp.oracles.backends.combinatorial.prepare_fractional_matching`), not the blossom algorithm.
    fractional_matchings: bool = True
    #: Split a node as soon as a relaxed point is worth more than the incumbent.
    concave_early: bool = True
    #: Also try :func:`~.branch.overestimator.concave_overestimator` (size and conflict terms) at the root.
    concave_overestimator: bool = True
    #: On spaces with conflicts, also try the diagonal alone at the root (off: it lost or tied on K(10,12) and the
    #: crew's queries, and skipping it is faster there: docs/performance.md, "Oracles").
    concave_plain_with_conflicts: bool = False
    #: A node's own form: the root's lowered on the node's free arms (:meth:`ConcaveBranch.node_form`); ``False``: a
    #: new shift of the node's arms (matchings only, :func:`~.branch.overestimator.shifted_form`).
    concave_shift_down: bool = True
    #: Whether a new shift also tries ``lambda_max I`` (the scaled candidate won on every crew node tried).
    concave_reform_uniform: bool = False
    # -- Glover's rows (norm/lifting.py)
    #: Glover's row bounds from the space's combinatorial linear oracle where it is cheap (:func:`exact_row_bounds`).
    exact_row_bounds: bool = True
    # -- the norm searches' budgets and steps (norm/solver.py, norm/branch/minus.py, norm/branch/plus.py,
    # -- norm/paths/plus.py): numbers, read by the field's metadata (a whole number >= 0, a share, a list)
    #: Sign +1 where the outer approximation serves: the concave branch first tries this many nodes (0: never).
    plus_branch_try: int = field(default=100, metadata=_COUNT)
    #: Linear queries of the restarts around sign +1's first incumbent (:func:`~.local_search.ascend_from_neighbours`;
    #: 0: none). Only where a linear query is an LP: elsewhere each is a branch and bound and costs more than it saves.
    plus_restart_budget: int = field(default=60, metadata=_COUNT)
    #: Feasibility checks of the swaps that end sign +1's first incumbent (:func:`~.local_search.improve_locally`;
    #: 0: none).
    plus_local_checks: int = field(default=40, metadata=_COUNT)
    #: HiGHS's presolve in sign +1's outer-approximation MILPs (off: their lifted rows are dense, presolve's
    #: restarts cost more than they save).
    plus_presolve: bool = False
    #: Feasibility checks of the swaps that end sign -1's first incumbent (0: none; the search alone then finds
    #: the optimum).
    minus_local_checks: int = field(default=200, metadata=_COUNT)
    #: Frank-Wolfe steps per node of the branch on a linear oracle (sign -1, :mod:`~.norm.branch.minus`).
    branch_steps: int = field(default=12, metadata=_COUNT)
    #: Frank-Wolfe steps per node of the concave branch (sign +1, :mod:`~.norm.branch.plus`; 0: a node's first
    #: plane only).
    concave_steps: int = field(default=12, metadata=_COUNT)
    #: The concave branch tunes its root's diagonal (:meth:`~.norm.branch.plus.ConcaveBranch.tune`) once it has
    #: taken this many nodes (0: never).
    concave_tune_after: int = field(default=300, metadata=_COUNT)
    #: The same in the certified approximate mode (``norm_gap``; the tuning costs ~150 nodes). Unused when
    #: ``concave_tune_after`` is 0.
    concave_tune_after_approximate: int = field(default=100, metadata=_COUNT)
    #: A node of the concave branch makes its own form when its free arms are at most this share of its parent's
    #: form's (0: never).
    concave_reform: float = field(default=0.9, metadata=_SHARE)
    #: Sign +1 on s-t paths: the plain form (with ``paths_plain``) only where the vertex forms' diagonal shift (trace)
    #: is above this share of its own (0: always, as before). With a diagonal ``M`` the plain form's shift is the least.
    paths_plain_share: float = field(default=0.9, metadata=_SHARE)
    #: Sign +1 on s-t paths (:mod:`~.norm.paths.plus`): the star terms' weights ``tau`` (times the mean
    #: variance), one vertex form each (empty: the diagonal form alone).
    paths_vertex_taus: tuple[float, ...] = field(default=(1.0,), metadata=_POSITIVES)
    #: s-t paths, both signs (:mod:`~.norm.paths.lp`): tangent rows without a dual price in the last
    #: ``paths_idle_lps`` LPs are deleted once the LP holds more than ``paths_purge_above`` of them (each is a dense
    #: row: the LP's time grows with them; any subset of the rows keeps the bounds valid). Was 150 / 20: the 8x8
    #: grid's f = 1 queries 1.2-1.7x faster (docs/performance.md, "Norm index at d = 100-150").
    paths_purge_above: int = field(default=60, metadata=_COUNT)
    paths_idle_lps: int = field(default=10, metadata=_COUNT)
    #: A norm query whose solves all failed is answered by enumeration on spaces of at most this many actions
    #: (the last recovery of :meth:`~cmab_milp.oracles.backends.highs.HighsOracle._recover_norm`; 0: never).
    recovery_enumeration: int = field(default=200_000, metadata=_COUNT)

    @property
    def norm(self) -> OptionGroup:
        """The norm methods' options, one group per method (``tuning.norm.plus_branch.budget`` is
        ``plus_branch_try``; :data:`OPTION_GROUPS`)."""
        return OptionGroup(self, OPTION_GROUPS["norm"])

    @property
    def mip(self) -> OptionGroup:
        """The MIP queries' options (:mod:`~cmab_milp.oracles.mip`), under their own names."""
        return OptionGroup(self, OPTION_GROUPS["mip"])

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
        value = dict(value)
        for key, item in value.items():
            if key not in known:
                raise ValueError(
                    f"tuning: unknown option {key!r}; the highs backend's tuning options: {', '.join(known)}"
                )
            if "read" in known[key].metadata:  # a number or a list (the norm searches' budgets)
                value[key] = known[key].metadata["read"](key, item)
                continue
            allowed = "true, false or 'always'" if key == "plus_branch" else "true or false"
            if not (isinstance(item, bool) or (key == "plus_branch" and item == "always")):
                raise ValueError(f"tuning: option {key!r} must be {allowed}, got {item!r}")
        return replace(cls(), **value)
