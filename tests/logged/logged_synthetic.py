"""Synthetic logs with known means for the logged-feedback tests: spaces, logging policies, outcomes.

A log is drawn from a logging policy over a list of actions (uniform or not), with independent
Bernoulli outcomes per arm of known means; every row carries its arm's exact inclusion probability
and the whole action's propensity, so each estimator's truth is ``pi @ means``.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

import cmab_milp as cm


def cardinality() -> cm.ActionSpace:
    return cm.Cardinality(6, 3, exact=True)


def matching() -> cm.ActionSpace:
    return cm.Matchings(nx.complete_bipartite_graph(3, 3), perfect=True)


def paths() -> cm.ActionSpace:
    graph = nx.DiGraph()
    for i in range(3):
        for j in range(3):
            if i < 2:
                graph.add_edge((i, j), (i + 1, j))
            if j < 2:
                graph.add_edge((i, j), (i, j + 1))
    return cm.STPaths(graph, (0, 0), (2, 2))


SPACES = {"cardinality": cardinality, "matching": matching, "paths": paths}


@dataclass
class Setting:
    """A space, its actions, a logging distribution over them, and per-arm means."""

    space: cm.ActionSpace
    actions: np.ndarray
    logging: np.ndarray
    means: np.ndarray

    @property
    def inclusion(self) -> np.ndarray:
        return self.logging @ self.actions

    def draw(self, rounds: int, seed: int) -> tuple[cm.LoggedFeedback, np.ndarray]:
        """A log of ``rounds`` rounds and the full outcome table it was cut from."""
        rng = np.random.default_rng(seed)
        chosen = rng.choice(len(self.actions), rounds, p=self.logging)
        outcomes = (rng.random((rounds, self.space.d)) < self.means).astype(float)
        r, a = np.nonzero(self.actions[chosen])
        log = cm.LoggedFeedback(
            self.space,
            r,
            a,
            outcomes[r, a],
            inclusion=self.inclusion[a],
            action_propensity=self.logging[chosen][r],
        )
        return log, outcomes


def setting(space_name: str, logging: str) -> Setting:
    space = SPACES[space_name]()
    actions = space.enumerate()
    k = len(actions)
    if logging == "uniform":
        probs = np.full(k, 1.0 / k)
    else:  # every action possible, some three times as likely as others
        probs = np.linspace(1.0, 3.0, k)
        probs /= probs.sum()
    means = np.linspace(0.15, 0.85, space.d)
    return Setting(space, actions, probs, means)
