"""Sign +1 on s-t paths with product-form multipliers carried from node to node: an opt-in search.

:class:`DualCarryBranch` is :class:`~.paths.plus_dual.DualPathBranch` (the root's product-form rounds) whose
nodes keep product forms too. Each node starts from its parent's multipliers ``(P, L, c)`` of
:func:`~.dual_form.product_form` (stored on the node: ``_Node.form``), runs its Kelley rounds with that form
among its forms, and, when its bound is within ``DualCarry.margin`` of the incumbent (by default every node), runs
``DualCarry.fits`` cheap fits: ``DualCarry.steps`` evaluations (projected gradient) from the parent's multipliers
over the node's LP point and the last ``DualCarry.pool - 1`` points fitted at (a pool: the multipliers stay good
at the points the next nodes will have), each followed by ``DualCarry.kelley`` Kelley rounds. The node's
multipliers pass to its children.

Every product form is valid on every path whatever its multipliers, so its tangent rows enter the query's
shared LP like any other (purged when idle) and every bound stays proven (:mod:`.paths.lp`'s ``safe_bound``,
the forms' rounding allowances). The multipliers are stored in single precision (any multipliers give a valid
form; ``product_form`` makes the diagonal exact in double precision).

The figures (what the node fits cost, what they save, the tree with many fits a node): ``docs/performance.md``,
"Norm queries on paths: the SDP dual bound". Not a route of ``auto``.

Every node of the wheel's path queries fits (``margin`` without limit), answers as brute force:

>>> import networkx as nx, time
>>> import cmab_milp as cm
>>> wheel = cm.STPaths(nx.wheel_graph(7), 1, 4)
>>> g = np.random.default_rng(3).normal(size=(wheel.d, 4))
>>> ask = cm.make_oracle(wheel, "highs").norm_query(np.linspace(0.2, 0.8, wheel.d), g @ g.T + np.eye(wheel.d), 2.0, 1)
>>> carry = DualCarry(fits=2, steps=3, margin=np.inf)
>>> found = DualCarryBranch(wheel, ask, np.arange(wheel.d), 1e3, None, time.perf_counter, carry=carry).run(None, -1e9)
>>> bool(np.isclose(found[1], max(ask.value(p) for p in wheel.enumerate())))
True
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..branch.minus import _Node
from ..branch.plus import psd_majorant
from .dual_form import product_form
from .plus_dual import DualPathBranch, DualRoot, check_fit_options

__all__ = ["ROOT", "DualCarry", "DualCarryBranch"]

#: The root's rounds of :class:`DualCarryBranch` by default: 24 fits at most, by projected gradient.
ROOT = DualRoot(rounds=24, method="spg")


@dataclass(frozen=True)
class DualCarry:
    """The nodes' product-form fits of :class:`DualCarryBranch` (module docstring); ``(name, default)`` pairs:
    ``every`` (1): only nodes whose depth (columns fixed) is a multiple of it fit; ``fits`` (1) fits such a node
    at most; ``steps`` (5) evaluations a fit; ``kelley`` (4) Kelley rounds after each fit; ``pool`` (24) LP points
    fitted over (the node's and the last ones fitted at); ``margin`` (inf): a node fits when its bound is at most
    ``margin (1 + |incumbent|)`` above the incumbent; ``method`` ("spg") and ``single`` (True: eigenvalues in single
    precision) of :func:`~.dual_form.fit_multipliers`; ``proximal`` (0.2) the weight of ``|multipliers -
    parent's|^2 / 2``; ``smoothing`` (0.1) of the largest eigenvalue, per mean ``M_ii``. The defaults: the fastest
    measured on the 8x8 grid (``docs/performance.md``); a finite margin made more nodes there.
    """

    every: int = 1
    method: str = "spg"
    single: bool = True
    fits: int = 1
    margin: float = field(default=np.inf, metadata={"fit": "share of 1 + |incumbent|"})
    steps: int = 5
    kelley: int = 4
    pool: int = 24
    smoothing: float = field(default=0.1, metadata={"fit": "log-sum-exp width, per mean M_ii"})
    proximal: float = field(default=0.2, metadata={"fit": "proximal weight"})

    def __post_init__(self):
        check_fit_options(self, ("fits", "steps", "kelley", "pool"), ("margin", "proximal", "smoothing"))
        if int(self.every) != self.every or self.every < 1:
            raise ValueError(f"DualCarry.every must be a count >= 1, got {self.every!r}")


class DualCarryBranch(DualPathBranch):
    """:class:`~.paths.plus_dual.DualPathBranch` whose nodes carry and refit product-form multipliers (module
    docstring). ``carry``: the nodes' options (:class:`DualCarry`); ``dual``: the root's (default :data:`ROOT`); the
    rest as ``DualPathBranch``'s.
    ``node_fits`` counts the fits at nodes after the root (a statistic).
    """

    def __init__(self, *args, carry: DualCarry | None = None, dual: DualRoot | None = None, **kwargs):
        self.carry = DualCarry() if carry is None else carry
        kwargs["dual"] = ROOT if dual is None else dual
        self.node_fits = 0
        self._pool: deque[np.ndarray] = deque(maxlen=max(self.carry.pool, 1))
        self._active = None  # the multipliers whose form is the search's last form now
        super().__init__(*args, **kwargs)

    def _use(self, multipliers) -> None:
        """Make the product form of ``multipliers`` the last of the search's forms (the others stay as made)."""
        if multipliers is self._active:
            return
        self.make_fit()
        M, R, b, base = self._fit
        self.width = self.lp.t
        self.concave = list(base)
        self.add_form(*product_form(M, R, b, *(np.asarray(m, float) for m in multipliers)))
        self._active = multipliers

    def relax(self, node: _Node) -> tuple[float, np.ndarray | None]:
        """The root: :class:`DualPathBranch`'s rounds; a node: its parent's form, then fits near the incumbent."""
        if self.nodes == 1:
            bound, full = super().relax(node)
            if self._multipliers is not None:
                node.form = self._store(self._multipliers)
                self._active = None
                self._use(node.form)
            return bound, full
        if node.form is not None:
            self._use(node.form)
        bound, full = super().relax(node)  # (DualRoot.nodes, if set, fits the first nodes as DualPathBranch does)
        options = self.carry
        if full is None or not options.fits or int(node.include.sum() + node.exclude.sum()) % options.every:
            return bound, full
        multipliers = node.form  # (None: no fit yet, the first starts from zero multipliers)
        for _ in range(options.fits):
            if not bound - self.best_value <= options.margin * (1.0 + abs(self.best_value)):
                break  # (far from the incumbent: a tighter bound would not prune it; -inf incumbent: no fit)
            self.make_fit()
            z = full[: self.lp.t]
            self._pool.append(z)
            points = np.array(self._pool) if options.pool else z
            multipliers = self._store(self.fit(points, multipliers, options))
            self._use(multipliers)
            self.node_fits += 1
            new_bound, new_full = self.kelley(node, options.kelley, -1e9)
            if new_full is None:
                return -np.inf, None
            full, bound = new_full, min(bound, new_bound)
        node.form = multipliers
        return bound, full

    @staticmethod
    def _store(multipliers) -> tuple[np.ndarray, ...]:
        """The multipliers in single precision (a node's copy; any multipliers give a valid form)."""
        return tuple(np.asarray(m, np.float32) for m in multipliers)

    def make_fit(self) -> None:
        """The fit's data (``M``'s PSD majorant, the equality rows, the forms before any product form) if missing."""
        if self._fit is None:
            self._fit = (psd_majorant(self.q.M, self.arms), *self.equality_rows(), list(self.concave))
