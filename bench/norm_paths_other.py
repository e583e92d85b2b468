"""The slow norm query on s-t paths on the solvers not yet tried: CP-SAT, and the lifted LP (issue 43 item 3).

Run: ``.venv/bin/python bench/norm_paths_other.py [--parts cpsat,lifted,scip] [--only 0,1,2] [--time-limit 120]
[--workers 2] [--scale 100000] [--quad pairs|rows] [--lifted-parts full,star,plain] [--lp-solver ipm|simplex]
[--children] [--reference]``.

The queries are :mod:`bench.norm_paths_compact`'s (so :mod:`bench.norm_large`'s s-t paths cell of the 8x8 grid,
``M = A A^T / d + 0.1 I``, ``mu ~ U[0, 1]``, odd queries restricted), sign +1, ``--f`` (default 1). Parts:

* ``cpsat``: ``max mu @ a + f sqrt(a @ M @ a)`` over s-t paths on OR-tools' CP-SAT. The path: one literal per
  direction of each edge, ``AddCircuit`` over the nodes with a self-loop per skippable node and a fixed return
  ``t -> r -> s`` (as :mod:`cmab_milp.oracles.backends.cpsat_circuit`), the arm ``a_e`` the sum of its two
  directions. Integers with the scale ``S`` (``--scale``): ``mu_e -> ceil(S mu_e)``, ``M -> ceil(S^2 M)`` entry by
  entry (diagonal on ``a_e``, ``2 M_ij`` on the pair), so the scaled quadratic ``Q(a) >= S^2 a @ M @ a`` on every
  path; an integer ``t`` with ``t * t <= Q`` (``AddMultiplicationEquality``) and the tangent rows
  ``2 k t <= k^2 + Q`` at perfect squares ``k^2`` (valid for integers: ``2kt <= k^2 + t^2``; they give the LP the
  concave envelope); objective ``G ceil(S mu) @ a + ceil(G f) t`` (``G = 1`` when ``f`` is an integer, else 1000).
  ``--quad pairs``: a literal per pair of arms, ``p_ij = a_i and a_j`` (one side only where the sign of the
  coefficient makes the other side idle); ``--quad rows``: an integer per arm, ``y_i = (Q a)_i`` if ``a_i`` else 0
  (enforced linear rows). A proof: CP-SAT's bound ``B`` holds the scaled objective of every path, and
  ``S G (true value) <= G mu_up @ a + G f sqrt(Q) < B + G f``, so ``(B + ceil(G f)) / (S G)`` bounds the true
  optimum; each path found is valued exactly (``norm_objective``). Printed: every improving path (wall / CPU s,
  true value), CP-SAT's status, its final bound as a true-value bound, and ``--reference``'s optimum (``auto``).
* ``lifted``: the LP relaxation with products, no semidefinite constraint, on the converged root's path LP
  (:mod:`bench.norm_paths_gap`'s ``sdp`` part: arms and visit columns ``z``, the formulation's rows and the root's
  cuts): ``X_ij`` for ``i < j`` as LP columns (``X_ii = z_i``), McCormick ``X_ij <= z_i``, ``X_ij <= z_j``,
  ``X_ij >= z_i + z_j - 1``, ``X >= 0``, the equality rows times every column (``R_k X_j = b_k z_j``), objective
  ``mu @ z + f s`` with Kelley tangents of ``s <= sqrt(<M, X>)`` (one concave function of one scalar: a few
  rounds). ``--lifted-parts``: ``full`` (as above), ``star`` (each equality row times its own columns only: the
  sparse products a node's star needs), ``plain`` (McCormick only). ``--lp-solver`` (``ipm``: HiGHS's interior point
  with crossover); ``--children``: then the two children of the most fractional column re-solved (``--child-solver``:
  ``simplex``, dual simplex from the root's basis, or ``ipm``), a node's cost in a search using the bound. Printed:
  each Kelley round, the bound (the LP's optimum, an upper bound of the relaxation) and HiGHS's LP CPU s.
  ``--dual-form``: the LP's duals read as a linear overestimator of the index on paths (:func:`dual_overestimator`).
* ``scip``: the ``scip`` backend on the compact model (``oriented=False``, as ``norm_paths_compact.py``'s ``scip``
  route), its clock CPU time, ``--time-limit`` CPU s.

A part whose solver is missing (``ortools``, ``highspy``, ``pyscipopt``) is skipped with a message. Figures and
conclusions: ``docs/performance.md``, "CP-SAT and the lifted LP".

Measured (2026-12-07, load 5-8 on 2 cores; optima 46.537 / 44.542 / 47.261 for #0 / #1 / #2): CP-SAT proves
nothing in 120 s (bounds 51-63; once, ``--quad rows --scale 100000``, 44.09 on #1, below its optimum: not a proof);
``--quad rows --scale 1000`` finds the optimum of #0 and #1 after 39 and 14 CPU s. The lifted LP (``full``) bounds
the roots at 47.215 / 44.710 / 47.540 (converged path LP 48.36 / 45.88 / 48.77; SDP with the same products 47.10 /
44.572), 12-20 CPU s an LP by IPM; a child 19-20 CPU s by IPM, 82 CPU s by dual simplex from the root's basis;
``--dual-form`` is constant on the path LP (#1, #2: the root's bound at every node). SCIP (``--time-limit 300``)
solves #1 in 159 CPU s and stops on #0 and #2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import norm_paths_compact  # the same queries

import cmab_milp as cm
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.core.queries import norm_objective


def _have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        print(f"  (skipped: {module} is not installed)")
        return False
    return True


# ----------------------------------------------------------------------------------------------------------- CP-SAT


def cpsat_model(space: cm.STPaths, q: dict, scale: float, quad: str):
    """``(model, arms, objective scale G, t's coefficient)`` of the query (module docstring)."""
    from ortools.sat.python import cp_model

    d, f = space.d, float(q["f"])
    G = 1 if abs(f - round(f)) < 1e-12 else 1000
    model = cp_model.CpModel()
    nodes = int(max(space.tail.max(), space.head.max())) + 1
    s, t_node = int(space.s), int(space.t)
    arms, circuit = [], []
    for e in range(d):
        u, v = int(space.tail[e]), int(space.head[e])
        directions = []
        for a, b in ((u, v), (v, u)):
            lit = model.new_bool_var(f"arc{a}_{b}")
            if b == s or a == t_node:
                model.add(lit == 0)
            else:
                circuit.append((a, b, lit))
            directions.append(lit)
        arm = model.new_bool_var(f"a{e}")
        model.add(arm == sum(directions))
        arms.append(arm)
    for v in range(nodes):
        if v not in (s, t_node):
            circuit.append((v, v, model.new_bool_var(f"skip{v}")))
    for a, b in ((t_node, nodes), (nodes, s)):
        lit = model.new_bool_var(f"return{a}_{b}")
        model.add(lit == 1)
        circuit.append((a, b, lit))
    model.add_circuit(circuit)
    for i in q.get("include", ()):
        model.add(arms[i] == 1)
    for i in q.get("exclude", ()):
        model.add(arms[i] == 0)
    for i, j in q.get("forbid_pairs", ()):
        model.add(arms[i] + arms[j] <= 1)

    M = np.asarray(q["M"], float)
    diag = np.ceil(scale**2 * np.diag(M)).astype(np.int64)
    iu, ju = np.triu_indices(d, 1)
    pair = np.ceil(scale**2 * 2.0 * M[iu, ju]).astype(np.int64)
    q_max = int(diag[diag > 0].sum() + pair[pair > 0].sum())
    Q = model.new_int_var(0, q_max, "Q")
    if quad == "pairs":
        terms = []
        for i, j, c in zip(iu.tolist(), ju.tolist(), pair.tolist(), strict=True):
            if c == 0:
                continue
            p = model.new_bool_var(f"p{i}_{j}")
            if c > 0:  # wants p = 1: capped by both arms
                model.add_implication(p, arms[i])
                model.add_implication(p, arms[j])
            else:  # wants p = 0: forced by both arms
                model.add_bool_or([p, arms[i].Not(), arms[j].Not()])
            terms.append(c * p)
        model.add(Q == sum(int(c) * a for c, a in zip(diag, arms, strict=True)) + sum(terms))
    elif quad == "rows":
        full = np.zeros((d, d), np.int64)
        full[iu, ju] = pair // 2  # floor of half: the row sums below round up again
        full[ju, iu] = pair - pair // 2
        ys = []
        for i in range(d):
            row = full[i]
            lo = int(row[row < 0].sum() + min(diag[i], 0))
            hi = int(row[row > 0].sum() + max(diag[i], 0))
            y = model.new_int_var(min(lo, 0), max(hi, 0), f"y{i}")
            linear = int(diag[i]) * arms[i] + sum(int(c) * arms[j] for j, c in enumerate(row.tolist()) if c)
            model.add(y == linear).only_enforce_if(arms[i])
            model.add(y == 0).only_enforce_if(arms[i].Not())
            ys.append(y)
        model.add(Q == sum(ys))
    else:
        raise ValueError(f"unknown quad {quad!r}: pairs or rows")
    root = math.isqrt(q_max)
    t = model.new_int_var(0, root, "t")
    tt = model.new_int_var(0, root * root, "tt")
    model.add_multiplication_equality(tt, [t, t])
    model.add(tt <= Q)
    for k in np.unique(np.linspace(1, root, 40).astype(np.int64)).tolist():
        model.add(2 * k * t <= k * k + Q)
    mu_up = np.ceil(scale * G * np.asarray(q["mu"], float)).astype(np.int64)
    coef = math.ceil(G * f)
    model.maximize(sum(int(c) * a for c, a in zip(mu_up, arms, strict=True)) + coef * t)
    return model, arms, G, coef


def part_cpsat(space, q, args) -> float | None:
    """Solve the query on CP-SAT; print every improving path and the final true-value bound. Returns the best value."""
    from ortools.sat.python import cp_model

    built = time.process_time()
    model, arms, G, coef = cpsat_model(space, q, args.scale, args.quad)
    print(
        f"  model ({args.quad}): {len(model.proto.variables)} variables, {len(model.proto.constraints)} constraints,"
        f" built in {time.process_time() - built:.1f} CPU s",
        flush=True,
    )
    found: list[tuple[float, float, float]] = []

    class Log(cp_model.CpSolverSolutionCallback):
        def __init__(self):
            super().__init__()
            self.c0, self.w0 = time.process_time(), time.perf_counter()

        def on_solution_callback(self):
            a = np.array([self.value(x) for x in arms], float)
            found.append(
                (
                    time.perf_counter() - self.w0,
                    time.process_time() - self.c0,
                    norm_objective(q["mu"], q["M"], q["f"], 1, a),
                )
            )

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = args.workers
    solver.parameters.max_time_in_seconds = args.time_limit
    log = Log()
    c0, w0 = time.process_time(), time.perf_counter()
    status = solver.solve(model, log)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    best = -np.inf
    for w, c, value in found:
        if value > best + 1e-9:
            best = value
            print(f"    path {value:.6f} at wall {w:.1f} s, CPU {c:.1f} s", flush=True)
    bound = (solver.best_objective_bound + coef) / (args.scale * G)
    print(
        f"  CP-SAT {solver.status_name(status)}: wall {wall:.1f} s, CPU {cpu:.1f} s; best path {best:.6f}, "
        f"bound on the optimum {bound:.4f} (CP-SAT's own {solver.best_objective_bound:.0f} / {args.scale * G:g};"
        f" {solver.num_branches} branches)",
        flush=True,
    )
    return best if found else None


# ------------------------------------------------------------------------------------------------------- lifted LP


def root_lp(space, q):
    """The converged root's path LP as :mod:`bench.norm_paths_gap`'s ``sdp`` part reads it: ``(rows, lo, hi,
    col_lo, col_hi, n, visit_nodes)`` over every column but the norm's (arms first; ``visit_nodes``: column -> node)."""
    import norm_paths_gap as gap

    branch = gap.search(space, q)
    gap.converged_root(branch)
    lp = branch.lp
    n = lp.t
    visits = dict(zip(lp.visits.tolist(), lp.visit_nodes, strict=True))
    return lp.dense[: lp._n_sparse, :n], lp.sparse_lo, lp.sparse_hi, lp.col_lo[:n], lp.col_hi[:n], n, visits


def lifted_bound(
    space,
    q,
    root,
    variant: str,
    rounds: int = 60,
    solver: str = "simplex",
    children: bool = False,
    child_solver: str = "simplex",
    dual_form: bool = False,
) -> tuple[float, float, int, int]:
    """``max mu @ z + f sqrt(<M, X>)`` over the lifted LP (module docstring); ``variant``: ``full`` (McCormick on
    every pair, every equality row times every column), ``star`` (each equality row times its own columns only),
    ``plain`` (McCormick only). ``solver``: HiGHS's LP solver; ``children``: then re-solve the two children of the
    most fractional column by ``child_solver`` (``simplex``: dual simplex from the root's basis; a node's cost in a
    search). Returns ``(bound, LP CPU s, columns, rows)``; the bound is the LP's optimum with its tangent rows (an
    upper bound of the relaxation)."""
    import highspy
    from scipy import sparse

    rows, lo, hi, col_lo, col_hi, n, _ = root
    d, mu, f = space.d, np.asarray(q["mu"], float), float(q["f"])
    M = np.asarray(q["M"], float)
    iu, ju = np.triu_indices(n, 1)
    P = len(iu)
    # columns: z (n), X pairs (P), s (1)
    ncol = n + P + 1
    pair_id = {}
    for k, (i, j) in enumerate(zip(iu.tolist(), ju.tolist(), strict=True)):
        pair_id[(i, j)] = n + k
    blocks, b_lo, b_hi = [], [], []
    eq = lo == hi
    # the path LP's own rows
    R = sparse.csr_matrix(rows)
    blocks.append(sparse.hstack([R, sparse.csr_matrix((R.shape[0], P + 1))]))
    b_lo.append(lo)
    b_hi.append(hi)
    # McCormick: X - z_i <= 0, X - z_j <= 0, X - z_i - z_j >= -1
    k = np.arange(P)
    for coeffs, low, high in (
        ((iu, -1.0), -np.inf, 0.0),
        ((ju, -1.0), -np.inf, 0.0),
    ):
        cols, c = coeffs
        A = sparse.csr_matrix(
            (np.concatenate([np.ones(P), np.full(P, c)]), (np.concatenate([k, k]), np.concatenate([n + k, cols]))),
            shape=(P, ncol),
        )
        blocks.append(A)
        b_lo.append(np.full(P, low))
        b_hi.append(np.full(P, high))
    A = sparse.csr_matrix(
        (
            np.concatenate([np.ones(P), -np.ones(P), -np.ones(P)]),
            (np.concatenate([k, k, k]), np.concatenate([n + k, iu, ju])),
        ),
        shape=(P, ncol),
    )
    blocks.append(A)
    b_lo.append(np.full(P, -1.0))
    b_hi.append(np.full(P, np.inf))
    if variant in ("full", "star"):  # RLT: R_k . X_j - b_k z_j = 0 for each equality row k and column j
        data, ri, ci = [], [], []
        Req = rows[eq]
        beq = lo[eq]
        r = 0
        for kk in range(Req.shape[0]):
            nz = np.flatnonzero(Req[kk])
            for j in range(n) if variant == "full" else nz.tolist():
                for i in nz.tolist():
                    col = j if i == j else pair_id[(min(i, j), max(i, j))]
                    data.append(Req[kk, i])
                    ri.append(r)
                    ci.append(col)
                data.append(-beq[kk])
                ri.append(r)
                ci.append(j)
                r += 1
        A = sparse.coo_matrix((data, (ri, ci)), shape=(r, ncol)).tocsr()
        A.sum_duplicates()
        blocks.append(A)
        b_lo.append(np.zeros(r))
        b_hi.append(np.zeros(r))
    A = sparse.vstack(blocks).tocsc()
    row_lo, row_hi = np.concatenate(b_lo), np.concatenate(b_hi)
    # <M, X> over the arms as a vector w on the columns
    wvec = np.zeros(ncol)
    wvec[:d] = np.diag(M)
    arm = (iu < d) & (ju < d)
    wvec[n + np.flatnonzero(arm)] = 2.0 * M[iu[arm], ju[arm]]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("solver", solver)
    cost = np.zeros(ncol)
    cost[:d] = -mu
    cost[-1] = -f
    s_hi = float(np.sqrt(np.abs(M).sum()))
    lower = np.concatenate([col_lo, np.zeros(P), [0.0]])
    upper = np.concatenate([col_hi, np.ones(P), [s_hi]])
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = ncol, A.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lower, upper
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h.passModel(lp)
    c0 = time.process_time()

    def tangent(w_at: float) -> None:  # s <= sqrt(w_k) + (w - w_k) / (2 sqrt(w_k))
        root_w = math.sqrt(max(w_at, 1e-9))
        g = wvec / (2 * root_w)
        g[-1] = -1.0
        idx = np.flatnonzero(g)
        h.addRow(-(root_w - w_at / (2 * root_w)), np.inf, len(idx), idx, g[idx])

    for w_at in np.geomspace(4.0, s_hi**2, 24):  # a first envelope, then a tangent at each LP point
        tangent(float(w_at))
    for _ in range(rounds):
        r0 = time.process_time()
        h.run()
        x = np.array(h.getSolution().col_value)
        w_at = float(wvec @ x)
        value, spent = -h.getInfo().objective_function_value, time.process_time() - r0
        print(f"    LP: s {x[-1]:.4f}, sqrt(w) {math.sqrt(max(w_at, 0)):.4f}, optimum {value:.4f}, {spent:.2f} CPU s")
        if x[-1] <= math.sqrt(max(w_at, 0.0)) + 1e-6:
            break
        tangent(w_at)
    bound = float(mu @ x[:d] + f * x[-1])  # the LP's optimum: its tangent rows overestimate the square root
    cpu = time.process_time() - c0
    if dual_form:
        dual_overestimator(space, q, root, h, x)
    if children:  # a node's cost: the two children of the most fractional column, re-solved from the root's basis
        h.setOptionValue("solver", child_solver)
        h.setOptionValue("time_limit", h.getRunTime() + 600.0)  # (HiGHS counts time since the object was made)
        col = int(np.argmin(np.abs(x[:n] - 0.5)))
        for value in (0.0, 1.0):
            h.changeColBounds(col, value, value)
            r0 = time.process_time()
            h.run()
            child = -h.getInfo().objective_function_value
            status = h.getModelStatus()
            if status != highspy.HighsModelStatus.kOptimal:  # (its objective is not the child's LP optimum)
                print(f"    child z_{col} = {value:g}: HiGHS {h.modelStatusToString(status)}; again from scratch")
                h.clearSolver()
                h.run()
                child = -h.getInfo().objective_function_value
                if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                    child = math.nan
            how = "dual simplex from the root's basis" if child_solver == "simplex" else child_solver
            info = h.getInfo()
            print(
                f"    child z_{col} = {value:g} (z was {x[col]:.3f}): bound {child:.4f}, {how} "
                f"{time.process_time() - r0:.2f} CPU s, {info.simplex_iteration_count + info.ipm_iteration_count} "
                "iterations",
                flush=True,
            )
            h.changeColBounds(col, col_lo[col], col_hi[col])
    return bound, cpu, ncol, A.shape[0]


def dual_overestimator(space, q, root, h, x) -> None:
    """The lifted LP's duals as a linear overestimator of the index on every path (the path rows kept, every other row
    relaxed with its dual, each pair column at its better bound): ``mu @ a + f sqrt(a @ M @ a) <= g @ z + g0``.
    Printed: its maximum over the root's path LP (the lifted bound again), its value at the best path of
    ``max g @ a`` over paths (one longest-path MILP: the Lagrangian bound a search with this one form cannot pass)
    and over the path LP with the most fractional column fixed (a child's bound with the root's form, no re-fit)."""
    from scipy import sparse
    from scipy.optimize import linprog

    rows, lo, hi, col_lo, col_hi, n, visits = root
    lp, sol = h.getLp(), h.getSolution()
    A = sparse.csc_matrix((lp.a_matrix_.value_, lp.a_matrix_.index_, lp.a_matrix_.start_), (lp.num_row_, lp.num_col_))
    y = np.array(sol.row_dual)
    y[: rows.shape[0]] = 0.0  # the path rows stay as rows
    y[np.abs(y) < 1e-12] = 0.0
    r_lo, r_hi = np.array(lp.row_lower_), np.array(lp.row_upper_)
    side = np.where(y > 0, r_lo, r_hi)  # HiGHS minimises: y > 0 at a lower side
    K = float(y[y != 0] @ side[y != 0])
    others = np.array(lp.col_cost_) - A.T @ y  # the columns' costs with the relaxed rows' duals taken off
    red_x = others[n:]
    c_lo, c_hi = np.array(lp.col_lower_)[n:], np.array(lp.col_upper_)[n:]
    K += float(np.minimum(red_x * c_lo, red_x * c_hi).sum())  # each pair column and s at its better bound
    g, g0 = -others[:n], -K
    d = space.d
    equal = lo == hi
    bounds = list(zip(col_lo, col_hi, strict=True))

    def path_lp(fixed=None):
        b = list(bounds)
        if fixed is not None:
            b[fixed[0]] = (fixed[1], fixed[1])
        above, below = np.isfinite(hi) & ~equal, np.isfinite(lo) & ~equal
        found = linprog(
            -g,
            A_ub=np.vstack([rows[above], -rows[below]]),
            b_ub=np.concatenate([hi[above], -lo[below]]),
            A_eq=rows[equal],
            b_eq=lo[equal],
            bounds=b,
            method="highs",
        )
        return -found.fun + g0

    fold = g[:d].copy()  # visit columns folded into the arms: visit(v) = (arms of the path at v) / 2
    for column, v in visits.items():
        for e in np.flatnonzero((space.tail == v) | (space.head == v)):
            fold[e] += g[column] / 2
    oracle = cm.make_oracle(space, "highs")
    keep = {k: q[k] for k in ("include", "exclude", "forbid_pairs") if k in q}
    best = oracle.argmax(fold, **keep).astype(float)
    optimum = oracle.argmax_norm(**q).astype(float)
    col = int(np.argmin(np.abs(x[:n] - 0.5)))
    print(
        f"    dual form: max |g| {np.abs(g).max():.2e}, g0 {g0:.4f};"
        f" over the path LP {path_lp():.4f}; over paths (MILP) {fold @ best + g0:.4f} (that path's index"
        f" {norm_objective(q['mu'], q['M'], q['f'], 1, best):.4f}); at the optimum {fold @ optimum + g0:.4f} >= "
        f"{norm_objective(q['mu'], q['M'], q['f'], 1, optimum):.4f}; children z_{col} = 0 / 1 on the path LP "
        f"{path_lp((col, 0.0)):.4f} / {path_lp((col, 1.0)):.4f}",
        flush=True,
    )


def part_lifted(space, q, args) -> None:
    if not _have("highspy"):
        return
    c0 = time.process_time()
    root = root_lp(space, q)
    print(f"  converged root LP: {root[0].shape[0]} rows, {root[5]} columns ({time.process_time() - c0:.1f} CPU s)")
    for variant in args.lifted_parts.split(","):
        bound, cpu, cols, nrows = lifted_bound(
            space,
            q,
            root,
            variant,
            solver=args.lp_solver,
            children=args.children,
            child_solver=args.child_solver,
            dual_form=args.dual_form,
        )
        print(
            f"  lifted LP {variant}: bound {bound:.4f} ({cols} columns, {nrows} rows; LP {cpu:.2f} CPU s)", flush=True
        )


# ------------------------------------------------------------------------------------------------------------ main


def part_scip(space, q, args) -> None:
    if "scip" not in cm.available_backends():
        print("  (skipped: pyscipopt is not installed)")
        return
    oracle = norm_paths_compact.make_route("scip", space, args.time_limit)
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        a = oracle.argmax_norm(**q)
        outcome = f"value {norm_objective(q['mu'], q['M'], q['f'], 1, a):.6f}"
    except OracleError as error:
        outcome = f"stopped: {str(error)[:120]}"
    print(f"  scip: CPU {time.process_time() - c0:.1f} s, wall {time.perf_counter() - w0:.1f} s; {outcome}", flush=True)
    oracle.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="cpsat,lifted", help="cpsat,lifted,scip")
    parser.add_argument("--only", default="0,1,2", help="comma-separated query numbers")
    parser.add_argument("--f", type=float, default=1.0)
    parser.add_argument("--time-limit", type=float, default=120.0, help="CP-SAT (wall s) and SCIP (CPU s) per query")
    parser.add_argument("--workers", type=int, default=2, help="CP-SAT's workers")
    parser.add_argument("--scale", type=float, default=1e5, help="CP-SAT's scale S of mu (S^2 of M)")
    parser.add_argument("--quad", default="pairs", help="CP-SAT's quadratic: pairs or rows")
    parser.add_argument("--lifted-parts", default="full", help="plain,star,full")
    parser.add_argument("--lp-solver", default="ipm", help="the lifted LP's HiGHS solver: simplex, ipm, pdlp")
    parser.add_argument("--children", action="store_true", help="lifted: re-solve two children from the root's basis")
    parser.add_argument("--child-solver", default="simplex", help="the children's HiGHS solver (simplex: warm)")
    parser.add_argument("--dual-form", action="store_true", help="lifted: the linear overestimator of its duals")
    parser.add_argument("--reference", action="store_true", help="also solve each query with auto (its optimum)")
    args = parser.parse_args(argv)
    numbers = [int(k) for k in args.only.split(",")]
    parts = args.parts.split(",")
    space, qs = norm_paths_compact.bench_queries(args.f, 1, max(numbers) + 1)
    print(f"s-t paths 8x8 grid, f = {args.f:g}, sign +1; parts {parts}", flush=True)
    for k in numbers:
        q = qs[k]
        print(f"#{k}" + (" (restricted)" if k % 2 else ""), flush=True)
        if args.reference:
            c0 = time.process_time()
            a = cm.make_oracle(space, "auto").argmax_norm(**q)
            value = norm_objective(q["mu"], q["M"], q["f"], 1, a)
            print(f"  auto: optimum {value:.6f} ({time.process_time() - c0:.1f} CPU s with its planning)", flush=True)
        for part in parts:
            if part == "cpsat":
                if _have("ortools"):
                    part_cpsat(space, q, args)
            elif part == "lifted":
                part_lifted(space, q, args)
            elif part == "scip":
                part_scip(space, q, args)
            else:
                raise ValueError(f"unknown part {part!r}: cpsat, lifted or scip")


if __name__ == "__main__":
    main()
