"""Oracle queries accept arms by label wherever an index is accepted (contract section 7)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm

GRAPH = nx.Graph([("s", "x"), ("x", "t"), ("s", "y"), ("y", "t"), ("x", "y"), ("s", "t")])
BACKENDS = ["highs", "enumerate", "auto", "pulp"]


def _brute(space, weights, include=(), exclude=(), pairs=()):
    value = -np.inf
    for a in space.enumerate():
        if not a[list(include)].all() or a[list(exclude)].any() or any(a[i] and a[j] for i, j in pairs):
            continue
        if weights @ a > value + 1e-12:
            value = float(weights @ a)
    return value


@pytest.mark.parametrize("backend", BACKENDS)
def test_edges_as_labels_equal_their_indices(backend: str) -> None:
    space = cm.STPaths(GRAPH, "s", "t")
    oracle = cm.make_oracle(space, backend)
    weights = np.array([0.3, 0.9, 0.2, 0.8, 0.5, 0.1])
    k = {edge: space.arm_index(edge) for edge in GRAPH.edges()} | {
        (v, u): space.arm_index((u, v)) for u, v in GRAPH.edges()
    }
    by_label = oracle.argmax(
        weights, include=[("y", "s")], exclude=[("t", "s")], forbid_pairs=[(("x", "y"), ("y", "t"))]
    )
    by_index = oracle.argmax(
        weights,
        include=[k[("s", "y")]],
        exclude=[k[("s", "t")]],
        forbid_pairs=[(k[("x", "y")], k[("y", "t")])],
    )
    assert np.array_equal(by_label, by_index)
    pairs = [tuple(sorted((k[("x", "y")], k[("y", "t")])))]
    assert weights @ by_label == pytest.approx(_brute(space, weights, [k[("s", "y")]], [k[("s", "t")]], pairs))
    norm = oracle.argmax_norm(weights, np.eye(6), 0.5, include=[("s", "y")]) if backend != "pulp" else None
    assert norm is None or norm[k[("s", "y")]]


def test_custom_labels_and_mixed_ints() -> None:
    space = cm.Cardinality(4, 2, labels=["red", "green", "blue", "grey"])
    oracle = cm.make_oracle(space, "highs")
    answer = oracle.argmax(np.array([1.0, 0.9, 0.8, 0.7]), include=["grey", 2], forbid_pairs=[("red", "green")])
    assert space.labels_of(answer) == ["blue", "grey"]
    batch = oracle.argmax_batch([{"weights": np.ones(4), "include": ["red"], "exclude": ("green", "blue")}])
    assert space.labels_of(batch[0]) == ["red", "grey"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"include": ["purple"]}, "include: unknown arm 'purple'"),
        ({"exclude": [("s", "q")]}, "exclude: unknown arm"),
        ({"forbid_pairs": [(("s", "x"), ("x", "s"))]}, "a pair needs two different arms"),
        ({"include": 3}, r"write include=\[3\]"),
        ({"include": [9]}, "out of range"),
    ],
)
def test_unknown_labels_are_refused_by_name(kwargs: dict, message: str) -> None:
    space = cm.STPaths(GRAPH, "s", "t")
    if "purple" in str(kwargs):
        space = cm.Cardinality(3, 1, labels=["red", "green", "blue"])
    oracle = cm.make_oracle(space, "enumerate")
    with pytest.raises(ValueError, match=message):
        oracle.argmax(np.ones(space.d), **kwargs)
    assert oracle.ledger.queries == 0
