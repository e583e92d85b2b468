"""Baselines: CTS, ESCB, AESCB and Epoch-ESCB next to CUCB, AROQ and SROQ; their per-round cost.

Run: ``PYTHONPATH=. .venv/bin/python bench/baselines.py`` (``--quick``: T = 10^4 only, 2 seeds, short
cost runs; ``--parts cts,escb,aescb,regret`` picks the parts below).

1. Regret, queries and wall time at T = 10^4 and 10^5 (5 seeds) on the paper's
   Figure 2 setting (Cardinality d = 20, means Unif[0, 1] from seed 0,
   UniformNoise width 0.5) with m = 3, 5 and 8; every policy on the "auto"
   oracle (ESCB's default route ranks the subsets above a tangent bound of its
   index, exactly); the column ``x CUCB`` is the wall time over CUCB's at the
   same m and T. A cell whose next seed would push it past ``--budget``
   seconds stops early: it shows the seeds it ran and the time 5 seeds would
   take at the measured pace.
2. Per-round cost of CTS relative to CUCB, same space and oracle, runs
   interleaved (CUCB, CTS, CUCB, CTS, ...), median ratio of wall times.
3. ESCB's per-round cost with the exact norm oracle (``route="oracle"``,
   ``oracle.argmax_norm`` with ``M = diag(1/n)``) on cardinality, matchings
   and s-t paths at d = 20-100: mean time per round over the second half of a
   short run (the first rounds play unobserved arms; a case stops after
   ``--cap`` seconds, its line says how many rounds it played); where the
   space is small, also the default route.
4. AESCB's per-round cost against ESCB's on Cardinality(d, 5) for d = 20, 50,
   100 and 200 (``--dims``; rounds after the first half of a short run, ``--cap``
   seconds a case): its default route (every level of a round from one
   combinatorial search, ``policies/aescb_levels.py``) beside the route it took
   before, the space's HiGHS model with the budget row (``budget_oracle="model"``).
   ``--parts aescb-routes``: the budget routes (``--aescb-routes``, default model,
   cardinality, auto) side by side over the same 30 rounds: rounds 21-50, or after
   ``--aescb-warm`` rounds played once and copied per route.

Run the whole T = 10^5 table, AESCB and Epoch-ESCB included: ``--parts regret --horizons 100000 --budget 6000``
(``--policies AESCB --seeds 1``: AESCB and CUCB only, one seed).
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import networkx as nx
import numpy as np

import cmab_milp as cm
from cmab_milp.policies.escb import ENUMERATE_UP_TO

D, WIDTH, SEED = 20, 0.5, 0
POLICIES = {
    "CUCB": cm.CUCB,
    "CTS": cm.CTS,
    "ESCB": cm.ESCB,
    "AESCB": cm.AESCB,
    "Epoch-ESCB": cm.EpochESCB,
    "AROQ": cm.AROQ,
    "SROQ": cm.SROQ,
    "AROQ-ESCB": cm.AROQESCB,
}


def figure2(m: int) -> tuple[cm.Cardinality, cm.UniformNoise]:
    means = np.random.default_rng(SEED).uniform(size=D)
    return cm.Cardinality(D, m), cm.UniformNoise(means, width=WIDTH)


def regret_table(
    horizons: list[int], seeds: int, budget: float, ms: tuple[int, ...] = (3, 5, 8), names: tuple[str, ...] = ()
) -> None:
    """The regret table (module docstring, part 1); ``names``: only these policies (and CUCB, for the ratios)."""
    chosen = {name: cls for name, cls in POLICIES.items() if not names or name in names or name == "CUCB"}
    print(
        f"{'m':>2} {'T':>7} {'policy':10} {'seeds':>5} {'regret':>17} {'queries':>9} {'wall s/seed':>11} "
        f"{'x CUCB':>6} {str(seeds) + ' seeds':>9}"
    )
    for m in ms:
        space, env = figure2(m)
        optimum = env.optimal(space)
        pace: dict[str, float] = {}  # seconds per round of each policy at the previous horizon
        for T in horizons:
            cucb_wall = math.nan
            for name, cls in chosen.items():
                if name not in pace:  # a pilot (300 rounds or 20 s), so that a first seed past the budget is not run
                    pace[name] = per_round(cls(space, T, oracle="auto"), env, min(T, 300), 20.0, half=False)[0]
                if pace[name] * T > budget:
                    print(
                        f"{m:>2} {T:>7} {name:10} {0:>5}   not run: one seed would take ~{pace[name] * T:,.0f} s "
                        f"(at the pace measured before); {seeds} seeds ~{seeds * pace[name] * T:,.0f} s",
                        flush=True,
                    )
                    continue
                runs, spent = [], 0.0
                for seed in range(seeds):
                    if runs and spent + spent / len(runs) > budget:
                        break
                    result = cm.simulate(cls(space, T, oracle="auto"), env, T, seed=seed, record=1, optimum=optimum)
                    runs.append(result)
                    spent += result.wall_seconds
                regret = np.array([r.regret[-1] for r in runs])
                per_seed = spent / len(runs)
                pace[name] = per_seed / T
                if name == "CUCB":
                    cucb_wall = per_seed
                spread = regret.std(ddof=1) if len(runs) > 1 else 0.0
                print(
                    f"{m:>2} {T:>7} {name:10} {len(runs):>5} {regret.mean():>9,.0f} ± {spread:>5,.0f} "
                    f"{np.mean([r.queries[-1] for r in runs]):>9,.0f} {per_seed:>11.2f} {per_seed / cucb_wall:>6.2f} "
                    f"{seeds * per_seed:>9.0f}",
                    flush=True,
                )


def cts_vs_cucb(T: int, repeats: int) -> None:
    print(f"\nCTS / CUCB wall time per round, same oracle, interleaved ({repeats} pairs, T={T})")
    for m in (3, 8):
        space, env = figure2(m)
        optimum = env.optimal(space)
        for backend in ("auto", "highs"):
            times: dict[str, list[float]] = {"CUCB": [], "CTS": []}
            for k in range(repeats):
                for name, cls in (("CUCB", cm.CUCB), ("CTS", cm.CTS)):
                    result = cm.simulate(cls(space, T, oracle=backend), env, T, seed=k, record=1, optimum=optimum)
                    times[name].append(result.wall_seconds / T)
            cucb, cts = np.median(times["CUCB"]), np.median(times["CTS"])
            ratios = np.array(times["CTS"]) / np.array(times["CUCB"])
            print(
                f"  m={m} oracle={backend:6} CUCB {cucb * 1e6:7.0f} us  CTS {cts * 1e6:7.0f} us  "
                f"ratio {np.median(ratios):.2f} (range {ratios.min():.2f}-{ratios.max():.2f})",
                flush=True,
            )


def grid_paths(rows: int, cols: int) -> cm.STPaths:
    graph = nx.DiGraph()
    for u, v in nx.grid_2d_graph(rows, cols).edges():
        graph.add_edge(u, v)
        graph.add_edge(v, u)
    return cm.STPaths(graph, (0, 0), (rows - 1, cols - 1))


def escb_cost(T: int, cap: float) -> None:
    print(f"\nESCB per round with the exact norm oracle (route='oracle', oracle='auto'), rounds {T // 2}-{T}")
    cases = [
        ("cardinality d=20 m=3", cm.Cardinality(20, 3)),
        ("cardinality d=20 m=5", cm.Cardinality(20, 5)),
        ("cardinality d=50 m=5", cm.Cardinality(50, 5)),
        ("cardinality d=100 m=5", cm.Cardinality(100, 5)),
        ("matchings K(5,5) d=25", cm.Matchings(nx.complete_bipartite_graph(5, 5))),
        ("matchings K(10,10) d=100", cm.Matchings(nx.complete_bipartite_graph(10, 10))),
        ("s-t paths 3x4 grid d=34", grid_paths(3, 4)),
        ("s-t paths 4x4 grid d=48", grid_paths(4, 4)),
        ("s-t paths 5x6 grid d=98", grid_paths(5, 6)),
    ]
    rng = np.random.default_rng(1)
    for label, space in cases:
        env = cm.UniformNoise(rng.uniform(size=space.d), width=WIDTH)
        size = sum(math.comb(space.d, k) for k in range(space.m + 1)) if isinstance(space, cm.Cardinality) else 0
        small = 0 < size * space.d <= ENUMERATE_UP_TO
        for route in ("oracle", "auto") if small else ("oracle",):
            # rounds one by one, so that a case can stop at ``cap`` seconds; cost of the rounds after the first half
            policy = cm.ESCB(space, None, oracle="auto", route=route)
            draws, ledger = np.random.default_rng(0), policy.oracle.ledger
            start, times, oracle_times = time.perf_counter(), [], []
            for _ in range(T):
                before, oracle_before = time.perf_counter(), ledger.seconds
                action = policy.select()
                policy.observe(action, env.sample(action, draws))
                times.append(time.perf_counter() - before)
                oracle_times.append(ledger.seconds - oracle_before)
                if time.perf_counter() - start > cap:
                    break
            half = len(times) // 2
            print(
                f"  {label:26} route={route:6} {np.mean(times[half:]) * 1e3:8.2f} ms/round "
                f"(oracle {np.mean(oracle_times[half:]) * 1e3:8.2f} ms) over rounds {half + 1}-{len(times)}, "
                f"run {time.perf_counter() - start:6.1f} s",
                flush=True,
            )


def per_round(policy, env, T: int, cap: float, half: bool = True) -> tuple[float, int]:
    """Mean seconds per round over the second half (``half=False``: all) of a run of at most ``T`` rounds, ``cap`` s."""
    draws, start, times = np.random.default_rng(0), time.perf_counter(), []
    for _ in range(T):
        before = time.perf_counter()
        action = policy.select()
        policy.observe(action, env.sample(action, draws))
        times.append(time.perf_counter() - before)
        if time.perf_counter() - start > cap:
            break
    first = len(times) // 2 if half else 0
    return float(np.mean(times[first:])), len(times)


def aescb_cost(T: int, cap: float, dims: tuple[int, ...] = (20, 50, 100, 200), compiled_per_query: bool = True) -> None:
    """AESCB's per round cost beside CUCB's and ESCB's; ``compiled_per_query``: also the route before the
    combinatorial one (the space's HiGHS model with the budget row, ``budget_oracle="model"``), for the ratio in
    one run (the same rounds: the same seeds, and both routes decide alike)."""
    print(f"\nAESCB and ESCB per round on Cardinality(d, 5), oracle 'auto', second half of <= {T} rounds / {cap:.0f} s")
    rng = np.random.default_rng(2)
    for d in dims:
        space = cm.Cardinality(d, 5)
        env = cm.UniformNoise(rng.uniform(size=d), width=WIDTH)
        line = f"  d={d:>3}"
        cases = (("CUCB", cm.CUCB, {}), ("ESCB", cm.ESCB, {}), ("AESCB", cm.AESCB, {}))
        if compiled_per_query:  # the route "auto" took before the combinatorial one: the compiled HiGHS model
            cases += (("AESCB model", cm.AESCB, {"budget_oracle": "model"}),)
        for name, cls, options in cases:
            policy = cls(space, None, oracle="auto", **options)
            seconds, rounds = per_round(policy, env, T, cap)
            extra = ""
            if name.startswith("AESCB"):
                grid = policy.index.grid
                extra = f" ({grid['budgeted'] / max(grid['rounds'], 1):.1f} budgeted queries a round)"
            line += f"  {name} {seconds * 1e3:8.2f} ms/round over {rounds:>4} rounds{extra}"
        print(line, flush=True)


def aescb_routes(routes: tuple[str, ...], dims: tuple[int, ...] = (20, 50, 100, 200), warm: int = 0) -> None:
    """AESCB's ms per round over 30 rounds of one run per budget route: rounds 21-50, or (``warm`` > 0) rounds
    ``warm + 1 .. warm + 30`` after ``warm`` rounds played once with ``budget_oracle="auto"`` and copied, learner
    and draws, for each route (the same rounds and decisions on every route: the last action's arm sum, printed,
    agrees)."""
    first, last = (warm, warm + 30) if warm else (20, 50)
    print(f"\nAESCB per budget route on Cardinality(d, 5), oracle 'auto', rounds {first + 1}-{last} of one run")
    for d in dims:
        means, line = np.random.default_rng(2).uniform(size=d), f"  d={d:>3}"
        env = cm.UniformNoise(means, width=WIDTH)
        start = cm.AESCB(cm.Cardinality(d, 5), None, oracle="auto")
        draws = np.random.default_rng(0)
        for _ in range(warm):
            action = start.select()
            start.observe(action, env.sample(action, draws))
        for route in routes:
            policy = copy.deepcopy(start)
            policy.index.budget_oracle = route  # the bench switches the route of a copied learner; same state
            policy.params["budget_oracle"] = route
            rng, times, budgeted = copy.deepcopy(draws), [], policy.index.grid["budgeted"]
            for _ in range(first if not warm else 0):
                action = policy.select()
                policy.observe(action, env.sample(action, rng))
            for _ in range(30):
                before = time.perf_counter()
                action = policy.select()
                policy.observe(action, env.sample(action, rng))
                times.append(time.perf_counter() - before)
            line += (
                f"  {route}: {np.mean(times) * 1e3:8.2f} ms/round "
                f"({(policy.index.grid['budgeted'] - budgeted) / (30 + (0 if warm else first)):.1f} budgeted a round,"
                f" last action's arm sum {int(np.flatnonzero(action).sum())})"
            )
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 10^4 only, 2 seeds")
    parser.add_argument("--budget", type=float, default=400.0, help="seconds per table cell before it stops early")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds per ESCB cost case (fewer rounds if slower)")
    parser.add_argument("--m", default="3,5,8", help="comma-separated m values of the regret table")
    parser.add_argument("--horizons", default=None, help="comma-separated horizons of the regret table")
    parser.add_argument(
        "--parts", default="cts,escb,aescb,regret", help="comma-separated: cts, escb, aescb, aescb-routes, regret"
    )
    parser.add_argument(
        "--aescb-routes", default="model,cardinality,auto", help="budget_oracle values of the aescb-routes part"
    )
    parser.add_argument("--aescb-warm", default="0", help="comma-separated warm-up rounds of the aescb-routes part")
    parser.add_argument("--dims", default="20,50,100,200", help="comma-separated d of the aescb parts")
    parser.add_argument("--policies", default="", help="comma-separated policies of the regret table (CUCB always)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per regret cell (default 5; --quick: 2)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    dims = tuple(int(d) for d in args.dims.split(","))
    horizons = [10**4] if args.quick else [10**4, 10**5]
    seeds = args.seeds or (2 if args.quick else 5)
    if "cts" in parts:
        cts_vs_cucb(2000, 3 if args.quick else 7)
    if "escb" in parts:
        escb_cost(200 if args.quick else 400, args.cap)
    if "aescb" in parts:
        aescb_cost(200 if args.quick else 400, args.cap / 2 if args.quick else args.cap, dims)
    if "aescb-routes" in parts:
        for warm in (int(x) for x in args.aescb_warm.split(",")):
            aescb_routes(tuple(args.aescb_routes.split(",")), dims, warm)
    if "regret" in parts:
        print()
        if args.horizons:
            horizons = [int(h) for h in args.horizons.split(",")]
        names = tuple(name for name in args.policies.split(",") if name)
        unknown = set(names) - set(POLICIES)
        if unknown:
            parser.error(f"unknown policies {sorted(unknown)}; known: {', '.join(POLICIES)}")
        regret_table(horizons, seeds, args.budget, tuple(int(m) for m in args.m.split(",")), names)


if __name__ == "__main__":
    main()
