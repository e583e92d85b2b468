"""Logged feedback at scale: reading a million rows, IPS over a million rounds, replay throughput per policy.

Run: ``.venv/bin/python bench/logged.py [--quick]``

1. **Reading**: a CSV of 10^6 (round, arm, reward, inclusion) rows over the Open Bandit space (80 items x
   3 positions, 240 arms; 3 arms a round, 333,334 rounds) read by ``LoggedFeedback.from_csv`` (checks
   included: labels, numbers, probabilities, duplicates, each distinct action against the space), side by
   side with pandas reading the same columns alone (the ratio is the cost of the checks). Target < 3 s.
2. **Estimators**: ``offline_value`` of a matching on a log of 10^6 rounds (3 x 10^6 rows), each
   estimator. Target for per-arm IPS < 1 s.
3. **Replay**: rounds per second of ``replay`` for each policy, on a uniform log of 20,000 rounds
   over a 5x3 matching space (exact match; acceptance ~ 1 / number of actions) and on a full-information
   log of 5,000 rounds (every round accepted).

Each figure is the median of repeated runs, interleaved (the machine is shared); figures in the issue note.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.datasets.open_bandit import matching_space
from cmab_milp.logged.estimators import ESTIMATORS


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _matching_log(space: cm.ActionSpace, rounds: int, seed: int) -> tuple[np.ndarray, ...]:
    """Rounds of 3 distinct items in positions 1..3 drawn uniformly: (round, arm, reward, inclusion) columns."""
    rng = np.random.default_rng(seed)
    items = 80
    chosen = np.argsort(rng.random((rounds, items)), axis=1)[:, :3]  # 3 distinct items per round
    arms = (chosen * 3 + np.arange(3)).ravel()  # arm = item * 3 + (position - 1)
    round_ids = np.repeat(np.arange(rounds), 3)
    rewards = (rng.random(arms.size) < 0.005 + 0.0003 * (arms // 3)).astype(float)
    inclusion = np.full(arms.size, 1 / items)
    return round_ids, arms, rewards, inclusion


def bench_reading(rows: int, repeats: int) -> None:
    import pandas as pd

    space = matching_space(list(range(80)), [1, 2, 3])
    rounds, arms, rewards, inclusion = _matching_log(space, -(-rows // 3), 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.csv"
        pd.DataFrame({"round": rounds, "arm": arms, "reward": rewards, "p": inclusion}).iloc[:rows].to_csv(
            path, index=False
        )
        size = path.stat().st_size
        read = _median_seconds(lambda: pd.read_csv(path, usecols=["round", "arm", "reward", "p"]), repeats)
        full = _median_seconds(lambda: cm.LoggedFeedback.from_csv(path, space, inclusion="p"), repeats)
        log = cm.LoggedFeedback.from_csv(path, space, inclusion="p")
    print(f"reading {rows:,} rows ({size / 1e6:.1f} MB, {log.n:,} rounds, d={space.d}):")
    print(f"  pandas read_csv alone   {read:7.3f} s")
    print(f"  LoggedFeedback.from_csv {full:7.3f} s   (x{full / read:.2f} of pandas alone; target < 3 s)")


def bench_estimators(rounds: int, repeats: int) -> None:
    space = matching_space(list(range(80)), [1, 2, 3])
    r, a, y, p = _matching_log(space, rounds, 1)
    build = _median_seconds(lambda: cm.LoggedFeedback(space, r, a, y, inclusion=p), 1)
    log = cm.LoggedFeedback(space, r, a, y, inclusion=p)
    target = space.arm_vector({(10, 1): 1, (20, 2): 1, (30, 3): 1}).astype(bool)
    print(f"estimators over {log.n:,} rounds ({log.n_rows:,} rows; building the table from arrays {build:.3f} s):")
    for name in ESTIMATORS:
        seconds = _median_seconds(lambda name=name: cm.offline_value(target, log, estimator=name), repeats)
        note = "  (target < 1 s)" if name == "ips" else ""
        print(f"  {name:14s} {seconds:7.3f} s{note}")


POLICIES = {
    "CUCB": lambda s: cm.CUCB(s, None, oracle="auto"),
    "CTS": lambda s: cm.CTS(s, None, oracle="auto", seed=0),
    "ESCB": lambda s: cm.ESCB(s, None, oracle="auto"),
    "AROQ": lambda s: cm.AROQ(s, None, oracle="auto"),
    "SROQ": lambda s: cm.SROQ(s, None, oracle="auto"),
}


def bench_replay(rounds: int, full_rounds: int) -> None:
    space = cm.Matchings(nx.complete_bipartite_graph(5, 3))
    actions = space.enumerate()
    rng = np.random.default_rng(2)
    means = rng.uniform(0.1, 0.9, space.d)
    chosen = rng.integers(0, len(actions), rounds)
    r, a = np.nonzero(actions[chosen])
    y = (rng.random(a.size) < means[a]).astype(float)
    incl = (actions.sum(0) / len(actions))[a]
    log = cm.LoggedFeedback(space, r, a, y, inclusion=incl)
    outcomes = (rng.random((full_rounds, space.d)) < means).astype(float)
    fr, fa = np.nonzero(np.ones_like(outcomes, bool))
    full = cm.LoggedFeedback(space, fr, fa, outcomes[fr, fa], full_information=True)
    print(f"replay on a 5x3 matching space ({len(actions)} actions, d={space.d}):")
    print(
        f"  {'policy':6s} {'exact-match rounds/s':>21s} {'accepted':>9s} {'queries':>8s}   "
        f"{'full-information rounds/s':>26s} {'queries':>8s}"
    )
    for name, make in POLICIES.items():
        start = time.perf_counter()
        exact = cm.replay(make(space), log)
        exact_rate = log.n / (time.perf_counter() - start)
        start = time.perf_counter()
        per_arm = cm.replay(make(space), full)
        full_rate = full.n / (time.perf_counter() - start)
        print(
            f"  {name:6s} {exact_rate:21,.0f} {exact.accepted:9,d} {int(exact.queries[-1]):8,d}   "
            f"{full_rate:26,.0f} {int(per_arm.queries[-1]):8,d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x smaller sizes, one repeat")
    args = parser.parse_args()
    scale, repeats = (10, 1) if args.quick else (1, 3)
    bench_reading(1_000_000 // scale, repeats)
    bench_estimators(1_000_000 // scale, repeats)
    bench_replay(20_000 // scale, 5_000 // scale)


if __name__ == "__main__":
    main()
