"""Linear (mixed-integer) formulations of action spaces.

A :class:`Formulation` is the solver-independent description of an action
space that every model-based oracle backend compiles: binary arm columns
``0..d-1``, optional auxiliary columns after them, sparse linear rows, and
optional *separators* that add valid cuts lazily (for exponential families
such as subtour-elimination constraints), and optional *fractional
separators* that do the same for LP points (to tighten the relaxation before
branching; see :mod:`cmab_milp.oracles.mip.root_cuts`). The spaces of this
package name their fractional separators (:class:`NamedSeparator`: a kind and
the data it reads); the oracle side holds the code and resolves the names
(:mod:`cmab_milp.oracles.mip.graph_cuts`), so a formulation is data.

Example
-------
>>> import numpy as np
>>> from cmab_milp.spaces.formulation import Formulation, Row
>>> f = Formulation(d=3, rows=[Row((0, 1, 2), (1.0, 1.0, 1.0), -np.inf, 2.0)])
>>> f.n_cols, f.n_rows
(3, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..portable import dot

__all__ = [
    "Formulation",
    "FractionalSeparator",
    "NamedSeparator",
    "Row",
    "Separator",
    "row_activity",
    "row_violation",
]


@dataclass(frozen=True)
class Row:
    """One linear row ``lb <= sum(coefs[k] * x[cols[k]]) <= ub``."""

    cols: tuple[int, ...]
    coefs: tuple[float, ...]
    lb: float
    ub: float


#: A separator receives a candidate action (bool array over the arms) and
#: returns rows violated by it that every action of the space satisfies; an
#: empty list means the candidate is feasible. Rows may only use arm columns.
Separator = Callable[[np.ndarray], list[Row]]

#: A fractional separator receives an LP point over the arm columns (a float
#: array of length ``d``) and returns rows it violates that every action of the
#: space satisfies (valid inequalities). It may miss violated rows (an empty
#: list proves nothing); the lazy :data:`Separator` keeps the model exact.
FractionalSeparator = Callable[[np.ndarray], list[Row]]


@dataclass(frozen=True)
class NamedSeparator:
    """A fractional separator named by ``kind``, reading ``data`` (a graph space): the oracle side resolves the
    name to its code (:data:`cmab_milp.oracles.mip.graph_cuts.SEPARATORS`), so the spaces hold no solver code.

    >>> NamedSeparator("subtours", None).kind
    'subtours'
    """

    kind: str
    data: object = field(compare=False, repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSeparator) and (self.kind, id(self.data)) == (other.kind, id(other.data))

    def __hash__(self) -> int:
        return hash((self.kind, id(self.data)))


def row_activity(row: Row, x: np.ndarray) -> float:
    """``sum(coefs * x[cols])`` of one row at the point ``x``, summed left to right (the same bits on any CPU)."""
    return dot(row.coefs, x[list(row.cols)]) if row.cols else 0.0


def row_violation(row: Row, x: np.ndarray) -> float:
    """How far ``x`` is outside the row's bounds (0 when it satisfies the row).

    >>> row_violation(Row((0, 1), (1.0, 1.0), -np.inf, 1.0), np.array([0.8, 0.7]))
    0.5
    """
    act = row_activity(row, x)
    return max(act - row.ub, row.lb - act, 0.0)


@dataclass
class Formulation:
    """Mixed-integer linear description of the set of feasible actions.

    Parameters
    ----------
    d:
        Number of arms; columns ``0..d-1`` are the binary arm indicators.
    rows:
        Linear rows over arm and auxiliary columns.
    aux_lb, aux_ub, aux_integer:
        Bounds and integrality of auxiliary columns ``d, d+1, ...``.
    aux_names:
        Names of the auxiliary columns (for printing the model).
    aux_exact_only:
        Auxiliary columns that only make integer points exact (flow columns
        that forbid cycles); :meth:`lp_core` drops them and their rows, and root
        cuts are separated on that smaller LP.
    aux_optional:
        Auxiliary columns that only tighten the LP relaxation (the orientation
        of undirected paths): dropped with their rows, the integer points over
        the arms are the same. :meth:`without_optional` drops them (for solvers
        that take integer columns only, such as CP-SAT).
    solver_hints:
        Facts and requests for the solvers, by key: ``"family"`` names the
        formulation's family (``{"name": "cyclic_paths"}``; the oracle side keeps
        each family's solver options), ``"highs"`` and ``"highs_positive_costs"``
        are HiGHS options of its own (the latter for queries with some positive
        arm cost only), ``"start"`` / ``"side"`` name a start heuristic's space:
        measured speed-ups only; they never change which actions are feasible or
        optimal.
    separators:
        Lazy cut generators; the formulation with all their cuts is exact.
    fractional_separators:
        Cut generators for LP points (:data:`FractionalSeparator`, or a
        :class:`NamedSeparator` the oracle side resolves); optional
        strengthening only, never needed for exactness.
    integral_lp:
        True when the LP relaxation (with arms fixed by bounds, but no extra
        rows) has integral vertices for every linear objective, so an LP solve
        is exact (totally unimodular structures, DAG path polytopes).
    """

    d: int
    rows: list[Row] = field(default_factory=list)
    aux_lb: np.ndarray = field(default_factory=lambda: np.zeros(0))
    aux_ub: np.ndarray = field(default_factory=lambda: np.zeros(0))
    aux_integer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    aux_names: list[str] = field(default_factory=list)
    separators: list[Separator] = field(default_factory=list)
    integral_lp: bool = False
    fractional_separators: list[FractionalSeparator | NamedSeparator] = field(default_factory=list)
    aux_exact_only: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    aux_optional: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    solver_hints: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def n_aux(self) -> int:
        return len(self.aux_lb)

    @property
    def n_cols(self) -> int:
        return self.d + self.n_aux

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def add_aux(self, lb: float, ub: float, integer: bool, name: str, exact_only: bool = False) -> int:
        """Append one auxiliary column; return its column index."""
        self.add_aux_block(np.array([lb], float), np.array([ub], float), integer, [name], exact_only)
        return self.d + self.n_aux - 1

    def add_aux_block(
        self,
        lb: np.ndarray,
        ub: np.ndarray,
        integer: bool,
        names: list[str],
        exact_only: bool = False,
        optional: bool = False,
    ):
        """Append ``len(lb)`` auxiliary columns at once; return the index of the first."""
        first = self.n_cols
        self._exact_only_sized()
        self._optional_sized()
        self.aux_optional = np.concatenate([self.aux_optional, np.full(len(lb), bool(optional))])
        self.aux_lb = np.concatenate([self.aux_lb, lb])
        self.aux_ub = np.concatenate([self.aux_ub, ub])
        self.aux_integer = np.concatenate([self.aux_integer, np.full(len(lb), bool(integer))])
        self.aux_exact_only = np.concatenate([self.aux_exact_only, np.full(len(lb), bool(exact_only))])
        self.aux_names.extend(names)
        return first

    def _optional_sized(self) -> np.ndarray:
        if len(self.aux_optional) != self.n_aux:
            self.aux_optional = np.zeros(self.n_aux, dtype=bool)
        return self.aux_optional

    def _exact_only_sized(self) -> np.ndarray:
        if len(self.aux_exact_only) != self.n_aux:  # aux columns set directly by a caller
            self.aux_exact_only = np.zeros(self.n_aux, dtype=bool)
        return self.aux_exact_only

    def lp_core(self) -> Formulation:
        """This formulation without its ``aux_exact_only`` columns and the rows that use them.

        Its LP relaxation is a relaxation of this one's (fewer rows), over the same arms.

        >>> f = Formulation(d=2, rows=[Row((0, 1), (1.0, 1.0), -np.inf, 1.0)])
        >>> g = f.add_aux(0.0, 1.0, False, "flow", exact_only=True)
        >>> f.rows.append(Row((0, g), (1.0, -1.0), -np.inf, 0.0))
        >>> core = f.lp_core()
        >>> core.n_cols, core.n_rows
        (2, 1)
        """
        return self._dropping(self._exact_only_sized())

    def without_optional(self) -> Formulation:
        """This formulation without its ``aux_optional`` columns and the rows that use them (same actions).

        >>> f = Formulation(d=1)
        >>> g = f.add_aux_block(np.zeros(1), np.ones(1), False, ["dir0"], optional=True)
        >>> f.rows.append(Row((g, 0), (1.0, -1.0), -np.inf, 0.0))
        >>> f.without_optional().n_cols, f.without_optional().n_rows
        (1, 0)
        """
        return self._dropping(self._optional_sized())

    def _dropping(self, drop: np.ndarray) -> Formulation:
        """This formulation without the auxiliary columns ``drop`` marks, nor the rows that use them."""
        if not drop.any():
            return self
        keep = ~drop
        new_index = np.full(self.n_cols, -1)
        new_index[: self.d] = np.arange(self.d)
        new_index[self.d :][keep] = self.d + np.arange(int(keep.sum()))
        rows = []
        for r in self.rows:
            moved = new_index[list(r.cols)]
            if (moved >= 0).all():
                rows.append(Row(tuple(int(c) for c in moved), r.coefs, r.lb, r.ub))
        return Formulation(
            d=self.d,
            rows=rows,
            aux_lb=self.aux_lb[keep],
            aux_ub=self.aux_ub[keep],
            aux_integer=self.aux_integer[keep],
            aux_names=[n for n, k in zip(self.aux_names, keep, strict=True) if k],
            separators=list(self.separators),
            integral_lp=self.integral_lp,
            fractional_separators=list(self.fractional_separators),
            aux_exact_only=self._exact_only_sized()[keep],
            aux_optional=self._optional_sized()[keep],
            solver_hints={k: dict(v) for k, v in self.solver_hints.items()},
        )

    def matrix(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """Rows as ``(A, row_lb, row_ub)`` with ``A`` in CSR form."""
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for row in self.rows:
            indices.extend(row.cols)
            data.extend(row.coefs)
            indptr.append(len(indices))
        a = sp.csr_matrix(
            (np.asarray(data, float), np.asarray(indices, np.int32), np.asarray(indptr, np.int32)),
            shape=(self.n_rows, self.n_cols),
        )
        lb = np.array([r.lb for r in self.rows], float)
        ub = np.array([r.ub for r in self.rows], float)
        return a, lb, ub

    def col_names(self) -> list[str]:
        return [f"a{i}" for i in range(self.d)] + list(self.aux_names)

    def shifted(self, offset: int, d: int) -> Formulation:
        """This formulation with auxiliary columns moved by ``offset`` (for stacking)."""

        def move(c: int) -> int:
            return c if c < self.d else c + offset

        rows = [Row(tuple(move(c) for c in r.cols), r.coefs, r.lb, r.ub) for r in self.rows]
        return Formulation(
            d=d,
            rows=rows,
            aux_lb=self.aux_lb.copy(),
            aux_ub=self.aux_ub.copy(),
            aux_integer=self.aux_integer.copy(),
            aux_names=list(self.aux_names),
            separators=list(self.separators),
            integral_lp=self.integral_lp,
            fractional_separators=list(self.fractional_separators),
            aux_exact_only=self._exact_only_sized().copy(),
            aux_optional=self._optional_sized().copy(),
            solver_hints={k: dict(v) for k, v in self.solver_hints.items()},
        )

    @staticmethod
    def stack(parts: Sequence[Formulation]) -> Formulation:
        """Conjunction of formulations over the same arms (auxiliaries kept apart)."""
        d = parts[0].d
        out = Formulation(d=d)
        for part in parts:
            moved = part.shifted(out.n_aux, d)
            out.aux_exact_only = np.concatenate([out._exact_only_sized(), moved.aux_exact_only])
            out.aux_optional = np.concatenate([out._optional_sized(), moved.aux_optional])
            for solver, hints in moved.solver_hints.items():  # the first part's value wins a conflict
                out.solver_hints.setdefault(solver, {}).update(
                    {k: v for k, v in hints.items() if k not in out.solver_hints.get(solver, {})}
                )
            out.rows.extend(moved.rows)
            out.aux_lb = np.concatenate([out.aux_lb, moved.aux_lb])
            out.aux_ub = np.concatenate([out.aux_ub, moved.aux_ub])
            out.aux_integer = np.concatenate([out.aux_integer, moved.aux_integer])
            out.aux_names.extend(moved.aux_names)
            out.separators.extend(moved.separators)
            out.fractional_separators.extend(moved.fractional_separators)
        out.integral_lp = False
        return out

    def violated_rows(self, action: np.ndarray) -> list[Row]:
        """Cuts from every separator that ``action`` violates."""
        cuts: list[Row] = []
        for separate in self.separators:
            cuts.extend(separate(action))
        return cuts
