"""Small instances of every action-space family, shared by the test modules.

Each entry is ``(name, builder)``; builders are deterministic so test ids are
stable. The spaces are small enough to enumerate, so brute force is the truth.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

import cmab_milp as cm


def _random_dag(n: int, p: float, seed: int) -> nx.DiGraph:
    rng = np.random.default_rng(seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u in range(n):
        for v in range(u + 1, n):
            if rng.random() < p or v == u + 1:
                g.add_edge(u, v)
    return g


def _cyclic_digraph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_edges_from([(0, 1), (1, 2), (2, 3), (3, 1), (1, 4), (4, 3), (3, 5), (2, 5), (5, 2), (0, 4)])
    g.add_edges_from([(6, 7), (7, 8), (8, 6), (0, 6)])  # a cycle off the path
    return g


def _grid(n: int, k: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, k))


SPACES = {
    "cardinality": lambda: cm.Cardinality(8, 3),
    "cardinality-exact": lambda: cm.Cardinality(7, 3, exact=True),
    "partition": lambda: cm.PartitionMatroid([[0, 3, 5], [1, 2], [4, 6, 7, 8]], [2, 1, 2]),
    "graphic": lambda: cm.GraphicMatroid(nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 2), (0, 4)])),
    "spanning-trees": lambda: cm.SpanningTrees(_grid(3, 3)),
    "paths-dag": lambda: cm.STPaths(_random_dag(7, 0.45, 3), 0, 6),
    "paths-cyclic-directed": lambda: cm.STPaths(_cyclic_digraph(), 0, 5),
    "paths-cyclic-undirected": lambda: cm.STPaths(_grid(3, 3), 0, 8),
    "matchings-bipartite": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 4)),
    "matchings-general": lambda: cm.Matchings(nx.petersen_graph()),
    "perfect-bipartite": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 3), perfect=True),
    "perfect-general": lambda: cm.Matchings(nx.complete_graph(6), perfect=True),
    "explicit": lambda: cm.ExplicitActions(np.random.default_rng(5).random((12, 7)) < 0.4),
    "with-constraint": lambda: cm.Cardinality(8, 4).with_constraint([3, 1, 2, 5, 1, 1, 4, 2], "<=", 7),
    "with-constraint-ge": lambda: cm.PartitionMatroid([[0, 1, 2], [3, 4, 5]], [2, 2]).with_constraint(
        [1, 2, 3, 1, 2, 3], ">=", 6
    ),
    "intersection": lambda: cm.Intersection(
        cm.Cardinality(8, 3), cm.PartitionMatroid([[0, 1, 2, 3], [4, 5, 6, 7]], [1, 2])
    ),
    "trees-with-budget": lambda: cm.SpanningTrees(nx.complete_graph(5)).with_constraint(np.arange(10.0), "<=", 14),
}

_ORACLES: dict[str, tuple[cm.Oracle, np.ndarray]] = {}


def oracle_and_actions(family: str, **tuning: Any) -> tuple[cm.Oracle, np.ndarray]:
    """A ``highs`` oracle (``verify=True``, the ``tuning`` options given) on ``SPACES[family]`` and every action of
    it, built once per process."""
    key = family if not tuning else (family, *sorted(tuning.items()))
    if key not in _ORACLES:
        space = SPACES[family]()
        oracle = cm.make_oracle(space, "highs", verify=True, tuning=tuning or None)
        _ORACLES[key] = (oracle, cm.make_oracle(space, "enumerate").actions)
    return _ORACLES[key]


def admitted(actions: np.ndarray, include=(), exclude=(), forbid_pairs=()) -> np.ndarray:
    """Which rows of ``actions`` hold every arm of ``include``, none of ``exclude`` and no pair of ``forbid_pairs``."""
    ok = np.ones(len(actions), bool)
    for i in include:
        ok &= actions[:, i]
    for i in exclude:
        ok &= ~actions[:, i]
    for i, j in forbid_pairs:
        ok &= ~(actions[:, i] & actions[:, j])
    return ok


def psd(rng: np.random.Generator, d: int, ridge: float = 0.1) -> np.ndarray:
    """``A A' / d + ridge I`` with ``A`` Gaussian: a definite covariance like bench/norm_large.py's."""
    a = rng.normal(size=(d, d))
    return a @ a.T / d + ridge * np.eye(d)


def correlated(rng: np.random.Generator, d: int) -> np.ndarray:
    """A covariance with a common component (every pair positively correlated) like the crew problem's."""
    return psd(rng, d, ridge=float(rng.choice([1e-3, 0.1]))) + float(rng.uniform(0.2, 2.0)) * np.ones((d, d))


def norm_values(actions: np.ndarray, mu, M, f, sign: int) -> np.ndarray:
    """The index ``mu @ a + sign f sqrt(a @ M @ a)`` of every row of ``actions``, in numpy (the truth)."""
    x = actions.astype(float)
    return x @ mu + sign * f * np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", x, M, x), 0.0))


def random_restrictions(rng: np.random.Generator, actions: np.ndarray, k: int) -> dict:
    """``k = 0``: none; 1: an arm excluded and two forbidden pairs; 2: also an arm of some action included."""
    d = actions.shape[1]
    arms = rng.permutation(d)
    if k == 0:
        return {}
    res: dict = {
        "exclude": [int(arms[0])],
        "forbid_pairs": [(int(arms[1]), int(arms[2])), (int(arms[3]), int(arms[4]))],
    }
    if k == 2:  # an arm of some action: the query usually stays feasible
        res["include"] = [int(np.flatnonzero(actions[rng.integers(len(actions))])[0])]
    return res


def check_norm_answer(actions: np.ndarray, answer, res: dict, mu, M, f, sign: int, label=()) -> bool:
    """Assert ``answer`` is a best action of ``actions`` that ``res`` admits, within ``1e-9 (1 + |best|)``, or
    ``None`` when none is admitted (brute force). Returns whether one was admitted.
    """
    ok = admitted(actions, **res)
    if not ok.any():
        assert answer is None, label
        return False
    best = float(norm_values(actions[ok], mu, M, f, sign).max())
    got = float(norm_values(answer[None, :], mu, M, f, sign)[0])
    assert got >= best - 1e-9 * (1 + abs(best)), (*label, got, best)
    assert (actions == answer).all(axis=1).any() and admitted(answer[None, :], **res)[0], label
    return True


def random_node(rng: np.random.Generator, actions: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A branch node of ``count`` random arms, each included (40%) or excluded: ``(include, exclude, ok)``, ``ok``
    marking the rows of ``actions`` the node holds."""
    d = actions.shape[1]
    include, exclude = np.zeros(d, bool), np.zeros(d, bool)
    for i in rng.permutation(d)[:count]:
        (include if rng.random() < 0.4 else exclude)[i] = True
    ok = actions[:, include].all(axis=1) & ~actions[:, exclude].any(axis=1)
    return include, exclude, ok
