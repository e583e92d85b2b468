"""Norm queries on undirected s-t paths through the compact models (no orientation columns) on Gurobi and SCIP:
the routes ``bench/norm_paths_compact.py`` times against ours, checked against brute force.

``oriented=False`` leaves the arm columns, one column per node and the degree rows; the s-t cuts are lazy. On the
8x8 grid that is 175 columns with the norm's ``s``: the only paths model Gurobi's size-limited pip licence takes
with a quadratic row. Answers must be best actions within the backends' declared norm slack (their quadratic row
holds to the solver's feasibility tolerance, :data:`cmab_milp.oracles.backends.gurobi.NORM_SLACK`).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from instances import admitted, norm_values, psd

import cmab_milp as cm

#: (label, graph, s, t): every s-t path of each is enumerated for the truth.
GRIDS = {
    "grid-3x3": (nx.grid_2d_graph(3, 3), 0, 8),
    "grid-3x4": (nx.grid_2d_graph(3, 4), 0, 11),
    "grid-4x4-mid": (nx.grid_2d_graph(4, 4), 1, 14),
}


def _backends() -> list[str]:
    have = cm.available_backends()
    return [name for name in ("gurobi", "scip") if name in have]


def _space(label: str, oriented: bool = False) -> cm.STPaths:
    graph, s, t = GRIDS[label]
    return cm.STPaths(nx.convert_node_labels_to_integers(graph), s, t, oriented=oriented)


def _oracle(space: cm.STPaths, backend: str) -> cm.Oracle:
    if backend == "scip":
        return cm.make_oracle(space, "scip", oriented=False)
    return cm.make_oracle(space, backend)


def _restrictions(kind: str, rng: np.random.Generator, actions: np.ndarray) -> dict:
    """``"in"``: an arm of some path included; ``"out"``: two arms excluded; ``"pair"``: an arm pair of some path
    forbidden (not both); ``"all"``: one of each; ``"none"``."""
    path = np.flatnonzero(actions[rng.integers(len(actions))])
    other = np.setdiff1d(np.arange(actions.shape[1]), path)
    res: dict = {}
    if kind in ("in", "all"):
        res["include"] = [int(rng.choice(path))]
    if kind in ("out", "all"):
        res["exclude"] = [int(i) for i in rng.choice(other, 2, replace=False)]
    if kind in ("pair", "all"):
        i, j = rng.choice(path, 2, replace=False)
        res["forbid_pairs"] = [(int(i), int(j))]
    return res


def _check(actions, answer, res, mu, M, f, sign, slack: float, label) -> None:
    ok = admitted(actions, **res)
    if not ok.any():
        assert answer is None, label
        return
    assert answer is not None, label
    assert (actions == answer).all(axis=1).any() and admitted(answer[None, :], **res)[0], label
    best = float(norm_values(actions[ok], mu, M, f, sign).max())
    got = float(norm_values(answer[None, :], mu, M, f, sign)[0])
    assert got >= best - slack * (1 + abs(best)), (*label, got, best)


def _marks(backend: str, label: str) -> list:
    """SCIP builds a model per query (``slow_backend``); on the 4x4 grid it takes 3-7 s a case (``slow``)."""
    if backend != "scip":
        return []
    return [pytest.mark.slow_backend] + ([pytest.mark.slow] if label == "grid-4x4-mid" else [])


CASES = [pytest.param(backend, label, marks=_marks(backend, label)) for backend in _backends() for label in GRIDS]


@pytest.mark.parametrize(("backend", "label"), CASES)
@pytest.mark.parametrize("sign", [1, -1])
def test_compact_models_match_brute_force(backend, label, sign):
    space = _space(label)
    actions = space.enumerate()
    oracle = _oracle(space, backend)
    slack = oracle.norm_slack
    rng = np.random.default_rng([len(label), sign + 1, len(backend)])
    for k, kind in enumerate(["none", "in", "out", "pair", "all", "none"]):
        f = [0.3, 1.0, 3.0][k % 3]
        mu = rng.uniform(-0.2, 1.0, space.d)
        M = psd(rng, space.d)
        res = _restrictions(kind, rng, actions)
        answer = oracle.argmax_norm(mu, M, f, sign, **res)
        _check(actions, answer, res, mu, M, f, sign, slack, (backend, label, sign, kind))
    oracle.close()


@pytest.mark.parametrize("backend", _backends())
def test_a_query_no_path_admits_is_answered_none(backend):
    """Both arms at ``s`` of the 3x3 grid excluded: no s-t path is left."""
    space = _space("grid-3x3")
    at_s = [int(i) for i in np.flatnonzero((space.tail == space.s) | (space.head == space.s))]
    oracle = _oracle(space, backend)
    rng = np.random.default_rng(5)
    assert oracle.argmax_norm(rng.uniform(0, 1, space.d), psd(rng, space.d), 1.0, 1, exclude=at_s) is None
    oracle.close()


def test_the_compact_model_keeps_the_arms_and_drops_the_orientation_columns():
    """The same actions as the oriented space; on the 8x8 grid 112 arms and 62 node columns (inner nodes): with the
    norm's column 175, under the pip licence's 200 columns with a quadratic row; oriented, 174 auxiliary columns."""
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8))
    compact, oriented = cm.STPaths(grid, 0, 63, oriented=False), cm.STPaths(grid, 0, 63)
    assert compact.d == oriented.d == 112
    assert compact.formulation().n_aux == 62 and oriented.formulation().n_aux + 112 + 1 > 200
    small = _space("grid-3x4")
    assert np.array_equal(np.sort(small.enumerate(), axis=0), np.sort(_space("grid-3x4", True).enumerate(), axis=0))
