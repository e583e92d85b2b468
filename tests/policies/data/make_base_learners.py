"""Writes ``base_learners/``: saved learners written by the code before issue 41's catalogue (commit 6798ab4).

Run once from that commit (``PYTHONPATH=. python tests/policies/data/make_base_learners.py``); the files and
``expected.json`` (each learner's next selections after loading) are committed as test data, so that a change
of the saving code cannot silently drop files written before it (``tests/policies/test_base_learners.py``).
"""

from __future__ import annotations

import json
import pathlib

import networkx as nx
import numpy as np

import cmab_milp as cm

HERE = pathlib.Path(__file__).parent / "base_learners"
GRAPH = nx.Graph([("s", "x"), ("x", "t"), ("s", "y"), ("y", "t"), ("x", "y")])


def learners() -> dict:
    return {
        "aroq_cardinality_labels": cm.AROQ(cm.Cardinality(5, 2, labels=list("abcde")), T=300, oracle="enumerate"),
        "cucb_stpaths_options": cm.CUCB(cm.STPaths(GRAPH, "s", "t", flow=True), T=None, oracle="highs", C=2.0),
        "sroq_intersection": cm.SROQ(
            cm.Intersection(cm.Cardinality(4, 2), cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1])),
            T=200,
            oracle="enumerate",
        ),
        "aroqcov_rules": cm.AROQCov(
            cm.Cardinality(4, 3, labels=["a", "b", "c", "e"])
            .with_budget({"a": 2, "b": 1}, 2)
            .with_at_least(1, ["c", "e"]),
            T=400,
            oracle="highs",
        ),
        "cucb_conflicts_graphic": cm.CUCB(
            cm.GraphicMatroid(nx.cycle_graph(5), flow=True).with_conflicts([(0, 1)]), T=100, oracle="highs"
        ),
        "sdcb_matchings": cm.SDCB(
            cm.Matchings(nx.complete_bipartite_graph(2, 2)), T=50, oracle="enumerate", support=[0.0, 0.5, 1.0]
        ),
    }


def play(policy, rounds: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        a = policy.select()
        outcome = np.round(rng.random(policy.d) * 2) / 2
        policy.observe(a, np.where(a, outcome, np.nan))


def next_picks(policy) -> list[list[int]]:
    """The arms of the 8 actions selected after 10 more rounds (the continuation a loaded learner must repeat)."""
    play(policy, 10, seed=2)
    rng = np.random.default_rng(3)
    picks = []
    for _ in range(8):
        a = policy.select()
        picks.append(np.flatnonzero(a).tolist())
        policy.observe(a, np.where(a, np.round(rng.random(policy.d) * 2) / 2, np.nan))
    return picks


def main() -> None:
    HERE.mkdir(exist_ok=True)
    expected = {}
    for name, policy in learners().items():
        play(policy, 12, seed=1)
        policy.save(HERE / f"{name}.npz")
        expected[name] = next_picks(policy)  # what a learner loaded from the file must select next
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
