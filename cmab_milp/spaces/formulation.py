"""Linear (mixed-integer) formulations of action spaces.

A :class:`Formulation` is the solver-independent description of an action
space that every model-based oracle backend compiles: binary arm columns
``0..d-1``, optional auxiliary columns after them, sparse linear rows, and
optional *separators* that add valid cuts lazily (for exponential families
such as subtour-elimination constraints).

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

__all__ = ["Formulation", "Row", "Separator"]


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
    separators:
        Lazy cut generators; the formulation with all their cuts is exact.
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

    @property
    def n_aux(self) -> int:
        return len(self.aux_lb)

    @property
    def n_cols(self) -> int:
        return self.d + self.n_aux

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def add_aux(self, lb: float, ub: float, integer: bool, name: str) -> int:
        """Append one auxiliary column; return its column index."""
        self.aux_lb = np.append(self.aux_lb, lb)
        self.aux_ub = np.append(self.aux_ub, ub)
        self.aux_integer = np.append(self.aux_integer, integer)
        self.aux_names.append(name)
        return self.d + self.n_aux - 1

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
        )

    @staticmethod
    def stack(parts: Sequence[Formulation]) -> Formulation:
        """Conjunction of formulations over the same arms (auxiliaries kept apart)."""
        d = parts[0].d
        out = Formulation(d=d)
        for part in parts:
            moved = part.shifted(out.n_aux, d)
            out.rows.extend(moved.rows)
            out.aux_lb = np.concatenate([out.aux_lb, moved.aux_lb])
            out.aux_ub = np.concatenate([out.aux_ub, moved.aux_ub])
            out.aux_integer = np.concatenate([out.aux_integer, moved.aux_integer])
            out.aux_names.extend(moved.aux_names)
            out.separators.extend(moved.separators)
        out.integral_lp = False
        return out

    def violated_rows(self, action: np.ndarray) -> list[Row]:
        """Cuts from every separator that ``action`` violates."""
        cuts: list[Row] = []
        for separate in self.separators:
            cuts.extend(separate(action))
        return cuts
