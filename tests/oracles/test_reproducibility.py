"""The same query gets the same answer: whatever the oracle answered before, on any thread, with any worker count.

Queries here are built with ties (weights equal on several arms, equal diagonal
entries of ``M``), where a solver's history used to decide the answer: SROQ on
``highs`` gave a different regret from run to run and with the core count.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm

#: Families covering the LP path (cardinality, partition, bipartite matching, DAG paths), the MILP
#: path, and lazy cuts (spanning trees, cyclic paths, forests).
FAMILIES = [
    "cardinality",
    "partition",
    "matchings-bipartite",
    "paths-dag",
    "graphic",
    "spanning-trees",
    "paths-cyclic-undirected",
    "with-constraint",
]
WORKERS = [1, 2, 3, 4, 8]


def tied_queries(d: int, n: int, seed: int) -> list[dict]:
    """Weights on a coarse grid (many exact ties, some broken by ~1e-11), some with restrictions."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        q: dict = {"weights": rng.integers(-1, 3, d) / 2.0}
        if k % 4 == 3:  # near-ties: below the contract's tolerance, above rounding
            q["weights"] = q["weights"] + rng.uniform(-1e-11, 1e-11, d)
        if k % 3 == 1:
            q["exclude"] = [int(rng.integers(d))]
        if k % 3 == 2:
            i, j = rng.choice(d, 2, replace=False)
            q["forbid_pairs"] = [(int(i), int(j))]
        out.append(q)
    return out


def history(oracle: cm.Oracle, seed: int, n: int = 30, norm: bool = True) -> None:
    """Unrelated queries: random weights, restrictions, and (``norm``) two norm queries."""
    rng = np.random.default_rng(seed)
    d = oracle.d
    for k in range(n):
        oracle.argmax(rng.normal(size=d), exclude=[int(rng.integers(d))] if k % 2 else ())
        if norm and k in (0, 1) and oracle.name == "highs":
            a = rng.normal(size=(d, d))
            oracle.argmax_norm(rng.normal(size=d), a @ a.T, 0.5, sign=1 if k else -1)


def answers(oracle: cm.Oracle, queries: list[dict]) -> list:
    return [None if (a := oracle.argmax(**q)) is None else a.tolist() for q in queries]


@pytest.mark.parametrize("lp", [True, False], ids=["lp-path", "milp"])
@pytest.mark.parametrize("family", FAMILIES)
def test_tied_answers_do_not_depend_on_history(family: str, lp: bool) -> None:
    space = SPACES[family]()
    queries = tied_queries(space.d, 25, seed=1)
    fresh = [answers(cm.make_oracle(space, "highs", lp_when_integral=lp), [q])[0] for q in queries]
    used = cm.make_oracle(space, "highs", lp_when_integral=lp)
    history(used, seed=2)
    interleaved = []
    for k, q in enumerate(queries):
        interleaved.append(answers(used, [q])[0])
        history(used, seed=100 + k, n=2, norm=False)
    assert interleaved == fresh
    assert answers(used, queries[::-1])[::-1] == fresh  # reversed order, long history
    used.reset()
    assert answers(used, queries) == fresh
    # and the tied answers are optimal (brute force)
    actions = space.enumerate()
    for q, a in zip(queries, fresh, strict=True):
        ok = np.ones(len(actions), bool)
        for i in q.get("exclude", ()):
            ok &= ~actions[:, i]
        for i, j in q.get("forbid_pairs", ()):
            ok &= ~(actions[:, i] & actions[:, j])
        if not ok.any():
            assert a is None
        else:
            assert np.isclose(q["weights"] @ np.array(a), (actions[ok] @ q["weights"]).max(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("family", ["cardinality", "spanning-trees", "paths-cyclic-undirected"])
def test_batches_give_the_same_answers_for_any_worker_count(family: str) -> None:
    space = SPACES[family]()
    queries = tied_queries(space.d, 24, seed=3)
    d = space.d
    rng = np.random.default_rng(4)
    a = rng.normal(size=(d, d))
    norm = [
        {"kind": "norm", "mu": np.round(rng.uniform(0, 1, d) * 2) / 2, "M": np.eye(d) + (a @ a.T) * (k % 2), "f": 0.7}
        for k in range(2)
    ]
    batch = queries + norm
    reference = [None if x is None else x.tolist() for x in cm.make_oracle(space, "highs").argmax_batch(batch)]
    for workers in WORKERS:
        oracle = cm.make_oracle(space, "highs", workers=workers)
        assert oracle.max_workers() == workers
        history(oracle, seed=workers)
        got = [None if x is None else x.tolist() for x in oracle.argmax_batch(batch)]
        assert got == reference, f"{workers} workers"
        oracle.close()


def test_tied_norm_answers_do_not_depend_on_history() -> None:
    space = cm.Cardinality(8, 3)
    rng = np.random.default_rng(5)
    queries = []
    for k in range(12):
        mu = np.round(rng.uniform(0, 1, 8) * 2) / 2  # ties in mu
        M = np.eye(8) * 0.5 if k % 2 else np.full((8, 8), 0.1) + np.eye(8)  # symmetric in the arms
        queries.append({"mu": mu, "M": M, "f": float(rng.uniform(0.1, 2)), "sign": 1 if k % 3 else -1})
    fresh = [cm.make_oracle(space, "highs").argmax_norm(**q).tolist() for q in queries]
    used = cm.make_oracle(space, "highs")
    history(used, seed=6, n=60)
    assert [used.argmax_norm(**q).tolist() for q in queries] == fresh


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8])
def test_sroq_regret_does_not_depend_on_the_core_count(cores: int, monkeypatch) -> None:
    """SROQ asks its batches through argmax_batch, which runs min(4, cores) threads."""
    means = np.random.default_rng(7).uniform(size=12)
    # a coarse grid of means: tied indices are common early on
    means = np.round(means * 4) / 4 * 0.9 + 0.05

    def regret() -> float:
        env = cm.UniformNoise(means, width=0.5)
        return float(cm.simulate(cm.SROQ(cm.Cardinality(12, 3), 3000, oracle="highs"), env, 3000, seed=0).regret[-1])

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    reference = regret()
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert regret() == reference


@pytest.mark.parametrize("policy", ["AROQCov", "SROQCov"])
def test_covariance_policies_do_not_depend_on_the_core_count(policy: str, monkeypatch) -> None:
    d = 6
    rng = np.random.default_rng(8)
    a = rng.normal(size=(d, d))
    cov = a @ a.T + np.eye(d)
    cov *= 0.05 / np.diag(cov)[:, None] ** 0.5 / np.diag(cov)[None, :] ** 0.5
    means = rng.uniform(0.2, 0.8, d)

    def regret() -> float:
        env = cm.GaussianNoise(means, cov)
        pol = getattr(cm, policy)(cm.Cardinality(d, 2), 400, oracle="highs")
        return float(cm.simulate(pol, env, 400, seed=1).regret[-1])

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    reference = regret()
    for cores in (2, 4):
        monkeypatch.setattr(os, "cpu_count", lambda c=cores: c)
        assert regret() == reference


def test_a_reused_policy_object_gives_the_same_regret() -> None:
    means = np.round(np.random.default_rng(9).uniform(size=10) * 4) / 4 * 0.9 + 0.05
    env = cm.UniformNoise(means, width=0.5)
    policy = cm.CUCB(cm.Cardinality(10, 3), 1500, oracle="highs")
    regrets = {float(cm.simulate(policy, env, 1500, seed=0).regret[-1]) for _ in range(3)}
    assert len(regrets) == 1


@pytest.mark.slow_backend
@pytest.mark.parametrize("backend", ["scip", "pulp:HiGHS", "pulp:PULP_CBC_CMD", "enumerate"])
@pytest.mark.parametrize("family", ["cardinality", "spanning-trees"])
def test_other_backends_do_not_depend_on_history(backend: str, family: str) -> None:
    """SCIP started from solutions of earlier solves (kept across freeTransform): tied answers followed them."""
    module = {"scip": "pyscipopt"}.get(backend, "pulp" if backend.startswith("pulp") else None)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    space = SPACES[family]()
    queries = tied_queries(space.d, 10, seed=1)
    try:
        fresh = [answers(cm.make_oracle(space, backend), [q])[0] for q in queries]
    except ValueError as exc:  # a PuLP solver that is not available
        pytest.skip(str(exc))
    used = cm.make_oracle(space, backend)
    history(used, seed=2, n=15)
    assert answers(used, queries) == fresh


@pytest.mark.parametrize("method", ["milp", "enumerate", "branch_bound"])
def test_distribution_index_answers_do_not_depend_on_history(method: str) -> None:
    """K-MAX index queries with tied arms (equal pmf rows), fresh oracle against one with a history."""
    from cmab_milp.nonlinear import DistributionOracle, OutcomeGrid

    space = cm.Cardinality(7, 2)
    grid = OutcomeGrid([0.0, 0.5, 1.0])
    rng = np.random.default_rng(10)
    rows = rng.dirichlet(np.ones(3), size=3)
    queries = [rows[rng.integers(0, 3, 7)] for _ in range(8)]  # only three distinct arms: many ties

    def build():
        return DistributionOracle(space, "max", grid, backend=method)

    fresh = [build().argmax_index(p).tolist() for p in queries]
    used = build()
    for _ in range(10):
        used.argmax_index(rng.dirichlet(np.ones(3), size=7), exclude=[int(rng.integers(7))])
    assert [used.argmax_index(p).tolist() for p in queries] == fresh
    used.reset()
    assert [used.argmax_index(p).tolist() for p in queries] == fresh
