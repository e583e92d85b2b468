"""Simulator benchmark: rounds per second, bulk cost against numpy's draw, Figure 2(d) ratios.

Run: ``.venv/bin/python bench/simulate.py`` (``--quick`` for smaller horizons).

Problem (the paper's Figure 2): d = 20 arms, at most m = 3 per action
(Cardinality), means Unif[0, 1] from seed 0, UniformNoise(width=0.5), C = 1.5.

1. AROQ and SROQ at T = 10^7 against the time numpy needs merely to draw the
   10^7 x m uniforms of their feedback (target: at most 10x that draw).
2. CUCB, AROQ and SROQ at T = 10^5 on the ``highs`` oracle, side by side in one
   run: wall time, oracle time, queries, adaptivity rounds, regret, and the wall
   time ratios CUCB / AROQ and CUCB / SROQ (the paper's Figure 2(d) claim).
3. Rounds per second of each policy (from the runs above).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import cmab_milp as cm

D, M, WIDTH, SEED = 20, 3, 0.5, 0


def problem() -> tuple[cm.Cardinality, cm.UniformNoise]:
    means = np.random.default_rng(SEED).uniform(size=D)
    return cm.Cardinality(D, M), cm.UniformNoise(means, width=WIDTH)


def numpy_draw_seconds(T: int, repeats: int = 3) -> float:
    """Best time to draw T x m uniforms with numpy (the feedback's raw randomness)."""
    best = np.inf
    for _ in range(repeats):
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        rng.random((T, M))
        best = min(best, time.perf_counter() - start)
    return best


def row(result: cm.SimulationResult) -> str:
    return (
        f"{result.policy:>5}  T={result.T:>9,d}  wall={result.wall_seconds:8.3f}s  "
        f"oracle={result.oracle_seconds:7.3f}s  queries={int(result.queries[-1]):>7,d}  "
        f"rounds={int(result.rounds[-1]):>7,d}  regret={result.regret[-1]:>10.1f}  "
        f"rounds/s={result.T / result.wall_seconds:>14,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 10^6 and 10^4 instead of 10^7 and 10^5")
    parser.add_argument("--oracle", default="highs", help="oracle backend (default: highs)")
    args = parser.parse_args()
    big, small = (10**6, 10**4) if args.quick else (10**7, 10**5)
    space, env = problem()

    print(f"== 1. bulk cost at T = {big:,d} ({args.oracle} oracle) against numpy drawing {big:,d} x {M} uniforms")
    draw = numpy_draw_seconds(big)
    print(f"numpy draw: {draw:.3f}s")
    for policy_class in (cm.AROQ, cm.SROQ):
        result = cm.simulate(policy_class(space, big, oracle=args.oracle), env, seed=SEED)
        print(row(result), f" wall / draw = {result.wall_seconds / draw:5.2f}x (target <= 10x)")

    print(f"\n== 2. CUCB vs AROQ vs SROQ at T = {small:,d} on the {args.oracle} oracle (one run each, same seed)")
    results = {}
    for policy_class in (cm.CUCB, cm.AROQ, cm.SROQ):
        results[policy_class.name] = result = cm.simulate(
            policy_class(space, small, oracle=args.oracle), env, seed=SEED
        )
        print(row(result))
    cucb = results["CUCB"]
    for name in ("AROQ", "SROQ"):
        other = results[name]
        print(
            f"CUCB / {name}: wall {cucb.wall_seconds / other.wall_seconds:8.1f}x, "
            f"oracle time {cucb.oracle_seconds / max(other.oracle_seconds, 1e-12):8.1f}x, "
            f"queries {cucb.queries[-1] / other.queries[-1]:8.1f}x"
        )
    per_query = cucb.oracle_seconds / cucb.queries[-1]
    print(f"CUCB per round: {1e6 * cucb.wall_seconds / small:.0f} us, of which oracle {1e6 * per_query:.0f} us")


if __name__ == "__main__":
    main()
