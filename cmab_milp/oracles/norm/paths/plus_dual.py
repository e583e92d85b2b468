"""Sign +1 on s-t paths with a root tightened by product forms (:mod:`.paths.dual_form`): an opt-in search.

:class:`DualPathBranch` is :class:`~.paths.plus.ConcavePathBranch` whose root, after its own Kelley rounds, runs
``DualRoot.rounds`` rounds of: fit the multipliers of :func:`~.dual_form.product_form` at the root's LP point (a few
L-BFGS-B steps from the last multipliers, held near them by a proximal term), add the new form's tangents, and
``DualRoot.kelley`` Kelley rounds. Every form is valid whatever the multipliers, and the LP keeps the tangent rows of
the earlier ones (until purged), so each round's bound is a proven bound of the root. The last form stays for the
rest of the search: it sees the visit columns too (``width``), so its tangents have coefficients on them.

The rounds stop when the root is settled, when a round gains less than ``DualRoot.stall`` of the gap left to the
incumbent, or after ``DualRoot.rounds``. The figures (what the rounds cost and close on the 8x8 grid's path queries):
``docs/performance.md``, "Norm queries on paths: the SDP dual bound". Not a route of ``auto``: it is asked by building
the search directly (``bench/norm_paths_gap.py --parts dual``).

>>> import networkx as nx
>>> import time
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2))
>>> rng = np.random.default_rng(0)
>>> a = rng.normal(size=(space.d, space.d))
>>> mu, M = rng.uniform(0, 1, space.d), a @ a.T / space.d + 0.1 * np.eye(space.d)
>>> query = cm.make_oracle(space, "highs").norm_query(mu, M, 1.0, 1)
>>> search = DualPathBranch(space, query, np.arange(space.d), 100.0, None, time.perf_counter)
>>> best, value, bound = search.run(None, -np.inf)
>>> paths = space.enumerate().astype(float)
>>> bool(np.isclose(value, max(query.value(p) for p in paths)))
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..branch.minus import _Node
from ..branch.plus import psd_majorant
from .dual_form import fit_multipliers, product_form
from .plus import ConcavePathBranch

__all__ = ["DualPathBranch", "DualRoot", "check_fit_options"]


@dataclass(frozen=True)
class DualRoot:
    """The root's product-form rounds of :class:`DualPathBranch` (module docstring); ``(name, default)`` pairs:
    ``rounds`` (30) fits at most; ``steps`` (15) L-BFGS-B evaluations a fit; ``proximal`` (0.2) the weight of
    ``|multipliers - last|^2 / 2`` in a fit; ``smoothing`` (0.1) of the largest eigenvalue, per mean ``M_ii``;
    ``kelley`` (10) Kelley rounds after each fit; ``stall`` (0.002): stop when a round gains less than this share of
    the gap; ``nodes`` (0): the first this many nodes after the root run ``node_rounds`` (1) fits too, from the last
    multipliers; ``method`` ("lbfgsb") and ``single`` (False) of :func:`~.dual_form.fit_multipliers` (``"spg"``: no
    per-fit overhead; ``single``: eigenvalues in single precision).
    """

    rounds: int = 30
    steps: int = 15
    kelley: int = 10
    nodes: int = 0
    node_rounds: int = 1
    proximal: float = field(default=0.2, metadata={"fit": "proximal weight"})
    smoothing: float = field(default=0.1, metadata={"fit": "log-sum-exp width, per mean M_ii"})
    stall: float = field(default=0.002, metadata={"stop": "share of the gap"})
    method: str = "lbfgsb"
    single: bool = False

    def __post_init__(self):
        check_fit_options(
            self, ("rounds", "steps", "kelley", "nodes", "node_rounds"), ("proximal", "smoothing", "stall")
        )


def check_fit_options(options, counts: tuple[str, ...], shares: tuple[str, ...]) -> None:
    """Raise ``ValueError`` naming the option unless ``options``'s ``counts`` are counts ``>= 0``, its ``shares`` are
    ``>= 0``, ``smoothing`` is ``> 0`` and ``method`` is a method of :func:`~.dual_form.fit_multipliers`.

    >>> check_fit_options(DualRoot(), ("rounds",), ("stall",))
    >>> check_fit_options(DualRoot(rounds=-1), ("rounds",), ())
    Traceback (most recent call last):
    ...
    ValueError: DualRoot.rounds must be a count >= 0, got -1
    """
    name = type(options).__name__
    if options.method not in ("lbfgsb", "spg"):
        raise ValueError(f"{name}.method must be 'lbfgsb' or 'spg', got {options.method!r}")
    for key in counts:
        if int(getattr(options, key)) != getattr(options, key) or getattr(options, key) < 0:
            raise ValueError(f"{name}.{key} must be a count >= 0, got {getattr(options, key)!r}")
    for key in shares:
        if not getattr(options, key) >= 0.0:
            raise ValueError(f"{name}.{key} must be >= 0, got {getattr(options, key)!r}")
    if not options.smoothing > 0.0:
        raise ValueError(f"{name}.smoothing must be > 0, got {options.smoothing!r}")


class DualPathBranch(ConcavePathBranch):
    """:class:`~.paths.plus.ConcavePathBranch` with the root's product-form rounds (module docstring).

    ``dual``: the rounds' options (:class:`DualRoot`); the other arguments are :class:`ConcavePathBranch`'s.
    ``fits`` and ``fit_bounds`` record the rounds run and the root's bound after each (statistics).
    """

    def __init__(self, *args, dual: DualRoot | None = None, **kwargs):
        self.dual = DualRoot() if dual is None else dual
        self.fits = 0
        self.fit_bounds: list[float] = []
        self._fit = None  # (M's PSD majorant, R, b, the forms before the product form): made at the root
        self._multipliers = None  # the last fit's (P, L, c): the next fit starts there
        self._spg_memory: dict = {}  # the projected gradient's step length, from fit to fit
        super().__init__(*args, **kwargs)

    def equality_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, b)``: the formulation's equality rows on every column but ``t`` (valid at every path)."""
        lp = self.lp
        n_base = lp.base.shape[0]
        equal = lp.base_lo == lp.base_hi
        return lp.dense[:n_base, : lp.t][equal], lp.base_lo[equal]

    def relax(self, node: _Node) -> tuple[float, np.ndarray | None]:
        """The node's bound; the root's (and the first ``DualRoot.nodes`` nodes') tightened by product-form rounds."""
        bound, full = super().relax(node)
        root = self.nodes == 1
        rounds = self.dual.rounds if root else (self.dual.node_rounds if self.nodes <= 1 + self.dual.nodes else 0)
        if full is None or not rounds:
            return bound, full
        if self._fit is None:
            M = psd_majorant(self.q.M, self.arms)
            self._fit = (M, *self.equality_rows(), list(self.concave))
        bound, full = self._rounds(node, bound, full, rounds)
        if root:
            self.root_bound = bound
        return bound, full

    def fit(self, points: np.ndarray, start, options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~.dual_form.fit_multipliers` at ``points`` from ``start`` (None: zero) with the fit options of
        ``options`` (a :class:`DualRoot` or a subclass's options with the same fields)."""
        M, R, b, _ = self._fit
        return fit_multipliers(
            M,
            R,
            b,
            points,
            iterations=options.steps,
            smoothing=options.smoothing,
            start=None if start is None else tuple(np.asarray(m, float) for m in start),
            proximal=options.proximal,
            method=options.method,
            memory=self._spg_memory,
            single=options.single,
        )

    def _rounds(self, node: _Node, bound: float, full: np.ndarray, rounds: int) -> tuple[float, np.ndarray | None]:
        """Up to ``rounds`` fits at the node's LP point, each followed by Kelley rounds: the node's bound and point."""
        lp, options = self.lp, self.dual
        M, R, b, base = self._fit
        for _ in range(rounds):
            if bound <= self.best_value:
                break
            self._multipliers = self.fit(full[: lp.t], self._multipliers, options)
            self.width = lp.t
            self.concave = list(base)  # the last product form only (the earlier ones' rows stay in the LP)
            self.add_form(*product_form(M, R, b, *self._multipliers))
            self.fits += 1
            before = bound
            new_bound, new_full = self.kelley(node, options.kelley, -1e9)
            if new_full is None:
                return -np.inf, None
            full = new_full
            bound = min(bound, new_bound)
            if self.nodes == 1:
                self.fit_bounds.append(bound)
            gap = before - self.best_value if np.isfinite(self.best_value) else 1.0 + abs(before)
            if before - bound < options.stall * gap:
                break
        return bound, full
