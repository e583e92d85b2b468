"""Where the root gap of sign +1 norm queries on s-t paths of the 8x8 grid comes from (issue 43 item 3).

Run: ``.venv/bin/python bench/norm_paths_gap.py [--queries 0,1,2] [--parts root,linear,hull,rlt,eigen,free,dual]
[--f 1] [--dual VARIANTS]``. The queries are ``bench/norm_large.py``'s s-t paths cell (sign +1, f given), so ``#0``
is the query that takes ~140 CPU s there. Per query and part it prints:

* ``root``: the search's root bound as it runs (rounds stop on a stall) and converged (200 Kelley rounds, no stall
  stop), the longest path (``max mu @ a``, a MILP) and its index;
* ``linear``: the converged root LP of ``max mu @ x`` alone (the path polytope's own gap) and the Lagrangian bound
  ``max_a (mu - y @ tangents) @ a + const`` with the LP's tangent duals ``y`` solved as a longest-path MILP;
* ``hull``: ``max mu @ x + f sqrt(q(x))`` over the convex hull of the paths (column generation: a master LP over the
  paths found, Kelley rows on ``sqrt(q)``, longest-path MILPs as pricing; its best Lagrangian value is a bound), i.e.
  the root bound a perfect linear relaxation would give with today's concave overestimator ``q``;
* ``rlt``: ``q`` with products of the degree rows and the arms, ``a_e (a(S_v) - r_v) = 0`` on paths for every arm
  ``e`` at node ``v``, one free multiplier each, chosen by subgradient steps on the largest eigenvalue (the star
  terms are the case of equal multipliers at a node); its diagonal shift and converged root bound;
* ``eigen``: ``q`` with ``M``'s top ``K`` eigen-directions taken out and bounded by their secants,
  ``(v @ a)^2 <= (l + u) v @ a - l u`` for ``v @ a`` in ``[l, u]`` (``l``, ``u`` from the root LP), so that the
  diagonal needs to cover only ``lambda_(K+1)``;
* ``free``: the diagonal shift per arm on the arms free at the search's nodes (not fixed, not excluded by a visit
  column at 0) against all arms: what a per-node shift would save;
* ``dual``: the whole search as the library runs it and with :class:`~cmab_milp.oracles.norm.paths.plus_dual.
  DualPathBranch`'s root (product forms read off the SDP relaxation's dual, multipliers fitted by L-BFGS-B), one
  after the other: CPU s, nodes, root bound (``--dual "rounds=12;rounds=12,nodes=20"``: variants of its options);
* ``carry``: today's search and :class:`~cmab_milp.oracles.norm.paths.dual_carry.DualCarryBranch` (product-form
  multipliers carried from node to node and refitted), one after the other (``--carry
  "fits=1,steps=3/rounds=12;..."``: ``DualCarry`` options, then after ``/`` ``DualRoot`` options; a variant with
  ``opt=1`` starts from the optimum as incumbent; ``limit=S`` stops it after S CPU s, printing the nodes so far);
* ``dualroot``: (per ``--dual`` variant, e.g. ``"method=spg,steps=15"``) the root alone, converged, then 40 rounds
  of product-form fits and Kelley rounds: the bound and
  CPU s after 1, 2, 4, ..., 40 fits;
* ``sdp`` (needs ``cvxpy``, not a dependency of the library: ``pip install cvxpy`` in a scratch environment): the
  semidefinite relaxation on the converged root's LP (arms and visit columns ``y``), ``Y = [[1, y'], [y, X]]`` PSD,
  ``diag X = y``, ``max mu @ x + f sqrt(<M, X>)``: Shor alone, then with ``X_ij <= y_i`` and the equality rows times
  every ``y_j`` (``R X = b y'``), then with ``X >= 0`` too (SCS, ``eps`` 3e-5; minutes each).

These are diagnostics: their bounds carry no rounding allowance and are not the library's proven bounds. Figures
and conclusions: ``docs/performance.md``, "Norm index at d = 100-150", third pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import norm_large

import cmab_milp as cm
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.branch.minus import _Node
from cmab_milp.oracles.norm.branch.overestimator import shifted_form
from cmab_milp.oracles.norm.branch.plus import psd_majorant
from cmab_milp.oracles.norm.paths import method as path_method
from cmab_milp.oracles.norm.paths.plus import ConcavePathBranch, _shift, vertex_parts
from cmab_milp.oracles.norm.scaling import arms_bound

FAMILY = "s-t paths 8x8 grid"


class FormBranch(ConcavePathBranch):
    """The sign +1 path search whose forms may carry a constant: ``q(x) = x @ A @ x + 2 h @ x + c``."""

    constants: dict[int, float]

    def concave_tangent(self, x, form):
        A, h, _ = form
        x = x[: self.d]
        hx = A @ x + h
        qx = float(x @ (hx + h)) + self.constants.get(id(form), 0.0)
        if qx <= 1e-9:
            return None
        n = float(np.sqrt(qx))
        grad = hx / n
        return -grad, float(grad @ x) - n, 1e-9

    def norm(self, x):
        x = x[: self.d]
        q = min(float(x @ (f[0] @ x + 2.0 * f[1])) + self.constants.get(id(f), 0.0) for f in self.concave)
        return -float(np.sqrt(max(q, 0.0)))


def queries(f: float, n: int):
    """The space and the first ``n`` queries of ``norm_large``'s s-t paths cell (sign +1)."""
    names = list(norm_large.spaces(False))
    space = norm_large.spaces(False)[FAMILY]
    rng = np.random.default_rng([names.index(FAMILY), round(f * 1000), 2])
    make = norm_large.query_maker(space, f, 1, rng)
    return space, [make(k) for k in range(n)]


def restrictions(q: dict) -> dict:
    return {key: q[key] for key in ("include", "exclude", "forbid_pairs") if key in q}


def search(space, q: dict, f: float | None = None, forms=None, early: bool = False) -> FormBranch:
    """The search object of a query (``f`` replaces the query's; ``forms``: ``(A, b, c)`` replace its own; ``early``:
    the search's own stop of a node's rounds at a good LP point, off for the converged bounds)."""
    oracle = cm.make_oracle(space, "highs")
    query = oracle.norm_query(q["mu"], q["M"], q["f"] if f is None else f, 1, **restrictions(q))
    arms = np.setdiff1d(np.arange(space.d), list(query.restrictions.exclude))
    l_hi = float(np.linalg.eigvalsh(q["M"])[-1]) * arms_bound(space)
    out = FormBranch(space, query, arms, l_hi, None, time.perf_counter, HighsTuning(paths_early=early))
    out.constants = {}
    if forms is not None:
        out.concave = []
        for A, b, c in forms:
            out.add_form(A, b)
            out.constants[id(out.concave[-1])] = c
    return out


def converged_root(branch: FormBranch, rounds: int = 200) -> tuple[float, np.ndarray]:
    """The root's bound after ``rounds`` Kelley rounds without the stall stop, and its LP point."""
    branch.nodes = 1
    root = _Node(-np.inf, 0, np.zeros(branch.lp.n, bool), np.zeros(branch.lp.n, bool))
    bound, x = branch.kelley(root, rounds, -1e9)
    return bound, x


def index(q: dict, a: np.ndarray) -> float:
    return float(q["mu"] @ a + q["f"] * np.sqrt(a @ q["M"] @ a))


def part_root(space, q, oracle) -> None:
    as_run = search(space, q, early=True)
    as_run.nodes = 1
    bound, _ = as_run.relax(_Node(-np.inf, 0, np.zeros(as_run.lp.n, bool), np.zeros(as_run.lp.n, bool)))
    converged, _ = converged_root(search(space, q))
    longest = oracle.argmax(q["mu"], **restrictions(q)).astype(float)
    print(f"  root bound as run {bound:.4f} (from no incumbent), converged {converged:.4f};", end=" ")
    print(f"longest path mu @ a {q['mu'] @ longest:.4f}, its index {index(q, longest):.4f}")


def part_linear(space, q, oracle) -> None:
    alone, _ = converged_root(search(space, q, f=1e-7))
    branch = search(space, q)
    converged_root(branch)
    lp = branch.lp
    y = np.abs(lp.model.row_duals()[lp.tangent_row])
    weights = q["mu"] + y @ lp.tangents[:, : space.d]
    a = oracle.argmax(weights, **restrictions(q)).astype(float)
    print(f"  LP of max mu @ x: {alone:.4f}; Lagrangian at the root LP's duals {weights @ a - y @ lp.tangent_lo:.4f}")


def part_hull(space, q, oracle, start: np.ndarray, iterations: int = 40) -> None:
    branch = search(space, q)
    A, h, _ = branch.concave[0]
    mu, f = q["mu"], q["f"]

    def tangent(x):
        n = np.sqrt(max(float(x @ (A @ x + 2 * h)), 1e-12))
        g = (A @ x + h) / n
        return g, n - g @ x

    paths, rows, best, started = [start], [tangent(start)], np.inf, time.process_time()
    for _ in range(iterations):
        for _ in range(30):  # Kelley on the master: max sum lam_j mu @ a_j + f s, s <= g @ x + c
            P = np.array(paths)
            J = len(P)
            result = linprog(
                np.concatenate([-(P @ mu), [-f]]),
                A_ub=np.array([np.concatenate([-(P @ g), [1.0]]) for g, _ in rows]),
                b_ub=np.array([c for _, c in rows]),
                A_eq=np.concatenate([np.ones(J), [0.0]])[None],
                b_eq=[1.0],
                bounds=[(0, None)] * J + [(None, None)],
                method="highs",
            )
            x = result.x[:J] @ P
            if np.sqrt(max(float(x @ (A @ x + 2 * h)), 0.0)) < result.x[J] - 1e-7:
                rows.append(tangent(x))
            else:
                break
        prices = -result.ineqlin.marginals
        priced = rows[: len(prices)]  # (a row added after the last master solve has no price yet)
        weights = mu + sum(p * g for p, (g, _) in zip(prices, priced, strict=True))
        a = oracle.argmax(weights, **restrictions(q)).astype(float)
        best = min(best, float(weights @ a + sum(p * c for p, (_, c) in zip(prices, priced, strict=True))))
        if best + result.fun < 1e-4:
            break
        paths.append(a)
    print(
        f"  hull bound {best:.4f} (master {-result.fun:.4f}, {len(paths)} paths, "
        f"{time.process_time() - started:.1f} CPU s)"
    )


def rlt_form(space, M: np.ndarray, steps: int = 300):
    """``(B, l)`` with the degree-row products (module docstring), multipliers by subgradient steps."""
    arms = np.arange(space.d)
    nodes = int(max(space.tail.max(), space.head.max())) + 1
    stars = [np.flatnonzero((space.tail == v) | (space.head == v)) for v in range(nodes)]
    triples = [
        (e, v, 1 if v in (space.s, space.t) else 2) for e in range(space.d) for v in (space.tail[e], space.head[e])
    ]

    def build(lam):
        B, linear = vertex_parts(space, M, arms, float(np.mean(np.diag(M))))
        for (e, v, r), weight in zip(triples, lam, strict=True):
            others = stars[v][stars[v] != e]
            B[e, others] -= weight / 2
            B[others, e] -= weight / 2
            linear[e] += weight * (r - 1)  # a_e a(S_v \ e) = (r_v - 1) a_e on paths
        return B, linear

    lam = np.zeros(len(triples))
    best = (np.inf, lam)
    for _ in range(steps):
        w, V = np.linalg.eigh(build(lam)[0])
        v = V[:, -1]
        grad = np.array([-v[e] * v[stars[u][stars[u] != e]].sum() for e, u, _ in triples])
        best = min(best, (w[-1], lam.copy()), key=lambda pair: pair[0])
        lam = lam - 0.5 * max(w[-1] - w[-2], 0.02) * grad / (np.linalg.norm(grad) + 1e-12)
    return build(best[1])


def part_rlt(space, q) -> None:
    arms = np.arange(space.d)
    for label, (B, linear) in (
        ("star terms", vertex_parts(space, q["M"], arms, float(np.mean(np.diag(q["M"]))))),
        ("degree-row products", rlt_form(space, q["M"])),
    ):
        A, b = shifted_form(B, linear, arms)
        bound, _ = converged_root(search(space, q, forms=[(A, b, 0.0)]))
        print(
            f"  {label}: largest eigenvalue {np.linalg.eigvalsh(B)[-1]:.3f}, diagonal shift per arm "
            f"{_shift(B, A, arms) / space.d:.3f}, converged root {bound:.4f}"
        )


def part_eigen(space, q) -> None:
    branch = search(space, q)
    converged_root(branch)
    lp, d, M = branch.lp, space.d, q["M"]
    rows, lo, hi = lp.dense[: lp._n_sparse], lp.sparse_lo, lp.sparse_hi
    equal = lo == hi
    upper = np.vstack([rows[~equal & np.isfinite(hi)], -rows[~equal & np.isfinite(lo)]])
    sides = np.concatenate([hi[~equal & np.isfinite(hi)], -lo[~equal & np.isfinite(lo)]])

    def interval(v):
        ends = []
        for sign in (1.0, -1.0):
            c = np.zeros(lp.n)
            c[:d] = sign * v
            found = linprog(
                c,
                A_ub=upper,
                b_ub=sides,
                A_eq=rows[equal],
                b_eq=lo[equal],
                bounds=list(zip(lp.col_lo, lp.col_hi, strict=True)),
                method="highs",
            )
            ends.append(sign * found.fun)
        return ends

    w, V = np.linalg.eigh(M)
    arms = np.arange(d)
    for K in (0, 3, 8, 16):
        sigma = w[-K - 1]
        top = [(w[-j - 1] - sigma, V[:, -j - 1]) for j in range(K)]
        rest = M - sum((lam * np.outer(v, v) for lam, v in top), np.zeros_like(M))
        B, linear = vertex_parts(space, rest, arms, float(np.mean(np.diag(M))))
        A, b = shifted_form(B, linear, arms)
        const, widths = 0.0, []
        for lam, v in top:
            low, high = interval(v)
            widths.append(high - low)
            b = b + lam * (low + high) * v
            const -= lam * low * high
        bound, _ = converged_root(search(space, q, forms=[(A, b, const)]))
        width = f", v @ x ranges {min(widths):.1f}-{max(widths):.1f}" if widths else ""
        print(f"  K = {K}: diagonal shift per arm {_shift(B, A, arms) / d:.3f}{width}, converged root {bound:.4f}")


def part_free(space, q) -> None:
    seen: list[np.ndarray] = []

    class Recording(ConcavePathBranch):
        def relax(self, node):
            out = node.exclude[: self.d].copy()
            for column, v in zip(self.lp.visits, self.lp.visit_nodes, strict=True):
                if node.exclude[column]:
                    out |= (space.tail == v) | (space.head == v)
            seen.append(np.flatnonzero(~out & ~node.include[: self.d]))
            return super().relax(node)

    original = path_method.PlusPaths.run
    path_method.PlusPaths.run = lambda self, context: path_method._search(context, Recording)
    try:
        cm.make_oracle(space, "highs").argmax_norm(**q)
    finally:
        path_method.PlusPaths.run = original
    M, arms = q["M"], np.arange(space.d)
    B, linear = vertex_parts(space, M, arms, float(np.mean(np.diag(M))))
    full = _shift(B, shifted_form(B, linear, arms)[0], arms) / space.d
    sample = seen[:: max(1, len(seen) // 20)]
    shares = [_shift(B, shifted_form(B, linear, free)[0], free) / len(free) / full for free in sample if len(free)]
    sizes = [len(free) for free in seen]
    print(
        f"  {len(seen)} nodes, free arms {min(sizes)}-{max(sizes)} (median {int(np.median(sizes))}); "
        f"shift per free arm / all arms' {min(shares):.3f}-{max(shares):.3f}"
    )


def part_sdp(space, q) -> None:
    import cvxpy as cp  # (not a dependency of the library: the module docstring)

    branch = search(space, q)
    converged_root(branch)
    lp, d, M = branch.lp, space.d, q["M"]
    n = lp.t  # every column but the norm's
    rows, lo, hi = lp.dense[: lp._n_sparse, :n], lp.sparse_lo, lp.sparse_hi
    equal, above, below = lo == hi, np.isfinite(hi) & (lo != hi), np.isfinite(lo) & (lo != hi)
    for label, extra in (("Shor", ""), ("+ McCormick, RLT of the equality rows", "mc"), ("+ X >= 0", "mc,nn")):
        Y = cp.Variable((n + 1, n + 1), PSD=True)
        y, X = Y[0, 1:], Y[1:, 1:]
        rules = [Y[0, 0] == 1, cp.diag(X) == y, y >= lp.col_lo[:n], y <= lp.col_hi[:n], rows[equal] @ y == lo[equal]]
        rules += [rows[above] @ y <= hi[above], rows[below] @ y >= lo[below]]
        if "mc" in extra:
            rules.append(X <= cp.reshape(y, (n, 1), order="F") @ np.ones((1, n)))
            sides = cp.reshape(lo[equal], (int(equal.sum()), 1), order="F")
            rules.append(rows[equal] @ X == sides @ cp.reshape(y, (1, n), order="F"))
        if "nn" in extra:
            rules.append(X >= 0)
        problem = cp.Problem(cp.Maximize(q["mu"] @ y[:d] + q["f"] * cp.sqrt(cp.trace(M @ X[:d, :d]))), rules)
        started = time.process_time()
        problem.solve(solver="SCS", eps=3e-5, max_iters=50000)
        print(f"  SDP, {label}: {problem.value:.4f} ({problem.status}, {time.process_time() - started:.0f} CPU s)")


def part_dualroot(space, q, fits: int = 40, variants: str = "") -> None:
    """The root alone: converged (200 Kelley rounds), then ``fits`` rounds of a product-form fit at the root's LP point
    and 10 Kelley rounds (``DualPathBranch``'s rounds, no stall stop): the bound and the CPU s after some of them."""
    from cmab_milp._threads import blas_single_thread
    from cmab_milp.oracles.norm.paths.plus_dual import DualPathBranch, DualRoot

    oracle = cm.make_oracle(space, "highs")
    query = oracle.norm_query(q["mu"], q["M"], q["f"], 1, **restrictions(q))
    arms = np.setdiff1d(np.arange(space.d), list(query.restrictions.exclude))
    l_hi = float(np.linalg.eigvalsh(q["M"])[-1]) * arms_bound(space)
    with blas_single_thread():
        started = time.process_time()
        tuning = HighsTuning(paths_early=False)
        dual = DualRoot(stall=0.0, **_options(variants))
        branch = DualPathBranch(space, query, arms, l_hi, None, time.perf_counter, tuning, dual=dual)
        branch.nodes = 1
        root = _Node(-np.inf, 0, np.zeros(branch.lp.n, bool), np.zeros(branch.lp.n, bool))
        bound, full = branch.kelley(root, 200, -1e9)
        print(f"  converged root {bound:.4f} ({time.process_time() - started:.2f} CPU s)")
        branch._fit = (psd_majorant(q["M"], branch.arms), *branch.equality_rows(), list(branch.concave))
        for k in range(1, fits + 1):
            bound, full = branch._rounds(root, bound, full, 1)
            if k in (1, 2, 4, 8, 16, 24, 32, 40) or k == fits:
                print(f"  {k:3d} fits: root {bound:.4f} ({time.process_time() - started:.2f} CPU s)", flush=True)


def part_dual(space, q, variants: str = "") -> None:
    """The whole search, today's (``ConcavePathBranch``) and with the root's product-form rounds (``DualPathBranch``),
    one after the other: CPU s, nodes, root bound, value. ``variants``: ``;``-separated ``DualRoot`` options, each
    ``key=value,...`` (an empty one: the defaults); the variant ``notoday`` leaves today's search out."""
    from cmab_milp._threads import blas_single_thread
    from cmab_milp.oracles.norm.paths.plus_dual import DualPathBranch, DualRoot

    oracle = cm.make_oracle(space, "highs")
    query = oracle.norm_query(q["mu"], q["M"], q["f"], 1, **restrictions(q))
    arms = np.setdiff1d(np.arange(space.d), list(query.restrictions.exclude))
    l_hi = float(np.linalg.eigvalsh(q["M"])[-1]) * arms_bound(space)
    chosen = variants.split(";")
    for label in ["today", *chosen]:
        if label == "notoday" or (label == "today" and "notoday" in chosen):
            continue
        with blas_single_thread():
            started = time.process_time()
            if label == "today":
                branch = ConcavePathBranch(space, query, arms, l_hi, None, time.perf_counter, HighsTuning())
            else:
                pairs = (p.split("=") for p in label.split(",") if p)
                options = {k: float(v) if "." in v else int(v) for k, v in pairs}
                dual = DualRoot(**options)
                branch = DualPathBranch(space, query, arms, l_hi, None, time.perf_counter, HighsTuning(), dual=dual)
                label = "dual " + (label or "defaults")
            _, value, _ = branch.run(None, -np.inf)
            seconds = time.process_time() - started
        fits = getattr(branch, "fits", 0)
        print(
            f"  {label:28s}: {seconds:7.2f} CPU s, {branch.nodes:6d} nodes, root {branch.root_bound:.4f},"
            f" value {value:.4f}" + (f", {fits} fits" if fits else ""),
            flush=True,
        )


def _options(text: str) -> dict:
    pairs = (p.split("=") for p in text.split(",") if p)
    return {k: v if k == "method" else float(v) if ("." in v or "e" in v) else int(v) for k, v in pairs}


def part_carry(space, q, variants: str = "") -> None:
    """Today's search and ``DualCarryBranch`` variants one after the other: CPU s, nodes, fits, root bound, value."""
    from cmab_milp._threads import blas_single_thread
    from cmab_milp.oracles.core.base import LimitReached
    from cmab_milp.oracles.norm.paths.dual_carry import DualCarry, DualCarryBranch
    from cmab_milp.oracles.norm.paths.plus_dual import DualRoot

    oracle = cm.make_oracle(space, "highs")
    query = oracle.norm_query(q["mu"], q["M"], q["f"], 1, **restrictions(q))
    arms = np.setdiff1d(np.arange(space.d), list(query.restrictions.exclude))
    l_hi = float(np.linalg.eigvalsh(q["M"])[-1]) * arms_bound(space)
    optimum = None
    for label in ["today", *variants.split(";")]:
        if label == "notoday" or (label == "today" and "notoday" in variants.split(";")):
            continue
        node_text, _, root_text = label.partition("/")
        options = _options(node_text) if label != "today" else {}
        start, limit = options.pop("opt", 0), options.pop("limit", None)
        with blas_single_thread():
            started = time.process_time()
            deadline = None if limit is None else started + float(limit)
            if label == "today":
                branch = ConcavePathBranch(space, query, arms, l_hi, deadline, time.process_time, HighsTuning())
            else:
                carry, dual = DualCarry(**options), (DualRoot(**_options(root_text)) if root_text else None)
                branch = DualCarryBranch(
                    space, query, arms, l_hi, deadline, time.process_time, HighsTuning(), dual=dual, carry=carry
                )
            first = (None, -np.inf) if not start or optimum is None else (optimum, query.value(optimum))
            stopped = ""
            try:
                best, value, _ = branch.run(*first)
            except LimitReached:
                best, value, stopped = None, np.nan, " STOPPED"
            seconds = time.process_time() - started
        if label == "today" and best is not None:
            optimum = best
        fits = getattr(branch, "fits", 0) + getattr(branch, "node_fits", 0)
        print(
            f"  {label:36s}: {seconds:7.2f} CPU s, {branch.nodes:6d} nodes, {fits:5d} fits, root"
            f" {branch.root_bound:.4f}, value {value:.4f}{stopped}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="1", help="comma-separated query numbers of the cell (#0 is the slow one)")
    parser.add_argument(
        "--parts", default="root,linear,rlt,eigen", help="root,linear,hull,rlt,eigen,free,sdp,dual,dualroot,carry"
    )
    parser.add_argument("--f", type=float, default=1.0)
    parser.add_argument("--carry", default="", help="part carry: ';'-separated DualCarry/DualRoot options")
    parser.add_argument("--dual", default="", help="part dual: ';'-separated DualRoot options (k=v,k=v), 'notoday'")
    args = parser.parse_args(argv)
    numbers = [int(k) for k in args.queries.split(",")]
    parts = args.parts.split(",")
    space, qs = queries(args.f, max(numbers) + 1)
    oracle = cm.make_oracle(space, "highs")
    for k in numbers:
        q = qs[k]
        answer = oracle.argmax_norm(**q).astype(float) if "hull" in parts else None
        print(f"#{k}" + ("" if answer is None else f": optimum {index(q, answer):.4f}"), flush=True)
        for part in parts:
            started = time.process_time()
            if part == "hull":
                part_hull(space, q, oracle, answer)
            elif part in ("root", "linear"):
                {"root": part_root, "linear": part_linear}[part](space, q, oracle)
            elif part == "dual":
                part_dual(space, q, args.dual)
            elif part == "carry":
                part_carry(space, q, args.carry)
            elif part == "dualroot":
                for variant in args.dual.split(";"):
                    print(f"  DualRoot options: {variant or 'defaults'}")
                    part_dualroot(space, q, variants=variant)
            else:
                {"rlt": part_rlt, "eigen": part_eigen, "free": part_free, "sdp": part_sdp}[part](space, q)
            print(f"    ({part}: {time.process_time() - started:.1f} CPU s)", flush=True)


if __name__ == "__main__":
    main()
