"""Fingerprints of small runs, printed as JSON: what must have the same bits on every CPU and BLAS kernel.

Run in a child process by ``test_portable_numbers.py`` under each OpenBLAS kernel, with numpy's
AVX-512 paths on and off and 1 or 2 BLAS threads; the children's outputs must be equal.

Per run (policy x oracle, on ``Cardinality(8, 3)`` and a 6-arm path space): a SHA-256 of every
stretch played, the regret and alpha-regret curves, the query and round counts, and the learner's
state (its estimates, as a saved learner holds them); plus the environments' own draws.

``python tests/project/portable_fingerprints.py [quick|full]`` (``quick``: fewer rounds and cases).
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import networkx as nx
import numpy as np

import cmab_milp as cm

D, M = 8, 3
MEANS = np.array([0.55, 0.5, 0.5, 0.45, 0.62, 0.3, 0.58, 0.5])
COV = cm.paper_covariance(D, seed=3, normalise="max") * 0.05
VALUES = [0.0, 0.25, 0.5, 0.75, 1.0]
PROBS = np.array([np.roll([0.3, 0.1, 0.2, 0.15, 0.25], k) for k in range(D)])
PATHS = cm.STPaths(nx.DiGraph([(0, 1), (1, 3), (0, 2), (2, 3), (1, 2), (0, 3)]), 0, 3)


def feed(part: Any, h: Any) -> None:
    """Hash ``part`` (arrays by their bytes, containers item by item, the rest by ``repr``)."""
    if isinstance(part, np.ndarray):
        h.update(str((part.dtype.str, part.shape)).encode())
        h.update(np.ascontiguousarray(part).tobytes())
    elif isinstance(part, dict):
        for key in sorted(part, key=str):
            h.update(repr(key).encode())
            feed(part[key], h)
    elif isinstance(part, (list, tuple)):
        for item in part:
            feed(item, h)
    elif isinstance(part, float):
        h.update(float(part).hex().encode())
    else:
        h.update(repr(part).encode())


def digest(*parts: Any) -> str:
    h = hashlib.sha256()
    feed(list(parts), h)
    return h.hexdigest()


def cases(quick: bool) -> dict[str, tuple[Any, Any, Any]]:
    """name -> (policy builder (oracle -> policy), environment builder (seed -> env), space)."""
    space = cm.Cardinality(D, M)
    T = 600
    uniform = lambda s: cm.UniformNoise(MEANS, width=0.4, seed=s)  # noqa: E731
    bernoulli = lambda s: cm.BernoulliArms(MEANS, seed=s)  # noqa: E731
    gaussian = lambda s: cm.GaussianNoise(MEANS, COV, seed=s)  # noqa: E731
    discrete = lambda s: cm.DiscreteArms(VALUES, PROBS, reward="sqrt_sum", seed=s)  # noqa: E731
    general = {"reward": "sqrt_sum", "support": np.array(VALUES)}
    table = {
        "CUCB-bernoulli": (lambda o: cm.CUCB(space, T, oracle=o), bernoulli, space),
        "CUCB": (lambda o: cm.CUCB(space, T, oracle=o), uniform, space),
        "AROQ": (lambda o: cm.AROQ(space, T, oracle=o), uniform, space),
        "SROQ": (lambda o: cm.SROQ(space, T, oracle=o), uniform, space),
        "CTS": (lambda o: cm.CTS(space, T, oracle=o), bernoulli, space),
        "ESCB": (lambda o: cm.ESCB(space, T, oracle=o), uniform, space),
        "OLS-UCB-C": (lambda o: cm.OLSUCBC(space, T, oracle=o), gaussian, space),
        "AROQ-C": (lambda o: cm.AROQCov(space, T, oracle=o), gaussian, space),
        "SDCB": (lambda o: cm.SDCB(space, T, oracle=o, **general), discrete, space),
        "AROQ-GR": (lambda o: cm.AROQGR(space, T, oracle=o, **general), discrete, space),
    }
    if not quick:
        pd = PATHS.d
        path_means = np.linspace(0.2, 0.8, pd)
        path_cov = 0.03 * (np.eye(pd) + 0.3)
        table.update(
            {
                "SROQ-GR": (lambda o: cm.SROQGR(space, T, oracle=o, **general), discrete, space),
                "SROQ-C": (lambda o: cm.SROQCov(space, T, oracle=o), gaussian, space),
                "AROQ-C-paths": (
                    lambda o: cm.AROQCov(PATHS, T, oracle=o),
                    lambda s: cm.GaussianNoise(path_means, path_cov, seed=s),
                    PATHS,
                ),
            }
        )
    return table


def run_fingerprint(build: Any, env_of: Any, oracle: str, rounds: int, seed: int) -> str:
    policy, env = build(oracle), env_of(seed)
    result = cm.simulate(policy, env, rounds, seed=seed, trace=True, record=25)
    stretches = [(int(t), int(n), a) for t, n, a in result.info["trace"]]
    return digest(
        result.t, result.regret, result.alpha_regret, result.queries, result.rounds, stretches, policy.get_state()
    )


def draws_fingerprint() -> str:
    """The environments' own draws (bulk and per round), independent of any policy."""
    acts = np.array([[1, 1, 0, 0, 1, 0, 0, 0], [0, 0, 1, 1, 0, 0, 1, 0]], bool)
    parts = []
    for env in (cm.GaussianNoise(MEANS, COV, seed=5), cm.DiscreteArms(VALUES, PROBS, reward="sqrt_sum", seed=5)):
        parts.append(env.expected_rewards(acts))
        for a in acts:
            parts.append(env.sample(a, np.random.default_rng(2)))
        for exact in (False, True):
            stats = env.observe(acts, 1000, np.random.default_rng(3), needs={"sum", "outer"}, exact_stats=exact)
            parts += [stats.sum, stats.outer]
    parts.append(cm.paper_covariance(12, seed=1))
    return digest(*parts)


def fingerprints(level: str = "quick") -> dict[str, str]:
    quick = level == "quick"
    rounds = 300 if quick else 600
    out = {"draws": draws_fingerprint()}
    for name, (build, env_of, _space) in cases(quick).items():
        for oracle in ("enumerate", "highs"):
            out[f"{name}|{oracle}"] = run_fingerprint(build, env_of, oracle, rounds, seed=1)
    return out


if __name__ == "__main__":
    level = sys.argv[1] if len(sys.argv) > 1 else "quick"
    if level not in ("quick", "full"):
        sys.exit("usage: python tests/project/portable_fingerprints.py [quick|full]")
    json.dump(fingerprints(level), sys.stdout, indent=1, sort_keys=True)
