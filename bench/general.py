"""General-reward benchmark: index evaluation and oracle per query, and the three policies' wall time.

Run: ``.venv/bin/python bench/general.py [--quick] [--horizon T]``

1. Index evaluation: the exact expected reward of every action under a product
   of optimistic distributions (what one "enumerate" query scores), per
   reward, in microseconds per action; the optimistic / pessimistic
   distributions themselves (per index refresh).
2. Oracle per query: ``enumerate`` vs ``branch_bound`` vs ``milp`` (K-MAX) vs ``greedy`` on the same
   optimistic index queries (from an index fed with feedback, at several
   stages of learning), blocks interleaved (the machine is shared: ratios are
   steadier than absolute times). Each exact answer is checked against the
   enumeration optimum; greedy's worst ratio to it is printed.
3. SDCB vs AROQ-GR vs SROQ-GR: wall time of one run each at ``T`` (default
   ``10^5``) on the paper's Figure 4 instance (d=5, m=2, sqrt of the sum),
   side by side, with the ratios to SDCB, regret, queries and adaptivity rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.nonlinear import DistributionOracle, make_reward
from cmab_milp.policies.general import DistributionIndex

VALUES = [0.2, 0.4, 0.6, 0.8, 1.0]


def figure4_env(seed: int = 7) -> cm.DiscreteArms:
    rng = np.random.default_rng(seed)
    probs = np.full((5, 5), 0.01 / 4)
    probs[np.arange(5), rng.integers(0, 5, size=5)] = 0.99
    return cm.DiscreteArms(VALUES, probs, reward="sqrt_sum", seed=0)


def kmax_env(d: int, seed: int = 11) -> cm.DiscreteArms:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet((2, 2, 1, 0.5, 0.2), size=d)
    return cm.DiscreteArms([0.0, 0.25, 0.5, 0.75, 1.0], probs, reward="max", seed=0)


def fed_indices(env: cm.DiscreteArms, reward: str, stages: list[int], seed: int = 0) -> list[tuple[int, np.ndarray]]:
    """Optimistic pmfs of an index that has seen ``n`` draws of every arm, for each ``n`` in ``stages``."""
    rng = np.random.default_rng(seed)
    grid = env.grid.with_value(1.0)
    out = []
    for n in stages:
        index = DistributionIndex(env.d, make_reward(reward), grid, env.grid, C=1.5)
        index.update(env.observe(np.ones((1, env.d), bool), n, rng, ("hist",), exact_stats=True))
        out.append((n, index.optimistic(10 * n)))
    return out


def timed(fn, repeat: int) -> float:
    """Median seconds of ``fn()`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_index(quick: bool) -> None:
    print("== index evaluation: exact E[r] of every action under optimistic distributions ==")
    print(f"{'space':<22}{'reward':<14}{'actions':>9}{'us/action':>11}{'ms/all':>9}")
    cases = [
        (cm.Cardinality(5, 2), figure4_env(), "sqrt_sum"),
        (cm.Cardinality(20, 3), kmax_env(20), "max"),
        (cm.Cardinality(20, 3), kmax_env(20), "sqrt_sum"),
        (cm.Cardinality(20, 3), kmax_env(20), "threshold:1.5"),
    ]
    for space, env, reward in cases:
        actions = space.enumerate()
        _, pmf = fed_indices(env, reward, [50])[0]
        r = make_reward(reward)
        grid = env.grid.with_value(1.0)
        t = timed(lambda r=r, a=actions, g=grid, p=pmf: r.expected(a, g, p), 3 if quick else 9)
        label = f"Card({space.d},{space.m})"
        print(f"{label:<22}{reward:<14}{len(actions):>9}{1e6 * t / len(actions):>11.2f}{1e3 * t:>9.2f}")
    env = kmax_env(30)
    index = DistributionIndex(30, make_reward("max"), env.grid, env.grid, C=1.5)
    index.update(env.observe(np.ones((1, 30), bool), 100, np.random.default_rng(0), ("hist",)))
    t_up = timed(lambda: index.optimistic(1000), 50)
    t_down = timed(lambda: index.pessimistic(1000), 50)
    print(f"optimistic / pessimistic distributions, d=30: {1e6 * t_up:.0f} / {1e6 * t_down:.0f} us per refresh")


def bench_oracles(quick: bool) -> None:
    print("\n== oracle per query: median ms (ratio to enumerate); exactness checked ==")
    stages = [3, 30, 300, 3000]
    cases = [("max", 20, 3), ("max", 30, 4), ("sqrt_sum", 20, 3)]
    if not quick:
        cases.append(("max", 40, 4))
    print(f"{'case':<22}{'enumerate':>12}{'branch_bound':>20}{'milp':>20}{'greedy':>20}{'greedy/opt worst':>18}")
    for reward, d, m in cases:
        env = kmax_env(d)
        space = cm.Cardinality(d, m)
        queries = [pmf for _, pmf in fed_indices(env, reward, stages)]
        grid = env.grid.with_value(1.0)
        methods = ["enumerate", "branch_bound", "greedy"] + (["milp"] if reward == "max" else [])
        oracles = {k: DistributionOracle(space, reward, grid, backend=k) for k in methods}
        times = {k: [] for k in oracles}
        worst = 1.0
        for _ in range(1 if quick else 3):
            for pmf in queries:
                answers = {}
                for name, oracle in oracles.items():  # interleaved: one query, every method
                    start = time.perf_counter()
                    answers[name] = oracle.argmax_index(pmf)
                    times[name].append(time.perf_counter() - start)
                value = {k: float(oracles["enumerate"].expected(a, pmf)[0]) for k, a in answers.items()}
                opt = value["enumerate"]
                assert value["branch_bound"] >= opt - 1e-9 * (1 + abs(opt)), "branch_bound missed the optimum"
                assert value.get("milp", opt) >= opt - 1e-8, "milp missed the optimum"
                worst = min(worst, value["greedy"] / opt)
        med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        cells = [f"{med['enumerate']:>12.2f}"] + [
            f"{med[k]:>10.2f} ({med[k] / med['enumerate']:.3f}x)" if k in med else f"{'-':>20}"
            for k in ("branch_bound", "milp", "greedy")
        ]
        print(f"{f'{reward} Card({d},{m})':<22}{''.join(cells)}{worst:>18.4f}")


def bench_policies(T: int) -> None:
    print(f"\n== SDCB vs AROQ-GR vs SROQ-GR on Figure 4 (d=5, m=2, sqrt_sum), T={T}, one seed, side by side ==")
    env = figure4_env()
    space = cm.Cardinality(5, 2)
    optimum = env.optimal(space)
    rows = []
    for cls in (cm.SDCB, cm.AROQGR, cm.SROQGR):
        policy = cls(space, T, oracle="enumerate", reward="sqrt_sum", support=env.support)
        result = cm.simulate(policy, env, T, seed=0, optimum=optimum)
        rows.append((cls.name, result))
    base = rows[0][1].wall_seconds
    print(f"{'policy':<10}{'wall s':>10}{'vs SDCB':>10}{'oracle s':>10}{'regret':>10}{'queries':>9}{'rounds':>8}")
    for name, r in rows:
        print(
            f"{name:<10}{r.wall_seconds:>10.2f}{base / r.wall_seconds:>9.0f}x{r.oracle_seconds:>10.3f}"
            f"{r.regret[-1]:>10.1f}{r.queries[-1]:>9}{r.rounds[-1]:>8}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller cases, T=10^4")
    parser.add_argument("--horizon", type=int, default=None, help="T of the policy comparison (default 10^5)")
    args = parser.parse_args()
    T = args.horizon or (10_000 if args.quick else 100_000)
    bench_index(args.quick)
    bench_oracles(args.quick)
    bench_policies(T)


if __name__ == "__main__":
    main()
