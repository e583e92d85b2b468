"""Hop limits tightened by the parity of s-t paths on bipartite graphs: checked against every path."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.mip.path_parity import path_parity, tighten_by_parity
from cmab_milp.spaces.formulation import Row


def _grid(n: int, directed: bool = False) -> nx.Graph:
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))
    return g.to_directed() if directed else g


SPACES = {
    "grid 3x3 corner to corner": lambda: cm.STPaths(_grid(3), 0, 8),
    "grid 3x3 to a neighbour": lambda: cm.STPaths(_grid(3), 0, 1),
    "grid digraph 3x3": lambda: cm.STPaths(_grid(3, True), 0, 8),
    "even cycle": lambda: cm.STPaths(nx.cycle_graph(6), 0, 3),
    "odd cycle": lambda: cm.STPaths(nx.cycle_graph(5), 0, 2),
    "grid with a diagonal": lambda: cm.STPaths(nx.Graph([*_grid(3).edges(), (0, 4)]), 0, 8),
    "pendant edge": lambda: cm.STPaths(nx.Graph([(0, 1), (1, 2), (1, 3), (3, 4)]), 0, 2),
}


def _lengths(space: cm.STPaths) -> set[int]:
    return {int(a.sum()) for a in space.enumerate()}


@pytest.mark.parametrize("name", list(SPACES))
def test_parity_holds_for_every_path(name: str) -> None:
    space = SPACES[name]()
    parity = path_parity(space)
    lengths = _lengths(space)
    if parity is not None:
        assert {n % 2 for n in lengths} == {parity}
    if name in ("odd cycle", "grid with a diagonal"):  # odd cycles through s: no single parity
        assert parity is None and len({n % 2 for n in lengths}) == 2


def _rows_keep_actions(space: cm.STPaths, row: Row, tightened: Row) -> None:
    actions = space.enumerate().astype(float)
    coef = np.zeros(space.d)
    np.add.at(coef, list(row.cols), list(row.coefs))
    value = actions @ coef
    before = (value >= row.lb - 1e-9) & (value <= row.ub + 1e-9)
    after = (value >= tightened.lb - 1e-9) & (value <= tightened.ub + 1e-9)
    assert np.array_equal(before, after)


@pytest.mark.parametrize("name", [n for n in SPACES if n not in ("odd cycle", "grid with a diagonal")])
@pytest.mark.parametrize("seed", range(4))
def test_tightened_rows_keep_every_action(name: str, seed: int) -> None:
    space = SPACES[name]()
    rng = np.random.default_rng(seed)
    lengths = sorted(_lengths(space))
    for _ in range(6):
        coefs = tuple(float(c) for c in rng.choice([-3, -1, 1, 3, 5], space.d))
        lb, ub = float(rng.integers(-8, 4)) - 0.5 * seed, float(rng.integers(0, 2 * max(lengths) + 2))
        row = Row(tuple(range(space.d)), coefs, lb, ub)
        (out,) = tighten_by_parity(space, [row])
        assert out.lb >= row.lb and out.ub <= row.ub
        _rows_keep_actions(space, row, out)
    hop = Row(tuple(range(space.d)), (1.0,) * space.d, -np.inf, float(max(lengths) + 1))
    (out,) = tighten_by_parity(space, [hop])
    assert out.ub == max(lengths)  # the next length of the paths' parity


def test_rows_that_do_not_qualify_are_kept() -> None:
    space = SPACES["grid 3x3 corner to corner"]()
    d = space.d
    even = Row(tuple(range(d)), (1.0,) * (d - 1) + (2.0,), -np.inf, 5.0)  # an even coefficient on a usable arm
    partial = Row(tuple(range(d - 1)), (1.0,) * (d - 1), -np.inf, 5.0)  # an arm left out: coefficient 0
    fractional = Row(tuple(range(d)), (1.5,) * d, -np.inf, 5.0)
    aux = Row((0, d), (1.0, 1.0), -np.inf, 1.0)  # a row over an auxiliary column
    rows = [even, partial, fractional, aux]
    assert tighten_by_parity(space, rows) == rows
    odd = SPACES["odd cycle"]()
    hop = Row(tuple(range(odd.d)), (1.0,) * odd.d, -np.inf, 2.0)
    assert tighten_by_parity(odd, [hop]) == [hop]


def test_unusable_arms_need_no_odd_coefficient() -> None:
    space = SPACES["pendant edge"]()  # arms (1, 3) and (3, 4) are on no 0-2 path
    usable = ~space.unusable_arms()
    coefs = tuple(1.0 if u else 2.0 for u in usable)
    (out,) = tighten_by_parity(space, [Row(tuple(range(space.d)), coefs, -np.inf, 2.5)])
    assert out.ub == 2.0  # every path has 2 edges
