"""One policy from two checkouts next to CUCB: CPU time per round, runs interleaved, each in its own process.

Run: ``python bench/policy_trees.py BEFORE AFTER --policy CTS [--ms 3,8] [--T 3000] [--triples 7] [--oracle auto]``

``BEFORE`` and ``AFTER`` are folders holding a ``cmab_milp`` package (a checkout, or ``git archive REV
cmab_milp | tar -x -C DIR``). On the paper's Figure 2 setting (``Cardinality(20, m)``, means ``Unif[0, 1]``
from seed 0, ``UniformNoise`` of width 0.5), each triple runs CUCB (from ``AFTER``), the policy from
``BEFORE`` and from ``AFTER`` with the same seed, one process each (``PYTHONPATH`` set to the checkout,
one BLAS thread), and times ``simulate`` in CPU seconds of that process (less sensitive to other jobs on
the machine than wall time). It prints per ``m`` the median microseconds per round, the median ratios to
CUCB of the same triple (with their range) and whether both checkouts ended every run with the same regret.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

RUN = r"""
import sys, time
import numpy as np
import cmab_milp as cm
m, T, seed, name, oracle = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
means = np.random.default_rng(0).uniform(size=20)
space, env = cm.Cardinality(20, m), cm.UniformNoise(means, width=0.5)
optimum = env.optimal(space)
policy = getattr(cm, name)(space, T, oracle=oracle)
start = time.process_time()
result = cm.simulate(policy, env, T, seed=seed, record=1, optimum=optimum)
print(time.process_time() - start, repr(float(result.regret[-1])), cm.__file__)
"""


def run_once(tree: str, name: str, m: int, T: int, seed: int, oracle: str) -> tuple[float, str]:
    """CPU seconds of one ``simulate`` and its final regret (as text), ``name`` imported from ``tree``."""
    env = {
        "PYTHONPATH": os.path.abspath(tree),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OPENBLAS_NUM_THREADS": "1",
    }
    # -P and cwd: the checkout's folder, not the caller's, comes first on sys.path (``-c`` would put the cwd first)
    args = [sys.executable, "-P", "-c", RUN, str(m), str(T), str(seed), name, oracle]
    done = subprocess.run(args, env=env, cwd=os.path.abspath(tree), capture_output=True, text=True, check=True)
    seconds, regret, where = done.stdout.split()
    if not where.startswith(os.path.abspath(tree)):
        raise RuntimeError(f"{name} was imported from {where}, not from {tree}")
    return float(seconds), regret


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="folder holding the earlier cmab_milp")
    parser.add_argument("after", help="folder holding the later cmab_milp")
    parser.add_argument("--policy", default="CTS", help="policy class name in cmab_milp (default CTS)")
    parser.add_argument("--ms", default="3,8", help="comma-separated action sizes m (default 3,8)")
    parser.add_argument("--T", type=int, default=3000, help="rounds per run (default 3000)")
    parser.add_argument("--triples", type=int, default=7, help="interleaved CUCB / before / after runs (default 7)")
    parser.add_argument("--oracle", default="auto", help="backend of every run (default auto)")
    args = parser.parse_args()
    print(f"{args.policy} before / after against CUCB ({args.triples} triples, T={args.T}, {args.oracle})")
    print("| m | CUCB us | before us | after us | before / CUCB | after / CUCB | same regret |")
    print("|---|---|---|---|---|---|---|")
    for m in (int(x) for x in args.ms.split(",")):
        times: dict[str, list[float]] = {"CUCB": [], "before": [], "after": []}
        regrets: dict[str, list[str]] = {"before": [], "after": []}
        for seed in range(args.triples):
            for label, tree, name in (
                ("CUCB", args.after, "CUCB"),
                ("before", args.before, args.policy),
                ("after", args.after, args.policy),
            ):
                seconds, regret = run_once(tree, name, m, args.T, seed, args.oracle)
                times[label].append(seconds)
                if label != "CUCB":
                    regrets[label].append(regret)
        cucb, before, after = (np.array(times[k]) for k in ("CUCB", "before", "after"))
        us = [f"{np.median(x) / args.T * 1e6:.0f}" for x in (cucb, before, after)]
        ratios = [f"{np.median(x / cucb):.2f} ({(x / cucb).min():.2f}-{(x / cucb).max():.2f})" for x in (before, after)]
        same = regrets["before"] == regrets["after"]
        print(f"| {m} | {' | '.join(us)} | {' | '.join(ratios)} | {same} |", flush=True)


if __name__ == "__main__":
    main()
