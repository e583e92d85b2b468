"""Covariance-family benchmark: the norm-index oracle per query, and the three policies' wall time.

Run: ``.venv/bin/python bench/covariance.py [--quick] [--horizon T] [--backends auto,highs,...]``

1. ``argmax_norm`` (the index ``mu @ a + f sqrt(a @ M @ a)``, both signs) on
   ``Cardinality(d, 3)`` for d = 10, 20, 40, with ``mu`` and ``M`` taken from a
   :class:`CovarianceIndex` that has seen correlated feedback (so ``M`` is the
   real, possibly indefinite, matrix). Every available exact backend answers
   the same queries, blocks interleaved (the machine is shared: ratios are
   steadier than absolute times); each answer's objective is checked against
   the best one found (exactness). Printed: median milliseconds per query and
   the ratio to ``auto``.
2. OLS-UCB-C vs AROQ-C vs SROQ-C: wall time of one run each at ``T`` (default
   ``10^5``) on the paper's Figure 3 instance (d=10, m=3), oracle ``auto``,
   side by side; with regret, queries and adaptivity rounds.

``--fuzz`` instead replays norm queries recorded from OLS-UCB-C, AROQ-C and
SROQ-C runs on correlated Gaussian instances (``A A^T + I`` scaled to 0.05 on the
diagonal, d = 10 to 40), and the same queries at extreme scales, on ``highs``
against brute force; prints the counts (right, wrong, refused) and writes the
queries that were not answered right to ``--save`` (an ``.npz``).
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
from cmab_milp.environments.correlated import CopulaNoise, PaperGaussianNoise
from cmab_milp.oracles.core.queries import NormQuery, norm_objective
from cmab_milp.policies.covariance import CovarianceIndex

NEEDS = ("sum", "outer", "pairs")


def realistic_queries(d: int, m: int, count: int, seed: int) -> list[dict]:
    """Norm queries from an index fed with correlated feedback, at several stages of learning."""
    rng = np.random.default_rng(seed)
    space = cm.Cardinality(d, m)
    env = CopulaNoise(rng.uniform(0.05, 0.95, d), corr_seed=seed, width=0.2)
    index = CovarianceIndex(d)
    queries = []
    for k in range(count):
        actions = np.zeros((4, d), bool)
        for row in actions:
            row[rng.choice(d, size=m, replace=False)] = True
        assert all(space.contains(a) for a in actions)
        index.update(env.observe(actions, 5 + 3 * k, rng, NEEDS))
        t = 10 + 40 * k
        query = index.upper_query(t) if k % 2 == 0 else index.lower_query(t)
        queries.append({key: query[key] for key in ("mu", "M", "f", "sign")})
    return queries


def bench_norm_oracle(backends: list[str], dims: list[int], per_backend: int, budget: float) -> None:
    print("== argmax_norm per query: Cardinality(d, 3), median ms (ratio to auto) ==")
    available = set(cm.available_backends())
    names = [b for b in backends if b in available]
    skipped = [b for b in backends if b not in available]
    if skipped:
        print(f"(not available here: {', '.join(skipped)})")
    header = f"{'d':>4} " + " ".join(f"{b:>20}" for b in names)
    print(header)
    for d in dims:
        space = cm.Cardinality(d, 3)
        queries = realistic_queries(d, 3, per_backend, seed=d)
        oracles = {b: cm.make_oracle(space, b) for b in names}
        times: dict[str, list[float]] = {b: [] for b in names}
        worst_gap = 0.0
        spent = dict.fromkeys(names, 0.0)
        for q in queries:  # interleaved: every backend answers query q before q + 1
            values = {}
            for b in names:
                if spent[b] > budget:
                    continue
                start = time.perf_counter()
                action = oracles[b].argmax_norm(q["mu"], q["M"], q["f"], sign=q["sign"])
                elapsed = time.perf_counter() - start
                spent[b] += elapsed
                times[b].append(elapsed)
                values[b] = norm_objective(q["mu"], q["M"], q["f"], q["sign"], action)
            if values:
                best = max(values.values())
                worst_gap = max(worst_gap, max(best - v for v in values.values()))
        base = statistics.median(times["auto"]) if times.get("auto") else None
        cells = []
        for b in names:
            if not times[b]:
                cells.append(f"{'(skipped)':>20}")
                continue
            med = statistics.median(times[b]) * 1e3
            ratio = f" ({med / (base * 1e3):.1f}x)" if base else ""
            cells.append(f"{f'{med:.3f}{ratio} n={len(times[b])}':>20}")
        print(f"{d:>4} " + " ".join(cells) + f"   max objective gap between backends: {worst_gap:.1e}")


def bench_policies(T: int) -> None:
    print(f"\n== OLS-UCB-C vs AROQ-C vs SROQ-C, T={T}, Figure 3 instance (d=10, m=3), oracle auto ==")
    d, m = 10, 3
    space = cm.Cardinality(d, m)
    means = np.random.default_rng(7).uniform(0.0, 1.0, d)
    env = PaperGaussianNoise(means, cov_seed=3, normalise="max", scale=0.25)
    contenders = [
        ("OLS-UCB-C", cm.OLSUCBC(space, T, oracle="auto")),
        ("AROQ-C (paper warm-up)", cm.AROQCov(space, T, oracle="auto")),
        ("AROQ-C (1-pass warm-up)", cm.AROQCov(space, T, oracle="auto", warmup_cycles=1)),
        ("SROQ-C", cm.SROQCov(space, T, oracle="auto")),
    ]
    rows = []
    for name, policy in contenders:
        result = cm.simulate(policy, env, T, seed=0, record=2)
        rows.append((name, result))
    base = rows[0][1].wall_seconds
    print(f"{'policy':<26}{'wall s':>10}{'vs OLS':>9}{'oracle s':>10}{'queries':>9}{'rounds':>8}{'regret':>10}")
    for name, r in rows:
        print(
            f"{name:<26}{r.wall_seconds:>10.2f}{base / r.wall_seconds:>8.0f}x{r.oracle_seconds:>10.2f}"
            f"{int(r.queries[-1]):>9}{int(r.rounds[-1]):>8}{r.regret[-1]:>10.0f}"
        )


def correlated_env(d: int, seed: int) -> cm.GaussianNoise:
    """Gaussian feedback with covariance ``A A^T + I`` scaled to 0.05 on the diagonal."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T + np.eye(d)
    root = np.sqrt(np.diag(cov))
    return cm.GaussianNoise(rng.uniform(0.2, 0.8, d), 0.05 * cov / np.outer(root, root))


def record_norm_queries(policy, env, T: int, seed: int) -> list:
    """The validated norm queries a policy asks in a run (recorded by wrapping its oracle)."""
    seen: list = []
    answer = policy.oracle._answer

    def recording(query):
        if isinstance(query, NormQuery):
            seen.append(query)
        return answer(query)

    policy.oracle._answer = recording
    cm.simulate(policy, env, T, seed=seed)
    return seen


def fuzz_norm(
    dims: list[int],
    horizon: int,
    per_run: int,
    save: str | None,
    policies: tuple[str, ...] = ("OLSUCBC", "AROQCov", "SROQCov"),
) -> None:
    from cmab_milp.oracles.core.base import tolerance

    rng = np.random.default_rng(0)
    queries = []
    for d in dims:
        for name in policies:
            # AROQ-C's default warm-up (log(T)^3 passes over the pairs) would leave no norm query
            options = {"warmup_cycles": 2} if name == "AROQCov" else {}
            policy = getattr(cm, name)(cm.Cardinality(d, 3), horizon, oracle="enumerate", **options)
            seen = record_norm_queries(policy, correlated_env(d, d), horizon, seed=d)
            pick = rng.choice(len(seen), size=min(per_run, len(seen)), replace=False)
            queries += [(f"{name} d={d}", seen[k]) for k in sorted(pick)]
    extreme = []
    for label, q in queries[:: max(1, len(queries) // 60)]:
        for s_mu, s_m, s_f in ((1e6, 1.0, 1e6), (1e-6, 1.0, 1e-6), (1.0, 1e8, 1.0), (1.0, 1e-10, 1.0), (1e4, 1e6, 1e4)):
            extreme.append((f"extreme {label}", NormQuery(q.mu * s_mu, q.M * s_m, q.f * s_f, q.sign, q.restrictions)))
    counts: dict[str, dict[str, int]] = {}
    failing = []
    oracles: dict[int, cm.Oracle] = {}
    brute: dict[int, cm.Oracle] = {}
    for label, q in queries + extreme:
        d = len(q.mu)
        oracle = oracles.setdefault(d, cm.make_oracle(cm.Cardinality(d, 3), "highs"))
        truth = brute.setdefault(d, cm.make_oracle(cm.Cardinality(d, 3), "enumerate"))
        best = q.value(truth._norm(q))
        kind = label.split(" d=")[0]
        row = counts.setdefault(kind, {"right": 0, "wrong": 0, "refused": 0})
        try:
            got = oracle._answer(q)
        except cm.OracleError:
            row["refused"] += 1
            failing.append(q)
            continue
        if got is not None and q.value(got) >= best - tolerance(best):
            row["right"] += 1
        else:
            row["wrong"] += 1
            failing.append(q)
    print("| queries from | right | wrong | refused |\n|---|---|---|---|")
    for kind, row in counts.items():
        print(f"| {kind} | {row['right']} | {row['wrong']} | {row['refused']} |")
    recoveries: dict[str, int] = {}
    for oracle in oracles.values():
        for key, n in getattr(oracle, "norm_recoveries", {}).items():
            recoveries[key] = recoveries.get(key, 0) + n
    print("recoveries:", recoveries or "none")
    if save and failing:
        np.savez_compressed(
            save,
            mu=np.array([q.mu for q in failing], dtype=object),
            M=np.array([q.M for q in failing], dtype=object),
            f=np.array([q.f for q in failing]),
            sign=np.array([q.sign for q in failing]),
        )
        print(f"{len(failing)} queries saved to {save}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and T=10^4")
    parser.add_argument("--horizon", type=int, default=None, help="T of the policy comparison (default 10^5)")
    parser.add_argument("--backends", default="auto,enumerate,highs,scip", help="comma-separated backends")
    parser.add_argument("--skip-policies", action="store_true", help="only the oracle part")
    parser.add_argument("--fuzz", action="store_true", help="replay recorded norm queries on highs vs brute force")
    parser.add_argument("--dims", default="10,20,40", help="with --fuzz: the dimensions d")
    parser.add_argument("--per-run", type=int, default=40, help="with --fuzz: queries kept per policy run")
    parser.add_argument("--save", default=None, help="with --fuzz: .npz file for the queries not answered right")
    parser.add_argument("--policies", default="OLSUCBC,AROQCov,SROQCov", help="with --fuzz: the policies recorded")
    args = parser.parse_args()
    if args.fuzz:
        dims = [int(d) for d in args.dims.split(",")]
        fuzz_norm(dims, args.horizon or 2000, args.per_run, args.save, tuple(args.policies.split(",")))
        return
    per_backend = 6 if args.quick else 20
    budget = 5.0 if args.quick else 30.0  # seconds per backend and dimension
    bench_norm_oracle(args.backends.split(","), [10, 20, 40], per_backend, budget)
    if not args.skip_policies:
        bench_policies(args.horizon or (10**4 if args.quick else 10**5))


if __name__ == "__main__":
    main()
