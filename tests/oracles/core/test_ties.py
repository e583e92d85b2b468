"""One tie rule on every exact backend: the optimum of least binary number (oracles/core/ties.py).

The truth is brute force: every action of the space, exact values (``fractions``), and among the
optimal ones the 0/1 vector ``x`` of least ``sum_i 2^i x_i``. Weights are drawn from a few values
(square roots of primes: no sum of different ones coincides), so queries are full of exact ties.
"""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm
from cmab_milp.oracles.core.queries import LinearQuery, make_restrictions
from cmab_milp.oracles.core.ties import first_optimum, open_arms
from cmab_milp.testing import registered_kinds

#: Values of tied classes: linearly independent over the rationals, so only equal weights tie.
POOL = [math.sqrt(p) / 4 for p in (2, 3, 5, 7, 11)]
SLOW = ("pulp", "scip")


def exact_backends() -> list:
    params = []
    for kind in registered_kinds("backend"):
        if kind.name.startswith("dist_"):
            continue  # the general-reward oracles: their linear queries go to the backends here
        marks = [] if kind.unavailable is None else [pytest.mark.skip(reason=kind.unavailable)]
        if kind.name.split(":")[0] in SLOW:
            marks.append(pytest.mark.slow_backend)
        params.append(pytest.param(kind.name, marks=marks, id=kind.name))
    return params


def tied_query(rng: np.random.Generator, d: int, kind: int) -> dict:
    """Weights from two or three pool values (some 0 or negative), and random restrictions."""
    values = list(rng.choice(POOL, size=2 + kind % 2, replace=False))
    if kind % 3 == 1:
        values.append(0.0)
    if kind % 4 == 3:
        values.append(-POOL[0])
    q: dict = {"weights": rng.choice(values, size=d)}
    arms = [int(a) for a in rng.permutation(d)]
    if kind % 5 == 1:
        q["include"] = arms[:1]
    if kind % 5 == 2:
        q["exclude"] = arms[1:3]
    if kind % 7 == 3 and d >= 6:
        q["forbid_pairs"] = [(arms[3], arms[4]), (arms[5], arms[0])]
    return q


def binary_number(row) -> int:
    """``sum_i 2^i x_i``: the number the rule takes the least of among the optimal actions."""
    return sum(1 << i for i, held in enumerate(row) if held)


def least_binary(rows) -> tuple:
    return min((tuple(bool(x) for x in row) for row in rows), key=binary_number)


def first_by_brute_force(actions: np.ndarray, q: dict) -> np.ndarray | None:
    """The action of least binary number among those of largest exact value, and check the query is separated."""
    restrictions = make_restrictions(
        actions.shape[1], q.get("include", ()), q.get("exclude", ()), q.get("forbid_pairs", ())
    )
    mask = restrictions.mask(actions)
    rows = actions if mask is None else actions[mask]
    if len(rows) == 0:
        return None
    exact = [exact_value(q["weights"], row) for row in rows]
    best = max(exact)
    others = [v for v in exact if v != best]
    assert not others or float(best - max(others)) > 1e-6, "the query has a near tie: the rule is not promised there"
    return least_binary(row for row, v in zip(rows, exact, strict=True) if v == best)


def exact_value(weights, action) -> Fraction:
    return sum((Fraction(w) for w, held in zip(weights, action, strict=True) if held), Fraction(0))


@pytest.mark.parametrize("family", sorted(SPACES))
@pytest.mark.parametrize("backend", exact_backends())
def test_every_exact_backend_returns_the_first_optimum(backend: str, family: str) -> None:
    space = SPACES[family]()
    try:
        oracle = cm.make_oracle(space, backend, ties="classes")
    except ValueError as exc:  # e.g. a space a backend does not take, or past the licence's size
        pytest.skip(str(exc))
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(len(family) * 7919)
    queries = 6 if backend.split(":")[0] in SLOW else 24
    answered = 0
    for kind in range(queries):
        q = tied_query(rng, space.d, kind)
        try:
            answer = oracle.argmax(**q)
        except cm.UnsupportedQuery:
            continue
        truth = first_by_brute_force(actions, q)
        if truth is None:
            assert answer is None
            continue
        assert answer is not None
        assert tuple(answer.tolist()) == truth, f"query {kind}: {np.flatnonzero(answer)} != {np.flatnonzero(truth)}"
        answered += 1
    assert answered or backend == "combinatorial"


@pytest.mark.parametrize("leaves", [0, 1, 64])
@pytest.mark.parametrize(
    "family",
    ["matchings-general", "paths-cyclic-undirected", "with-constraint", "graphic", "partition", "spanning-trees"],
)
def test_search_and_restricted_solves_agree_from_any_optimum(family: str, leaves: int) -> None:
    """Start from every optimal action (not just a backend's): the same rule's action, by search or by solves."""
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "highs", ties="classes")
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(leaves + 3)
    for kind in range(10):
        q = tied_query(rng, space.d, kind)
        truth = first_by_brute_force(actions, q)
        if truth is None:
            continue
        query = oracle.linear_query(**q)
        admitted = [row for row in actions if query.restrictions.admits(row)]
        values = [exact_value(q["weights"], row) for row in admitted]
        optima = [row for v, row in zip(values, admitted, strict=True) if v == max(values)]
        for start in optima:
            found = first_optimum(oracle, query, start.copy(), leaves=leaves)
            assert tuple(found.tolist()) == truth


def test_the_usual_query_costs_one_set_and_returns_the_answer_itself() -> None:
    oracle = cm.make_oracle(cm.Cardinality(5, 2), "enumerate", ties="classes")
    query = oracle.linear_query([0.1, 0.2, 0.3, 0.4, 0.5])
    answer = np.array([False, False, False, True, True])
    assert first_optimum(oracle, query, answer) is answer
    assert first_optimum(oracle, query, None) is None


def test_open_arms_are_the_partly_held_classes_and_the_zeros() -> None:
    weights = [0.5, 0.5, 0.7, 0.7, 0.0, 0.9]
    assert open_arms(weights, [True, False, True, True, False, True]) == ([0, 1, 4], [0, 0, -1], [1])
    assert open_arms(weights, [True, True, False, False, False, True]) == ([4], [-1], [])


@pytest.mark.parametrize("backend", ["highs", "enumerate", "combinatorial", "auto"])
def test_zero_weights_are_left_out_when_an_optimum_can_leave_them_out(backend: str) -> None:
    space = cm.Cardinality(5, 3)  # at most 3 arms
    oracle = cm.make_oracle(space, backend, ties="classes")
    assert np.flatnonzero(oracle.argmax([0.0, 0.4, 0.0, 0.0, -0.1])).tolist() == [1]
    assert np.flatnonzero(oracle.argmax([0.0, 0.4, 0.0, 0.0, -0.1], include=[3])).tolist() == [1, 3]


def old_rule(actions: np.ndarray, q: dict) -> tuple | None:
    """The previous rule, for comparison: the lexicographically largest optimal 0/1 vector (read from arm 0)."""
    restrictions = make_restrictions(actions.shape[1], q.get("include", ()), q.get("exclude", ()), ())
    mask = restrictions.mask(actions)
    rows = actions if mask is None else actions[mask]
    if len(rows) == 0:
        return None
    exact = [exact_value(q["weights"], row) for row in rows]
    return max(tuple(bool(x) for x in row) for row, v in zip(rows, exact, strict=True) if v == max(exact))


@pytest.mark.parametrize("family", ["spanning-trees", "cardinality-exact", "cardinality", "partition", "graphic"])
def test_matroid_answers_are_the_old_rule_s_without_its_zero_weight_arms(family: str) -> None:
    """On bases (spanning trees, exactly ``m``) the answer is the previous rule's (both perturbations order equal
    weights lower arm first, and an optimal basis depends only on the order); on independent sets it is the
    previous rule's answer without the arms of weight 0 it added (those not included)."""
    space = SPACES[family]()
    oracles = [cm.make_oracle(space, b, ties="classes") for b in ("combinatorial", "highs")]
    actions = cm.make_oracle(space, "enumerate").actions
    bases = family in ("spanning-trees", "cardinality-exact")
    rng = np.random.default_rng(len(family) + 41)
    dropped = 0
    for kind in range(40):
        q = tied_query(rng, space.d, kind)
        q.pop("forbid_pairs", None)  # a matroid's restrictions only
        if kind % 2:  # arms of weight 0 beside few positive ones
            q["weights"] = np.where(rng.random(space.d) < 0.6, 0.0, q["weights"])
        truth, before = first_by_brute_force(actions, q), old_rule(actions, q)
        if truth is None:
            continue
        zero_out = [w == 0.0 and i not in q.get("include", ()) for i, w in enumerate(q["weights"])]
        expected = before if bases else tuple(h and not z for h, z in zip(before, zero_out, strict=True))
        assert truth == expected, kind
        dropped += expected != before
        for oracle in oracles:
            assert tuple(oracle.argmax(**q).tolist()) == truth, (oracle.name, kind)
    assert bases or dropped >= 3  # zeros the previous rule held, now left out


@pytest.mark.parametrize("backend", ["highs", "enumerate", "combinatorial", "auto"])
def test_zero_weight_arms_are_left_out_on_forests(backend: str) -> None:
    space = SPACES["graphic"]()
    oracle = cm.make_oracle(space, backend, ties="classes")
    rng = np.random.default_rng(43)
    for _ in range(20):
        weights = rng.choice([0.0, 0.0, POOL[0], POOL[1], -POOL[2]], size=space.d)
        answer = oracle.argmax(weights)
        assert not (answer & (weights <= 0)).any()  # held only where the weight is positive
        assert tuple(answer.tolist()) == first_by_brute_force(oracle_actions(space), {"weights": weights})


def oracle_actions(space: cm.ActionSpace) -> np.ndarray:
    return cm.make_oracle(space, "enumerate").actions


@pytest.mark.parametrize("backend", ["highs", "enumerate", "auto"])
@pytest.mark.parametrize("family", ["paths-cyclic-undirected", "paths-cyclic-directed", "paths-dag"])
def test_shortest_path_ties_take_the_least_binary_path(backend: str, family: str) -> None:
    """Weights ``<= 0`` (costs), many of them 0: the path of least binary number among the shortest, not the
    previous rule's (which held as many low-numbered arms of weight 0 as a path could: detours)."""
    space = SPACES[family]()
    oracle = cm.make_oracle(space, backend, ties="classes")
    actions = oracle_actions(space)
    rng = np.random.default_rng(47)
    changed = 0
    for k in range(12):
        weights = -rng.choice([0.0, 0.0, 0.0, POOL[0], POOL[1]], size=space.d) if k else np.zeros(space.d)
        q = {"weights": weights}
        truth = first_by_brute_force(actions, q)
        assert tuple(oracle.argmax(weights).tolist()) == truth, k
        changed += truth != old_rule(actions, q)
    assert changed >= 2


def test_approximate_mode_is_left_alone() -> None:
    space = cm.Cardinality(4, 1)
    oracle = cm.make_oracle(space, "highs", gap=0.5, ties="classes")
    query = LinearQuery(np.array([0.5, 0.5, 0.5, 0.5]), make_restrictions(4, (), (), ()))
    answer = np.array([False, False, False, True])
    assert first_optimum(oracle, query, answer) is answer


@pytest.mark.parametrize("backend", ["enumerate", "highs", "combinatorial", "auto"])
@pytest.mark.parametrize("family", ["matchings-bipartite", "paths-dag", "partition"])
def test_exact_mode_settles_equal_sums_of_different_weights(backend: str, family: str) -> None:
    """``ties="exact"``: weights on a grid of eighths (2/8 + 5/8 = 3/8 + 4/8), truth = least binary within 1e-9."""
    space = SPACES[family]()
    oracle = cm.make_oracle(space, backend, ties="classes")
    oracle.ties = "exact"
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(11)
    for _ in range(12):
        weights = rng.integers(1, 8, space.d) / 8
        values = actions.astype(float) @ weights  # sums of eighths: exact
        truth = least_binary(row for row, v in zip(actions, values, strict=True) if v >= values.max() - 1e-9)
        assert tuple(oracle.argmax(weights).tolist()) == truth


def test_ties_modes_other_than_the_three_are_refused_by_name() -> None:
    oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate", ties="classes")
    oracle.ties = "off"
    assert oracle.argmax([1.0, 1.0, 0.5]).tolist() == [True, False, False]  # enumerate's own first optimum
    oracle.ties = "sometimes"
    with pytest.raises(ValueError, match="ties must be one of"):
        oracle.argmax([1.0, 1.0, 0.5])


def space_of(family: str) -> cm.ActionSpace:
    return ads() if family == "ads" else SPACES[family]()


def bernoulli_runs(policy, space: cm.ActionSpace, backends: list[str], T: int, seed: int, ties: str) -> dict:
    """Each backend's (regret curve, query counts) of ``policy`` on Bernoulli arms with few distinct means.

    Backends that do not take the space or its queries (``combinatorial`` on rules, positive weights on
    cyclic paths) are left out.
    """
    means = np.resize([0.3, 0.5, 0.6, 0.45, 0.2], space.d)
    out = {}
    for backend in backends:
        try:
            oracle = cm.make_oracle(space, backend, ties=ties)
            result = cm.simulate(policy(space, T, oracle=oracle), cm.BernoulliArms(means), T, seed=seed)
        except (ValueError, cm.UnsupportedQuery):
            continue
        out[backend] = (result.regret.tolist(), result.queries.tolist())
    assert len(out) >= 2 and "enumerate" in out
    return out


FAST = ["enumerate", "highs", "combinatorial", "auto"]
#: The issue's three space families (cardinality, matchings with rules, paths), and the matroids of "classes".
FAMILIES = [
    ("cardinality", "classes"),
    ("graphic", "classes"),
    ("matchings-bipartite", "exact"),
    ("ads", "exact"),
    ("paths-dag", "exact"),
]


@pytest.mark.parametrize(("family", "ties"), FAMILIES)
@pytest.mark.parametrize("policy", ["CUCB", "CTS", "AROQ"])
def test_bernoulli_runs_are_the_same_on_every_fast_backend(policy: str, family: str, ties: str) -> None:
    """CUCB, CTS and AROQ on Bernoulli arms (equal counts and sums tie often): the same curves on each backend."""
    runs = bernoulli_runs(getattr(cm, policy), space_of(family), FAST, 120, 2, ties)
    assert all(run == runs["enumerate"] for run in runs.values()), {k: v[0][-1] for k, v in runs.items()}


SOLVERS = [p for p in exact_backends() if p.id not in FAST]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "ties"),
    [
        ("cardinality", "classes"),
        ("spanning-trees", "classes"),
        ("matchings-general", "exact"),
        ("ads", "exact"),
        ("paths-dag", "exact"),
        ("paths-cyclic-undirected", "exact"),
    ],
)
@pytest.mark.parametrize("policy", ["CUCB", "CTS", "AROQ"])
def test_bernoulli_runs_are_the_same_on_every_exact_backend(policy: str, family: str, ties: str) -> None:
    """Every installed exact backend (PuLP and SCIP too, on a shorter run): the same curves as ``enumerate``."""
    names = [*FAST, *(p.id for p in SOLVERS if not any(m.name == "skip" for m in p.marks))]
    fast = [n for n in names if n.split(":")[0] not in SLOW]
    runs = bernoulli_runs(getattr(cm, policy), space_of(family), fast, 300, 5, ties)
    assert all(run == runs["enumerate"] for run in runs.values()), {k: v[0][-1] for k, v in runs.items()}
    runs = bernoulli_runs(getattr(cm, policy), space_of(family), ["enumerate", *set(names) - set(fast)], 60, 5, ties)
    assert all(run == runs["enumerate"] for run in runs.values()), {k: v[0][-1] for k, v in runs.items()}


@pytest.mark.slow
def test_without_the_rule_backends_differ_on_the_ad_space() -> None:
    """The control: with ``ties="off"`` the same CUCB run ends elsewhere on ``highs`` than on ``enumerate``; with
    ``"exact"`` on both, the same curve and query counts."""
    runs = bernoulli_runs(cm.CUCB, ads(4, 12), ["enumerate", "highs"], 200, 3, "off")
    assert runs["highs"][0] != runs["enumerate"][0]
    ruled = bernoulli_runs(cm.CUCB, ads(4, 12), ["enumerate", "highs"], 200, 3, "exact")
    assert ruled["highs"] == ruled["enumerate"]


def test_ties_is_an_option_of_every_backend_checked_before_any_work() -> None:
    space = cm.Cardinality(4, 2)
    for backend in ("enumerate", "highs", "combinatorial", "auto"):
        assert cm.make_oracle(space, backend, ties="exact").ties == "exact"
        assert cm.make_oracle(space, backend).ties == "off"  # the default
    with pytest.raises(ValueError, match="ties must be one of"):
        cm.make_oracle(space, "highs", ties="sometimes")
    w = np.array(
        [0.5, 0.5, 0.5, 0.1]
    )  # three tied arms: the rule takes the lowest two, "off" whatever the backend does
    assert cm.make_oracle(space, "highs", ties="classes").argmax(w).tolist() == [True, True, False, False]


def ads(slots: int = 3, ads_: int = 5) -> cm.ActionSpace:
    """A newcomer's ad space (issue 36.4): matchings of K(ads, slots), ads 0 and 1 exclusive, a budget.

    The issue's is ``ads(4, 12)`` (budget 23); the default is a small one (budget 7).
    """
    space = cm.Matchings(nx.complete_bipartite_graph(ads_, slots))
    exclusive = [1.0 if ad in (0, 1) else 0.0 for ad, _ in space.arms]
    budget = 23 if (slots, ads_) == (4, 12) else 7
    return space.with_constraint(exclusive, "<=", 1).with_budget([1.0 + ad for ad, _ in space.arms], budget)


def first_within_tolerance(actions: np.ndarray, weights: np.ndarray) -> tuple:
    values = actions.astype(float) @ weights  # sums of eighths: exact
    return least_binary(row for row, v in zip(actions, values, strict=True) if v >= values.max() - 1e-9)


@pytest.mark.parametrize("backend", ["enumerate", "highs", "auto"])
@pytest.mark.parametrize("family", ["matchings-general", "paths-dag", "ads", "cardinality", "spanning-trees"])
def test_exact_mode_with_signed_weights_and_zeros(backend: str, family: str) -> None:
    """Eighths in [-3/8, 7/8] (zeros, negatives), or distinct 64ths (equal sums only): least binary within 1e-9."""
    space = ads() if family == "ads" else SPACES[family]()
    oracle = cm.make_oracle(space, backend, ties="exact")
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(17)
    for k in range(15):
        low = -3 if k % 3 == 1 else 1  # mixed signs, or positive weights only
        weights = rng.integers(low, 8, space.d) / 8
        if k % 3 == 2:  # distinct weights (no class tie), equal sums everywhere
            weights = (rng.permutation(space.d) + 1) / 64
        assert tuple(oracle.argmax(weights).tolist()) == first_within_tolerance(actions, weights)


def test_exact_mode_proves_a_unique_optimum_with_one_more_solve() -> None:
    """Distinct positive weights, a backend that proves nothing (``_linear_ruled`` without a certificate): the
    answer plus one solve of shifted weights (held arms down, others up), no more."""
    space = cm.Matchings(nx.complete_bipartite_graph(4, 3))
    oracle = cm.make_oracle(space, "enumerate", ties="exact")
    solves = []
    linear = oracle._linear

    def counted(query: LinearQuery) -> np.ndarray | None:
        solves.append(query.weights)
        return linear(query)

    oracle._linear = counted
    oracle._linear_ruled = lambda query: (counted(query), False)
    weights = np.random.default_rng(4).uniform(0.1, 1.0, space.d)
    answer = oracle.argmax(weights)
    assert len(solves) == 2
    shift = solves[1] - weights
    assert (shift[answer] < 0).all() and (shift[~answer] > 0).all() and np.abs(shift).max() < 1e-5
    assert tuple(answer.tolist()) == first_within_tolerance(oracle.actions, weights)


@pytest.mark.parametrize("family", ["cardinality", "cardinality-exact", "partition", "graphic", "spanning-trees"])
def test_matroids_settle_in_one_greedy_pass_from_any_optimum(family: str) -> None:
    """All weights equal, or a few values with zeros and restrictions: the rule's action, whatever the start."""
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    actions = oracle.actions
    rng = np.random.default_rng(23)
    queries = [{"weights": np.full(space.d, POOL[1])}, {"weights": np.full(space.d, -POOL[2])}]
    queries += [tied_query(rng, space.d, kind) for kind in range(12)]
    for q in queries:
        truth = first_by_brute_force(actions, q)
        if truth is None:
            continue
        query = oracle.linear_query(**q)
        values = [exact_value(q["weights"], row) if query.restrictions.admits(row) else None for row in actions]
        best = max(v for v in values if v is not None)
        for start in (row for row, v in zip(actions, values, strict=True) if v == best):
            assert tuple(first_optimum(oracle, query, start.copy(), leaves=0).tolist()) == truth


@pytest.mark.parametrize("family", ["matchings-general", "paths-dag", "ads"])
def test_exact_mode_settles_sum_ties_from_any_optimum(family: str) -> None:
    """Distinct weights (equal sums, no equal weights): the rule's action from every optimal start.

    64ths in a random order; on the ad space ``p(ad) / 8 + q(slot) / 64`` (every matching of the same ads
    and slots has the same value); on paths, potential differences (every path ties).
    """
    space = ads() if family == "ads" else SPACES[family]()
    oracle = cm.make_oracle(space, "highs", ties="exact")
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(29)
    starts = 0
    for _ in range(8):
        weights = (rng.permutation(space.d) + 1) / 64
        if family == "paths-dag":  # potential differences: every path has the same value
            phi = rng.permutation(7) / 64
            weights = np.array([phi[v] - phi[u] for u, v in space.arms])
        if family == "ads":
            p, q = rng.permutation(5) + 1, rng.permutation(3) + 5
            weights = np.array([p[ad] / 8 + q[slot - 5] / 64 for ad, slot in space.arms])
        truth = first_within_tolerance(actions, weights)
        query = oracle.linear_query(weights)
        values = actions.astype(float) @ weights
        for start in actions[values >= values.max() - 1e-9]:
            assert tuple(first_optimum(oracle, query, start.copy()).tolist()) == truth
            starts += 1
    assert starts > 8  # some queries had several optima
