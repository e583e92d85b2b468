"""The tie rule's cheap paths: backends that prove their answer is the rule's action, and one-solve settling.

Truth: brute force over every action with exact values (``fractions``), as in ``test_ties.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm
from cmab_milp.oracles.backends.combinatorial_ruled import RULED
from cmab_milp.oracles.core.queries import make_restrictions
from cmab_milp.oracles.core.ties_direct import lexicographic_matching, lexicographic_path, ordered_integers

POOL = [math.sqrt(p) / 4 for p in (2, 3, 5, 7, 11)]
CERTIFIED = ["cardinality", "cardinality-exact", "partition", "graphic", "spanning-trees", "paths-dag"]
CERTIFIED += ["matchings-bipartite", "matchings-general", "perfect-bipartite", "perfect-general", "sparse-bipartite"]
CERTIFIED += ["sparse-perfect"]
#: Bipartite graphs with missing edges (the assignment's empty cells), besides the complete ones of ``SPACES``.
LOCAL = {
    "sparse-bipartite": lambda: cm.Matchings(nx.Graph([(0, 4), (0, 5), (1, 4), (2, 5), (2, 6), (3, 6), (1, 7)])),
    "sparse-perfect": lambda: cm.Matchings(nx.Graph([(0, 3), (0, 4), (1, 3), (1, 5), (2, 4), (2, 5)]), perfect=True),
}


def binary_number(row) -> int:
    """``sum_i 2^i x_i``: the rule keeps the optimum where it is least."""
    return sum(1 << i for i, held in enumerate(row) if held)


def exact_first(actions: np.ndarray, weights, include=(), exclude=()) -> tuple | None:
    """The one of least binary number among the admitted actions of largest exact value (``None``: none)."""
    res = make_restrictions(actions.shape[1], include, exclude, ())
    mask = res.mask(actions)
    rows = actions if mask is None else actions[mask]
    if not len(rows):
        return None
    values = [sum((Fraction(w) for w, h in zip(weights, row, strict=True) if h), Fraction(0)) for row in rows]
    best = max(values)
    return min((tuple(row.tolist()) for row, v in zip(rows, values, strict=True) if v == best), key=binary_number)


def query_weights(rng: np.random.Generator, d: int, kind: int) -> np.ndarray:
    """Kind 0: distinct weights in [0, 1) (no tie); 1: pool values (class ties); 2: with zeros; 3: signed."""
    if kind == 0:
        return rng.uniform(0, 1, d)
    values = list(rng.choice(POOL, size=3, replace=False))
    if kind == 2:
        values.append(0.0)
    if kind == 3:
        values.append(-POOL[0])
    return rng.choice(values, size=d)


@pytest.mark.parametrize("family", CERTIFIED)
def test_a_certified_answer_is_the_rule_s_action(family: str) -> None:
    """Whenever ``_linear_ruled`` says proven, the answer is the brute-force first optimum; untied weights are
    proven on the families whose algorithm knows it (not a certificate that never fires)."""
    space = (LOCAL.get(family) or SPACES[family])()
    actions = cm.make_oracle(space, "enumerate").actions
    oracles = {b: cm.make_oracle(space, b, ties="classes") for b in ("combinatorial", "enumerate", "auto")}
    rng = np.random.default_rng(len(family))
    proven = {b: 0 for b in oracles}
    for k in range(40):
        w = query_weights(rng, space.d, k % 4)
        include = [int(rng.integers(space.d))] if k % 5 == 1 else []
        exclude = [int(rng.integers(space.d))] if k % 5 == 2 else []
        truth = exact_first(actions, w, include, exclude)
        for name, oracle in oracles.items():
            query = oracle.linear_query(w, include, exclude)
            if query.restrictions.trivially_infeasible():
                continue
            answer, ruled = oracle._linear_ruled(query)
            if ruled:
                assert (None if answer is None else tuple(answer.tolist())) == truth, (name, k)
                proven[name] += k % 4 == 0
            final = oracle.argmax(w, include, exclude)
            assert (None if final is None else tuple(final.tolist())) == truth, (name, k)
    assert min(proven.values()) >= 5, proven


@pytest.mark.parametrize(
    ("d", "m", "exact", "weights", "held"),
    [
        (4, 2, False, [0.5, 0.9, 0.5, 0.1], [0, 1]),  # a tie at the boundary: the lower arm
        (4, 2, True, [0.5, 0.9, 0.5, 0.1], [0, 1]),
        (4, 3, False, [0.0, 0.9, 0.0, -1.0], [1]),  # room for the arms of weight 0: left out all the same
        (4, 3, True, [0.0, 0.9, -1.0, -1.0], [0, 1, 2]),  # exactly 3: the lower of the two negative arms
        (4, 2, False, [0.5, 0.9, 0.0, 0.1], [0, 1]),  # no tie: argpartition's answer, proven unique
    ],
)
def test_cardinality_answers_are_the_rule_s_action(d, m, exact, weights, held) -> None:
    space = cm.Cardinality(d, m, exact=exact)
    action, ruled = RULED[cm.Cardinality](space, cm.make_oracle(space, "combinatorial").linear_query(weights))
    assert ruled and action.nonzero()[0].tolist() == held


def test_a_path_within_rounding_of_another_is_not_proven() -> None:
    """Two ways into a node worth the same (0.1 + 0.2 against 0.3: equal up to rounding): no certificate."""
    graph = nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 3)])
    space = cm.STPaths(graph, 0, 3)  # arms 01, 02, 12, 23 in the graph's order
    weights = {(0, 1): 0.1, (1, 2): 0.2, (0, 2): 0.3, (2, 3): 1.0}
    query = cm.make_oracle(space, "combinatorial").linear_query([weights[e] for e in space.arms])
    assert RULED[cm.STPaths](space, query)[1] is False
    weights[(0, 2)] = 0.4
    query = cm.make_oracle(space, "combinatorial").linear_query([weights[e] for e in space.arms])
    certificate = RULED[cm.STPaths](space, query)[1]
    assert certificate and certificate()  # proven, and the only path within ties="exact"'s margin


@pytest.mark.parametrize("family", ["matchings-bipartite", "perfect-bipartite", "paths-dag", "crew"])
def test_one_exact_solve_gives_the_first_of_the_exactly_best(family: str) -> None:
    """Integer and dyadic weights whose different sums tie (1 + 3 = 2 + 2): the exact optimum of least binary
    number."""
    if family == "crew":
        space = cm.Matchings(nx.complete_bipartite_graph(3, 5))
    else:
        space = SPACES[family]()
    solve = lexicographic_path if isinstance(space, cm.STPaths) else lexicographic_matching
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(11)
    for k in range(60):
        w = rng.choice([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, 1e-30], size=space.d)
        include = [int(rng.integers(space.d))] if k % 4 == 1 else []
        exclude = [int(a) for a in rng.choice(space.d, 2, replace=False)] if k % 4 == 2 else []
        res = make_restrictions(space.d, include, exclude, ())
        got = solve(space, w.tolist(), res)
        assert (None if got is None else tuple(got.tolist())) == exact_first(actions, w, include, exclude), k


def test_ordered_integers_order_by_value_then_by_least_binary_number() -> None:
    w = [0.25, 0.5, 0.25, 1e-300]
    values = ordered_integers(w)
    assert values[1] > values[0] > values[2] > values[3] > 0
    assert values[1] > values[0] + values[2]  # 0.25 + 0.25 = 0.5: (0, 1, 0, 0) (number 2) before (1, 0, 1, 0) (5)
    first = ordered_integers([0.5, 0.25, 0.25])
    assert first[1] + first[2] < first[0]  # (1, 0, 0) (number 1) before (0, 1, 1) (6)
    second = ordered_integers([0.25, 0.25, 0.5])
    assert second[0] + second[1] > second[2]  # (1, 1, 0) (number 3) before (0, 0, 1) (4)
    assert ordered_integers([-0.5, 0.0, 0.0]) == [-((1 << 4) * 1) - 1, -2, -4]  # weight 0: below 0, by arm
    for weights in ([0.75, 0.25, 0.5, 0.5], [1.0, -1.0, 0.0, 2.0**-60]):  # the order of sum W_i x_i, every action
        values = ordered_integers(weights)
        rows = [[(k >> i) & 1 for i in range(4)] for k in range(16)]
        exact = [sum(Fraction(w) * x for w, x in zip(weights, row, strict=True)) for row in rows]
        by_w = sorted(range(16), key=lambda k: sum(v * x for v, x in zip(values, rows[k], strict=True)))
        assert by_w == sorted(range(16), key=lambda k: (exact[k], -k))


def test_the_crew_warm_up_settles_in_one_solve_per_tied_query() -> None:
    """Integer weights tied wholesale on K(4, 5) (the crew problem's warm-up): each answer the rule's action, and
    where the exact optimum of least binary number is among the answer's class ties, no solve past the backend's
    answer."""
    space = cm.Matchings(nx.complete_bipartite_graph(4, 5))
    oracle = cm.make_oracle(space, "highs", ties="classes")
    actions = cm.make_oracle(space, "enumerate").actions
    calls = []
    inner = oracle._linear
    oracle._linear = lambda q: calls.append(1) or inner(q)
    rng = np.random.default_rng(3)
    direct = 0
    for _ in range(12):
        w = rng.integers(0, 3, space.d).astype(float)
        calls.clear()
        answer = tuple(oracle.argmax(w).tolist())
        assert answer == first_of_class(actions, w, answer)
        best = exact_first(actions, w)
        if nonzero(w, best) == nonzero(w, answer):
            assert answer == best and len(calls) == 1
            direct += 1
    assert direct >= 6


def nonzero(weights, action) -> list[float]:
    return sorted(w for w, h in zip(weights, action, strict=True) if h and w != 0)


def first_of_class(actions: np.ndarray, weights, answer) -> tuple:
    """The rule's action from ``answer``: the least binary number with ``answer``'s multiset of nonzero weights."""
    rows = (tuple(row.tolist()) for row in actions if nonzero(weights, row) == nonzero(weights, answer))
    return min(rows, key=binary_number)


@pytest.mark.parametrize("exact", [False, True])
def test_long_cardinality_vectors_are_proven_or_settled_by_the_greedy(exact: bool) -> None:
    """Past the Python sort (d = 300): ``argpartition`` proven only without a tie at the boundary, and the answer
    always the greedy by (decreasing weight, arm) that defines the rule on a matroid."""
    space = cm.Cardinality(300, 7, exact=exact)
    oracle = cm.make_oracle(space, "combinatorial", ties="classes")
    rng = np.random.default_rng(int(exact))
    proven = 0
    for k in range(30):
        w = rng.normal(size=300) if k % 2 else np.round(rng.normal(size=300), 1)
        order = sorted(range(300), key=lambda i: (-w[i], i))[:7]
        greedy = sorted(i for i in order if exact or w[i] > 0)
        action, ruled = oracle._linear_ruled(oracle.linear_query(w))
        assert ruled and action.nonzero()[0].tolist() == greedy
        assert oracle.argmax(w).nonzero()[0].tolist() == greedy
        top = np.sort(w)[::-1]
        proven += top[6] > top[7] and (exact or top[7] > 0)
    assert proven >= 10
