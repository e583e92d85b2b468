"""CTS per round relative to CUCB: same space, oracle and environment, runs interleaved.

Run: ``PYTHONPATH=. .venv/bin/python bench/cts.py [--T 2000] [--pairs 7] [--oracles auto,highs] [--ms 3,8]``

The paper's Figure 2 setting (``Cardinality(20, m)``, means ``Unif[0, 1]`` from seed 0, ``UniformNoise``
of width 0.5). For each ``(m, oracle, prior)`` the bench plays ``--pairs`` pairs of runs of ``T`` rounds,
CUCB then CTS, one after the other (so both see the machine in the same state), and prints the median
wall time per round of each and the median of the per-pair ratios CTS / CUCB with their range (target:
at most 1.2). ``"auto"`` routes these queries to the sorting oracle (``combinatorial``), where a round
costs the least and the sampling weighs the most.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import cmab_milp as cm

D, WIDTH, SEED = 20, 0.5, 0


def figure2(m: int) -> tuple[cm.Cardinality, cm.UniformNoise]:
    means = np.random.default_rng(SEED).uniform(size=D)
    return cm.Cardinality(D, m), cm.UniformNoise(means, width=WIDTH)


def seconds_per_round(policy: cm.Policy, env: cm.UniformNoise, T: int, seed: int, optimum) -> float:
    start = time.perf_counter()
    cm.simulate(policy, env, T, seed=seed, record=1, optimum=optimum)
    return (time.perf_counter() - start) / T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--T", type=int, default=2000, help="rounds per run (default 2000)")
    parser.add_argument("--pairs", type=int, default=7, help="interleaved CUCB/CTS pairs (default 7)")
    parser.add_argument("--oracles", default="auto,highs", help="comma-separated backends (default auto,highs)")
    parser.add_argument("--ms", default="3,8", help="comma-separated action sizes m (default 3,8)")
    parser.add_argument("--priors", default="beta,gaussian", help="CTS posteriors (default beta,gaussian)")
    args = parser.parse_args()
    print(f"CTS / CUCB wall time per round, interleaved pairs ({args.pairs} pairs, T={args.T}, d={D})")
    print("| m | oracle | prior | CUCB us | CTS us | CTS / CUCB (median) | range |")
    print("|---|---|---|---|---|---|---|")
    for m in (int(x) for x in args.ms.split(",")):
        space, env = figure2(m)
        optimum = env.optimal(space)
        for oracle in args.oracles.split(","):
            for prior in args.priors.split(","):
                cucb, cts = [], []
                for k in range(args.pairs):
                    cucb.append(seconds_per_round(cm.CUCB(space, args.T, oracle=oracle), env, args.T, k, optimum))
                    policy = cm.CTS(space, args.T, oracle=oracle, prior=prior)
                    cts.append(seconds_per_round(policy, env, args.T, k, optimum))
                ratios = np.array(cts) / np.array(cucb)
                print(
                    f"| {m} | {oracle} | {prior} | {np.median(cucb) * 1e6:.0f} | {np.median(cts) * 1e6:.0f} "
                    f"| {np.median(ratios):.2f} | {ratios.min():.2f}-{ratios.max():.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
