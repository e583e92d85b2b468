"""Brute force over ``space.enumerate()``, vectorised in numpy.

The action matrix is enumerated once, with a padded index table of each action's arms.
Linear values are one matrix-vector product (BLAS: fast, but its last bits depend on the CPU's
kernel), so the answer is settled on the actions within the product's rounding bound of the best,
re-valued with :func:`cmab_milp.portable.gathered_sums` (arm order, left to right): the answer is
then the first action of largest portable value, the same on every machine (see ``_best``).
Norm queries are screened without BLAS by prefix sums along the actions' prefix tree
(:mod:`~cmab_milp.oracles.backends.enumerate_norm`), then settled on the portable values: the linear
part summed in arm order and :meth:`EnumerateOracle.quadratic_forms` (the index table: ``n x m x m``
gathers of ``M``, ``n x m`` when ``M`` is diagonal, summed by numpy's own fixed-order reductions).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
>>> int(oracle.argmax_norm(np.zeros(3), np.eye(3), 1.0).sum())
2
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...portable import gathered_sums
from ...spaces.base import ActionSpace
from ..core.base import Oracle
from ..core.capabilities import Capabilities
from ..core.queries import _NO_RESTRICTIONS, LinearQuery, NormQuery
from ..core.ties_unique import exact_margin
from .enumerate_norm import FlatTable, PrefixTree, norm_screen

__all__ = ["EnumerateOracle"]

_EPS = float(np.finfo(float).eps)


class EnumerateOracle(Oracle):
    """Exact by listing every action; refuses spaces past ``max_actions``."""

    # ---- declaration (read by the registry, ``auto`` and the kits)
    #: Every query, on spaces small enough to list (``max_actions``).
    CAPABILITIES = Capabilities(
        spaces="spaces small enough to enumerate", cost="cmab_milp.oracles.core.auto_costs:enumerate_cost"
    )
    DESCRIPTION = "vectorised brute force"

    name = "enumerate"

    def __init__(self, space: ActionSpace, max_actions: int | None = None):
        super().__init__(space)
        self.actions = space.enumerate(max_actions)
        self._dense = self.actions.astype(np.float64)  # for callers (tests, benches) that take products themselves
        sizes = self.actions.sum(axis=1)
        width = max(1, int(sizes.max()) if len(sizes) else 1)
        # padded index table: unused slots point at a dummy arm d
        self._index = np.full((len(self.actions), width), self.d, dtype=np.intp)
        rows, cols = np.nonzero(self.actions)
        slot = np.arange(len(rows)) - np.repeat(np.r_[0, np.cumsum(sizes)[:-1]], sizes)
        self._index[rows, slot] = cols
        self._screen: PrefixTree | FlatTable | None = None  # built at the first norm query

    def _restricted(self, values: np.ndarray, query: LinearQuery | NormQuery) -> np.ndarray | None:
        """``values`` with ``-inf`` at the actions the restrictions rule out; ``None`` if none is left."""
        mask = query.restrictions.mask(self.actions)
        if mask is not None:
            if not mask.any():
                return None
            values = np.where(mask, values, -np.inf)
        return values if len(values) else None

    def _best(self, *args: Any) -> np.ndarray | None:
        """The action of :meth:`_pick` (same arguments), the hook a subclass may replace."""
        return self._pick(*args)[0]

    def _pick(
        self,
        values: np.ndarray,
        query: LinearQuery | NormQuery,
        weights: np.ndarray | None = None,
        scale: float = 0.0,
        exact: np.ndarray | None = None,
    ) -> tuple[np.ndarray | None, bool]:
        """The first action of largest portable value, found from BLAS ``values`` of the same quantity.

        ``values`` is ``weights @ a`` (plus ``exact``, a per-action term computed portably) with the
        linear part from BLAS. Any two summation orders of an action's at most ``d`` weights differ
        by at most ``2 gamma_(d-1) sum |w| < d eps sum |w| <= d^2 eps scale`` (``scale = max |w|``;
        the products by 0/1 are exact), and
        adding ``exact`` rounds each once more (``eps / 2`` of the value). The portable optimum ``k``
        is then within ``delta`` of the BLAS maximum, ``delta`` twice those bounds; ``slack`` is
        twice ``delta`` again. Re-valuing only the actions within ``slack``, portably, gives the
        first portable argmax on every BLAS kernel. Without ``weights`` (a subclass's own values):
        the first argmax of ``values`` as given.

        Also returned: whether the answer is the only optimum in exact arithmetic (no other action within
        ``slack``: each is below it by more than both rounding bounds), hence the tie rule's action; as a
        certificate for ``ties="exact"`` (:mod:`~cmab_milp.oracles.core.ties_unique`): whether no other action is
        within ``slack`` plus :func:`~cmab_milp.oracles.core.ties_unique.exact_margin` either.
        """
        values = self._restricted(values, query)
        if values is None:
            return None, True
        best = int(np.argmax(values))
        if weights is None:
            return self.actions[best].copy(), False
        top = float(values[best])
        largest = abs(top) + (0.0 if exact is None else float(np.abs(exact).max(initial=0.0)))
        slack = 4.0 * _EPS * (self.d * self.d * scale + 2.0 * largest)
        close = values >= top - slack
        if np.count_nonzero(close) == 1:  # the usual case: no other action near the best, nothing to re-value

            def unique() -> bool:  # ties="exact": every other action below by more than exact_margin, exactly
                margin = exact_margin(float(np.abs(weights).sum()), self.d)
                return int(np.count_nonzero(values >= top - slack - margin)) == 1

            return self.actions[best].copy(), unique
        near = np.flatnonzero(close)
        padded = np.zeros(self.d + 1)
        padded[: self.d] = weights
        portable = gathered_sums(self._index[near], padded)
        if exact is not None:
            portable = portable + exact[near]
        return self.actions[int(near[int(np.argmax(portable))])].copy(), False

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        weights, top = self._scaled(query)
        return self._best(self._dense @ weights, query, weights, top)

    def _linear_ruled(self, query: LinearQuery) -> tuple[np.ndarray | None, bool]:
        """:meth:`_linear` and whether its answer is the only optimum (:meth:`_pick`); a subclass with its own
        ``_linear`` or ``_best`` proves nothing."""
        cls = type(self)
        if cls._linear is not EnumerateOracle._linear or cls._best is not EnumerateOracle._best:
            return self._linear(query), False
        weights, top = self._scaled(query)
        return self._pick(self._dense @ weights, query, weights, top)

    @staticmethod
    def _scaled(query: LinearQuery) -> tuple[np.ndarray, float]:
        """The weights (scaled by a power of 2 near overflow: exact, no tie changes) and their largest ``|w|``."""
        weights = query.weights
        top = float(np.abs(weights).max(initial=0.0))
        if top > 2.0**900:  # sums of weights near 1e308 overflow
            weights = np.ldexp(weights, -math.frexp(top)[1])
            top = 1.0  # the largest |weight| now
        return weights, top

    def linear_values(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ a`` for every enumerated action, summed in arm order (the same bits on every machine).

        >>> import cmab_milp as cm
        >>> EnumerateOracle(cm.Cardinality(3, 2)).linear_values(np.array([1.0, 2.0, 4.0])).tolist()
        [0.0, 1.0, 2.0, 4.0, 3.0, 5.0, 6.0]
        """
        padded = np.zeros(self.d + 1)
        padded[: self.d] = weights
        return gathered_sums(self._index, padded)

    def quadratic_forms(self, M: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``a @ M @ a`` for every enumerated action (or the actions ``rows``: the same bits as in the full array).

        A diagonal ``M`` takes ``m`` gathers an action instead of ``m^2``, summed in the same order
        (the terms left out are exact zeros), so the values are the same bits either way.

        >>> import cmab_milp as cm
        >>> oracle = EnumerateOracle(cm.Cardinality(3, 2))
        >>> oracle.quadratic_forms(np.diag([1.0, 2.0, 4.0])).tolist()
        [0.0, 1.0, 2.0, 4.0, 3.0, 5.0, 6.0]
        >>> oracle.quadratic_forms(np.ones((3, 3)), rows=np.array([1, 6])).tolist()
        [1.0, 4.0]
        """
        idx = self._index if rows is None else self._index[rows]
        total = np.zeros(len(idx))
        diagonal = np.diagonal(M)
        if np.count_nonzero(M) == np.count_nonzero(diagonal):  # no entry off the diagonal
            padded_diagonal = np.zeros(self.d + 1)
            padded_diagonal[: self.d] = diagonal
            for p in range(idx.shape[1]):
                total += padded_diagonal[idx[:, p]]
            return total
        padded = np.zeros((self.d + 1, self.d + 1))
        padded[: self.d, : self.d] = M
        for p in range(idx.shape[1]):
            total += padded[idx[:, p][:, None], idx].sum(axis=1)
        return total

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        """The first action of largest portable value (linear part by :func:`gathered_sums`, :meth:`quadratic_forms`).

        Screened without BLAS (:func:`~.enumerate_norm.norm_screen`: prefix sums along the actions' tree, or
        one gather on small tables); the actions the screen's bound
        cannot separate from the best are re-valued the portable way, so the answer is the same as valuing
        every action portably.
        """
        screen = self._screen
        if screen is None:
            screen = self._screen = norm_screen(self._index, self.d)
        values, bound = screen.screen(query.mu, query.M, query.f, query.sign)
        if not math.isfinite(bound):  # magnitudes near overflow: value every action the portable way
            return self._best(self._portable_norm(query, None), query)
        if query.restrictions is not _NO_RESTRICTIONS or not len(values):
            values = self._restricted(values, query)
            if values is None:
                return None
        best = int(values.argmax())
        if bound == 0.0:  # the portable values themselves (a diagonal M)
            return self.actions[best].copy()
        top = float(values[best])
        close = values >= top - (2.0 * bound * (1.0 + 4.0 * _EPS) + 4.0 * _EPS * abs(top))
        if np.count_nonzero(close) == 1:  # the usual case: no other action near the best
            return self.actions[best].copy()
        near = np.flatnonzero(close)
        portable = self._portable_norm(query, near)
        return self.actions[int(near[int(np.argmax(portable))])].copy()

    def _portable_norm(self, query: NormQuery, rows: np.ndarray | None) -> np.ndarray:
        """The portable values of the actions ``rows`` (``None``: all), in their order."""
        padded = np.zeros(self.d + 1)
        padded[: self.d] = query.mu
        index = self._index if rows is None else self._index[rows]
        quad = self.quadratic_forms(query.M, rows)
        return gathered_sums(index, padded) + query.sign * query.f * np.sqrt(np.maximum(quad, 0.0))
