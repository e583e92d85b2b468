"""Many min cuts on one network: OR-Tools' ``SimpleMaxFlow`` built once per LP point, scipy as the fallback.

The connectivity separators (:mod:`.graph_cuts`) ask one min cut per node of
the same network (an LP point's arc values as capacities). ``scipy``'s
``maximum_flow`` validates and rebuilds its sparse matrices on every call;
OR-Tools' C++ ``SimpleMaxFlow`` keeps the arcs (the figures: docs/performance.md,
"Graphs"). Both engines
return the *minimal* source side of a minimum cut (the nodes the residual
network reaches from the source), which is the same set for every maximum
flow, so the cuts, and hence the answers, do not depend on the engine.

Example
-------
>>> import numpy as np
>>> tails, heads = np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3])
>>> caps = np.array([1, 1, 1, 1], dtype=np.int64)
>>> value, side = min_cut(4, tails, heads, caps, 0, 3, "scipy")
>>> value, side.astype(int).tolist()
(2, [1, 0, 0, 0])
"""

from __future__ import annotations

import importlib.util

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

__all__ = ["ENGINES", "FlowEngine", "default_engine", "min_cut"]

#: Max-flow engines: ``"ortools"`` (needs the ``ortools`` extra) and ``"scipy"``.
ENGINES = ("ortools", "scipy")


def default_engine() -> str:
    """``"ortools"`` when OR-Tools is installed, else ``"scipy"``."""
    return "ortools" if importlib.util.find_spec("ortools") is not None else "scipy"


class FlowEngine:
    """Arcs ``tails -> heads`` with integer capacities ``caps`` (>= 0), built once for many min cuts."""

    def __init__(self, n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, engine: str | None = None):
        engine = default_engine() if engine is None else engine
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        self.n, self.engine = n, engine
        keep = caps > 0
        tails, heads, caps = tails[keep], heads[keep], caps[keep]
        if engine == "ortools":
            from ortools.graph.python import max_flow

            self._flow = max_flow.SimpleMaxFlow()
            self._flow.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), caps.astype(np.int64))
        else:
            a = sp.csr_matrix((caps, (tails, heads)), shape=(n, n), dtype=np.int64)
            a.sum_duplicates()
            self._a = a.astype(np.int32)
            self._pattern: tuple[np.ndarray, np.ndarray] | None = None
            self._caps: np.ndarray | None = None
            self._rows: np.ndarray | None = None

    def cut(self, source: int, sink: int) -> tuple[int, np.ndarray]:
        """(max flow value ``source -> sink``, mask of the nodes the residual network reaches from ``source``)."""
        side = np.zeros(self.n, bool)
        if self.engine == "ortools":
            flow = self._flow
            if self.n <= max(source, sink) or flow.num_nodes() <= max(source, sink):
                side[source] = True  # an isolated node: no arc, no flow
                return 0, side
            status = flow.solve(int(source), int(sink))
            if status != flow.OPTIMAL:  # pragma: no cover - integer capacities below 2^31: never
                raise RuntimeError(f"OR-Tools max flow failed with status {status}")
            side[np.asarray(flow.get_source_side_min_cut(), dtype=np.intp)] = True
            return int(flow.optimal_flow()), side
        res = maximum_flow(self._a, source, sink, method="dinic")
        flow = res.flow
        if self._pattern is None or not (
            np.array_equal(flow.indptr, self._pattern[0]) and np.array_equal(flow.indices, self._pattern[1])
        ):
            self._align(flow)
        free = self._caps - flow.data > 0
        counts = np.bincount(self._rows[free], minlength=self.n)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(flow.indptr.dtype)
        residual = sp.csr_matrix(
            (np.ones(int(free.sum()), np.int8), flow.indices[free], indptr), shape=(self.n, self.n)
        )
        reach = breadth_first_order(residual, source, directed=True, return_predecessors=False)
        side[reach] = True
        return int(res.flow_value), side

    def _align(self, flow) -> None:
        """Cache the flows' pattern, each entry's row, and the capacity of each entry's arc (0 if none)."""
        indptr, indices = flow.indptr.copy(), flow.indices.copy()
        rows = np.repeat(np.arange(self.n), np.diff(indptr))
        caps = np.zeros(len(indices), np.int64)
        a = self._a
        a_rows = np.repeat(np.arange(self.n), np.diff(a.indptr))
        keys = rows.astype(np.int64) * self.n + indices
        a_keys = a_rows.astype(np.int64) * self.n + a.indices
        order = np.argsort(keys, kind="stable")
        where = np.searchsorted(keys[order], a_keys)
        caps[order[where]] = a.data
        self._pattern, self._rows, self._caps = (indptr, indices), rows, caps


def min_cut(
    n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, source: int, sink: int, engine: str | None = None
) -> tuple[int, np.ndarray]:
    """One min cut (see :meth:`FlowEngine.cut`)."""
    return FlowEngine(n, tails, heads, caps, engine).cut(source, sink)
