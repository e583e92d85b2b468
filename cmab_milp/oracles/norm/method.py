"""What a norm method is: a name, when it applies, and a run that answers or passes the query on.

:func:`~.solver.solve_norm` holds one ordered tuple of methods per sign (:data:`~.solver.PLUS_METHODS`,
:data:`~.solver.MINUS_METHODS`) and walks it: the first method that applies and returns an answer wins; a run
that returns ``None`` passes the query to the next method that applies (a budgeted try that ran out, a first
step that could not settle the query alone). The last method of each tuple always applies and always answers.

A method reads the query's state from a :class:`NormContext` (:class:`~.solver.NormSolver`): the query scaled to
unit size, its restrictions and free arms, the oracle's tuning (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`,
grouped per method under ``tuning.norm``), the time limit, the statistics, and the MILP loop on the thread's norm
model. A method object holds no state of its own (queries run on several threads at once): what one method hands
to the next goes through the context (:attr:`NormContext.carried`, :attr:`NormContext.linear`).

Example
-------
>>> from cmab_milp.oracles.norm.solver import MINUS_METHODS, PLUS_METHODS
>>> [method.name for method in PLUS_METHODS]
['linear', 'branch-path-concave', 'branch-concave', 'branch-concave', 'oa-quadratic-form']
>>> all(isinstance(method, NormMethod) for method in PLUS_METHODS + MINUS_METHODS)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Answer", "LinearStart", "NormContext", "NormMethod"]

#: A method's answer: the best action (``None``: no action qualifies) and a proven upper bound on every index.
Answer = tuple[np.ndarray | None, float]


@dataclass(frozen=True)
class LinearStart:
    """Sign -1's linear argmax ``lin`` and ``top``, a bound on ``mu @ a`` over every action (:mod:`.norm.linear`)."""

    action: np.ndarray
    top: float


class NormContext(Protocol):
    """The state of one query that the methods read (implemented by :class:`~.solver.NormSolver`)."""

    oracle: Any
    tuning: Any
    query: Any
    res: Any
    d: int
    m: int
    arms: np.ndarray
    l_lo: float
    l_hi: float
    value_scale: float
    deadline: float | None
    gap: float | None
    stats: Any
    keep: int
    runners_up: list[np.ndarray]
    #: A budgeted method's incumbent, for the methods after it.
    carried: tuple[np.ndarray | None, float]
    #: Sign -1's linear argmax and bound, once :data:`~.linear.LINEAR_BOUND` has run.
    linear: LinearStart | None

    @property
    def model(self) -> Any:
        """The thread's norm model, prepared for this query."""

    def clock(self) -> float:
        """The time of the query's time limit."""

    def solve(self, model: Any, start: np.ndarray | None = None) -> tuple[np.ndarray, Any] | None:
        """One MILP with the lazy-cut loop: a feasible action and the solver's result, or ``None``."""

    def settled(self, bound: float, value: float, unit: float = 1.0) -> bool:
        """Whether a search may stop at ``bound`` with its best ``value``."""

    def quadratic_form(self, action: np.ndarray) -> float:
        """``a @ M @ a`` of the scaled query."""

    def space_cuts(self, model: Any) -> int:
        """The space's rows violated at LP points, added to ``model``; how many."""

    def linear_argmax(self) -> np.ndarray | None:
        """The linear argmax of ``mu`` under the query's restrictions."""


@runtime_checkable
class NormMethod(Protocol):
    """One exact method for the norm index: ``name`` (what :class:`~.solver.NormStats` records), when it applies,
    and its run (an :data:`Answer`, or ``None`` to pass the query on)."""

    name: str

    def applies(self, context: NormContext) -> bool:
        """Whether this method may answer the query (its space, its ``M``, the tuning)."""

    def run(self, context: NormContext) -> Answer | None:
        """The answer and a proven bound; ``None`` passes the query to the next method that applies."""
