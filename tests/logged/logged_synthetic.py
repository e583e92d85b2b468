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
    """A space, its actions, logging distributions over them (one per phase of the log), and per-arm means."""

    space: cm.ActionSpace
    actions: np.ndarray
    logging: np.ndarray  # (phases, number of actions): the log's rounds are split evenly between phases
    means: np.ndarray

    def draw(self, rounds: int, seed: int) -> tuple[cm.LoggedFeedback, np.ndarray]:
        """A log of ``rounds`` rounds and the full outcome table it was cut from."""
        rng = np.random.default_rng(seed)
        phase = np.arange(rounds) * len(self.logging) // rounds
        cumulative = np.cumsum(self.logging, axis=1)[phase]
        chosen = np.minimum((rng.random(rounds)[:, None] > cumulative).sum(axis=1), len(self.actions) - 1)
        outcomes = (rng.random((rounds, self.space.d)) < self.means).astype(float)
        r, a = np.nonzero(self.actions[chosen])
        inclusion = self.logging @ self.actions  # (phases, d)
        log = cm.LoggedFeedback(
            self.space,
            r,
            a,
            outcomes[r, a],
            inclusion=inclusion[phase[r], a],
            action_propensity=self.logging[phase[r], chosen[r]],
        )
        return log, outcomes


def setting(space_name: str, logging: str) -> Setting:
    space = SPACES[space_name]()
    actions = space.enumerate()
    k = len(actions)
    uniform = np.full(k, 1.0 / k)
    skewed = np.linspace(1.0, 3.0, k)  # every action possible, some three times as likely as others
    skewed /= skewed.sum()
    probs = {"uniform": [uniform], "nonuniform": [skewed], "drifting": [uniform, skewed[::-1], skewed]}[logging]
    means = np.linspace(0.15, 0.85, space.d)
    return Setting(space, actions, np.array(probs), means)
