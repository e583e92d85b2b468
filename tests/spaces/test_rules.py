"""Side rules on a space (conflicts, budgets, groups, constraints) against brute force, and m without oracles.

The truth for a ruled space is the parent's enumeration (itself checked against
networkx and closed forms in ``test_spaces.py``) filtered by the rule written
out here in numpy; the formulation is checked by solving it with
``scipy.optimize.milp``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
from instances import SPACES
from scipy.optimize import Bounds, LinearConstraint, milp

import cmab_milp as cm
from cmab_milp.spaces.formulation import Row
from cmab_milp.spaces.solve import best_action

FAMILIES = [
    "cardinality",
    "partition",
    "graphic",
    "spanning-trees",
    "paths-dag",
    "paths-cyclic-directed",
    "paths-cyclic-undirected",
    "matchings-general",
    "perfect-bipartite",
    "explicit",
    "intersection",
]


def _rules(space: cm.spaces.ActionSpace, seed: int):
    """Conflicts, a budget and a group that bite on ``space``, each as (apply, truth-mask) from its actions."""
    rng = np.random.default_rng(seed)
    actions = space.enumerate()
    big = actions[actions.sum(axis=1) >= 2]
    pairs = []
    for a in big[rng.choice(len(big), size=min(3, len(big)), replace=False)]:
        i, j = rng.choice(np.flatnonzero(a), size=2, replace=False)
        pairs.append((int(i), int(j)))
    costs = rng.integers(1, 6, size=space.d).astype(float)
    budget = float(np.median(actions @ costs))
    for _ in range(200):  # a group and a k for which both group rules keep some actions and drop some
        group = np.flatnonzero(rng.random(space.d) < 0.5)
        counts = actions[:, group].sum(axis=1)
        k = int(rng.integers(1, max(2, counts.max() + 1)))
        if 0 < (counts >= k).sum() < len(actions) and 0 < ((counts >= k - 1) & (counts <= k)).sum() < len(actions):
            break
    return {
        "conflicts": (
            lambda s: s.with_conflicts(pairs),
            lambda A: ~np.any([A[:, i] & A[:, j] for i, j in pairs], axis=0),
        ),
        "budget": (lambda s: s.with_budget(costs, budget), lambda A: A @ costs <= budget + 1e-9),
        "at-least": (lambda s: s.with_at_least(k, group.tolist()), lambda A: A[:, group].sum(axis=1) >= k),
        "group-both": (
            lambda s: s.with_group(group.tolist(), at_least=k - 1, at_most=k),
            lambda A: (A[:, group].sum(axis=1) >= k - 1) & (A[:, group].sum(axis=1) <= k),
        ),
    }


def _formulation_admits(space: cm.spaces.ActionSpace, action: np.ndarray) -> bool:
    """Whether the formulation (rows, then lazy cuts) admits ``action``: milp with the arms fixed."""
    f = space.formulation()
    if f.violated_rows(action):
        return False
    a, lb, ub = f.matrix()
    fixed = action.astype(float)
    bounds = Bounds(np.concatenate([fixed, f.aux_lb]), np.concatenate([fixed, f.aux_ub]))
    integrality = np.concatenate([np.ones(f.d), f.aux_integer.astype(float)])
    constraints = LinearConstraint(a, lb, ub) if f.n_rows else None
    res = milp(np.zeros(f.n_cols), constraints=constraints, bounds=bounds, integrality=integrality)
    return res.status == 0


def _check_against_truth(space: cm.spaces.ActionSpace, truth: np.ndarray, rng: np.random.Generator) -> None:
    listed = space.enumerate()
    assert {a.tobytes() for a in listed} == {a.tobytes() for a in truth}
    assert len(listed) == len(truth)
    truth_set = {a.tobytes() for a in truth}
    randoms = rng.random((60, space.d)) < rng.uniform(0.1, 0.6, size=(60, 1))
    for a in [*truth[rng.permutation(len(truth))[:25]], *randoms]:
        inside = a.tobytes() in truth_set
        assert space.contains(a) == inside
        assert _formulation_admits(space, a) == inside
    assert space.m == int(truth.sum(axis=1).max())
    assert int(best_action(space, enumerate_below=0).sum()) == space.m  # m by the MILP route too
    for _ in range(4):
        w = rng.normal(size=space.d)
        best = best_action(space, w, enumerate_below=0)
        assert space.contains(best)
        assert np.isclose(w @ best, (truth @ w).max(), atol=1e-7)


@pytest.mark.parametrize("family", FAMILIES)
def test_rules_agree_with_brute_force_in_contains_enumerate_formulation_and_m(family: str) -> None:
    parent = SPACES[family]()
    actions = parent.enumerate()
    rng = np.random.default_rng(1)
    rules = _rules(parent, seed=FAMILIES.index(family))
    for name, (apply, mask) in rules.items():
        space = apply(parent)
        truth = actions[mask(actions)]
        assert 0 < len(truth) < len(actions), f"{name} does not bite on {family}"
        _check_against_truth(space, truth, rng)
    stacked = parent
    keep = np.ones(len(actions), bool)
    for name in ("conflicts", "budget"):
        apply, mask = rules[name]
        stacked, keep = apply(stacked), keep & mask(actions)
    if keep.any():
        _check_against_truth(stacked, actions[keep], rng)
    else:
        with pytest.raises(ValueError, match="no action satisfies"):
            stacked.enumerate()


def test_conflict_rows_are_pairs_summing_to_at_most_one() -> None:
    space = cm.Cardinality(5, 3).with_conflicts([(3, 1), (0, 4), (1, 3)])
    assert space.pairs == ((0, 4), (1, 3))
    rows = space.formulation().rows
    assert Row((0, 4), (1.0, 1.0), -np.inf, 1.0) in rows and Row((1, 3), (1.0, 1.0), -np.inf, 1.0) in rows
    assert len(rows) == len(cm.Cardinality(5, 3).formulation().rows) + 2


def test_conflicts_constraints_and_groups_by_label_equal_by_index() -> None:
    g = nx.Graph([("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("a", "c")])
    base = cm.SpanningTrees(g)
    idx = {e: k for k, e in enumerate(g.edges())}
    by_label = (
        base.with_conflicts([(("b", "a"), ("d", "c"))])
        .with_constraint({("c", "a"): 2.0, ("b", "c"): 1.0}, "<=", 2)
        .with_at_least(1, [("a", "d"), ("b", "c")])
    )
    coeffs = np.zeros(base.d)
    coeffs[idx[("a", "c")]], coeffs[idx[("b", "c")]] = 2.0, 1.0
    by_index = (
        base.with_conflicts([(idx[("a", "b")], idx[("c", "d")])])
        .with_constraint(coeffs, "<=", 2)
        .with_at_least(1, [idx[("a", "d")], idx[("b", "c")]])
    )
    assert {a.tobytes() for a in by_label.enumerate()} == {a.tobytes() for a in by_index.enumerate()}
    assert 0 < len(by_label.enumerate()) < len(base.enumerate())


def test_rules_keep_labels_and_show_them_in_messages() -> None:
    space = cm.Cardinality(3, 2, labels=["x", "y", "z"]).with_conflicts([("x", "y")])
    assert space.labels == ["x", "y", "z"] and space.arm_index("z") == 2
    with pytest.raises(ValueError, match=r"conflicts \[\('x', 'y'\)\] together with at least 2 of \['x', 'y'\]"):
        space.with_at_least(2, ["x", "y"]).check_feasible()


def test_an_empty_conflict_list_changes_nothing() -> None:
    base = cm.Cardinality(4, 2)
    assert np.array_equal(base.with_conflicts([]).enumerate(), base.enumerate())


INFEASIBLE = [
    (
        lambda: cm.Cardinality(3, 2).with_conflicts([(0, 1)]).with_at_least(2, [0, 1]),
        r"^no action satisfies conflicts \[\(0, 1\)\] together with at least 2 of \[0, 1\] in Cardinality",
    ),
    (
        lambda: cm.Cardinality(4, 3).with_budget([1, 2, 3, 4], 3).with_conflicts([(0, 1)]).with_at_least(2, [2, 3]),
        r"^no action satisfies budget \(total cost <= 3\) together with at least 2 of \[2, 3\] in",
    ),
    (
        lambda: cm.Cardinality(4, 2).with_constraint([1, 1, 1, 1], ">=", 3),
        r"^no action satisfies constraint \{0: 1, 1: 1, 2: 1, 3: 1\} @ a >= 3 in Cardinality\(d=4, m=2\)$",
    ),
    (
        lambda: cm.SpanningTrees(nx.cycle_graph(4)).with_group([(0, 1), (1, 2), (2, 3), (3, 0)], at_most=2),
        r"^no action satisfies at most 2 of \[\(0, 1\), \(0, 3\), \(1, 2\), \(2, 3\)\] in SpanningTrees",
    ),
    (
        lambda: cm.STPaths(nx.cycle_graph(4), 0, 2).with_conflicts([((0, 1), (1, 2)), ((0, 3), (2, 3))]),
        r"^no action satisfies conflicts \[\(\(0, 1\), \(1, 2\)\), \(\(0, 3\), \(2, 3\)\)\] in STPaths",
    ),
    (
        lambda: cm.Intersection(cm.Cardinality(4, 1), cm.Cardinality(4, 2, exact=True)),
        r"^no action lies in Intersection\(",
    ),
]


@pytest.mark.parametrize(("build", "message"), INFEASIBLE)
def test_an_empty_space_names_the_rules_that_empty_it(build, message: str) -> None:
    space = build()
    for attempt in (lambda: space.m, space.enumerate, space.check_feasible):
        with pytest.raises(ValueError, match=message):
            attempt()


def test_a_large_empty_space_is_found_by_the_milp_route() -> None:
    space = cm.Cardinality(40, 10).with_conflicts([(i, i + 1) for i in range(0, 40, 2)]).with_at_least(11, range(40))
    assert space.count_upper_bound() > 10**6  # too many to enumerate: the MILP decides
    with pytest.raises(ValueError, match=r"^no action satisfies at least 11 of \[0, 1, 2"):
        _ = space.m


BAD = [
    (lambda: cm.Cardinality(3, 2).with_conflicts([(0, 0)]), "conflicts: the pair .* names arm 0 twice"),
    (lambda: cm.Cardinality(3, 2).with_conflicts([(0, 1, 2)]), "conflicts must hold pairs of two arms"),
    (lambda: cm.Cardinality(3, 2).with_conflicts([(0, 5)]), "conflicts: arm index 5 is out of range for d=3"),
    (lambda: cm.Cardinality(3, 2).with_conflicts([(0, "q")]), "conflicts: unknown arm 'q'"),
    (lambda: cm.Cardinality(3, 2).with_conflicts((0, 1)), "conflicts must hold pairs of two arms, got 0"),
    (lambda: cm.Cardinality(3, 2).with_constraint({"q": 1}, "<=", 1), "coeffs: unknown arm 'q'"),
    (lambda: cm.Cardinality(3, 2).with_constraint([1, 1], "<=", 1), "coeffs must have length d=3"),
    (lambda: cm.Cardinality(3, 2).with_constraint({0: 1}, "=<", 1), "sense must be one of"),
    (lambda: cm.Cardinality(3, 2).with_constraint({0: 1}, "<=", "1"), "rhs must be a finite number"),
    (lambda: cm.Cardinality(3, 2).with_constraint({0: 1}, "<=", np.nan), "rhs must be a finite number"),
    (lambda: cm.Cardinality(3, 2).with_budget([1, -1, 1], 2), "costs must be >= 0; arm 1 costs -1"),
    (lambda: cm.Cardinality(3, 2).with_budget([1, 1], 2), "costs must have length d=3"),
    (lambda: cm.Cardinality(3, 2).with_budget({"q": 1}, 2), "costs: unknown arm 'q'"),
    (lambda: cm.Cardinality(3, 2).with_budget([1, 1, 1], -1), "budget must be a finite number >= 0"),
    (lambda: cm.Cardinality(3, 2).with_budget([1, 1, 1], "2"), "budget must be a number"),
    (lambda: cm.Cardinality(3, 2).with_at_least(4, [0, 1, 2]), "at least 4 of a group of 3 arms is impossible"),
    (lambda: cm.Cardinality(3, 2).with_at_least(-1, [0, 1]), "at_least must be a non-negative integer"),
    (lambda: cm.Cardinality(3, 2).with_at_least(1.5, [0, 1]), "at_least must be a non-negative integer"),
    (lambda: cm.Cardinality(3, 2).with_at_least(1, []), "group must hold at least one arm"),
    (lambda: cm.Cardinality(3, 2).with_at_least(1, ["q"]), "group: unknown arm 'q'"),
    (lambda: cm.Cardinality(3, 2).with_group([0, 1]), "give at_least, at_most or both"),
    (lambda: cm.Cardinality(3, 2).with_group([0, 1], at_least=2, at_most=1), "at_least=2 exceeds at_most=1"),
]


@pytest.mark.parametrize(("build", "message"), BAD)
def test_bad_rules_raise_value_error_naming_the_problem(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("family", sorted(SPACES))
def test_m_by_milp_agrees_with_enumeration_on_every_family(family: str) -> None:
    space = SPACES[family]()
    assert int(best_action(space, enumerate_below=0).sum()) == int(space.enumerate().sum(axis=1).max()) == space.m


def test_rule_oracles_agree_with_brute_force() -> None:
    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    space = space.with_conflicts([(0, 3), (5, 7)]).with_budget(np.arange(space.d) % 3, 6)
    actions = space.enumerate()
    oracles = [cm.make_oracle(space, b) for b in ("highs", "enumerate", "auto")]
    rng = np.random.default_rng(3)
    for _ in range(10):
        w = rng.normal(size=space.d)
        for oracle in oracles:
            a = oracle.argmax(w)
            assert space.contains(a) and np.isclose(w @ a, (actions @ w).max(), atol=1e-9)


def test_spaces_with_rules_and_an_enumerate_oracle_load_no_highs_oracle_module() -> None:
    """``m`` needs no oracle: the spaces solve it themselves (with highspy since it must stop on Ctrl-C)."""
    code = textwrap.dedent(
        """
        import sys
        import networkx as nx
        import numpy as np
        import cmab_milp as cm
        space = cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2))
        space = space.with_conflicts([(((0, 0), (0, 1)), ((1, 1), (1, 2)))]).with_budget(np.ones(space.d), 6)
        space = space.with_constraint({((1, 1), (1, 2)): 1}, "<=", 0).with_at_least(1, [((0, 0), (1, 0))])
        big = cm.Cardinality(30, 8).with_conflicts([(0, 1)]).with_constraint(np.arange(30.0), ">=", 100)
        oracle = cm.make_oracle(space, "enumerate")
        oracle.argmax(np.ones(space.d))
        print(space.m, int(space.enumerate().sum(axis=1).max()), big.m)
        loaded = sorted(m for m in sys.modules if m.startswith("cmab_milp.oracles.backends.highs"))
        print(loaded)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    m, brute, big = map(int, out[0].split())
    assert m == brute and big == 8  # big: the 8 heaviest arms (22..29) pass both rules
    assert out[1] == "[]", f"HiGHS oracle modules loaded: {out[1]}"


def test_building_a_policy_on_an_empty_space_names_the_rules() -> None:
    space = cm.Cardinality(3, 2).with_conflicts([(0, 1)]).with_at_least(2, [0, 1])
    with pytest.raises(ValueError, match=r"conflicts \[\(0, 1\)\] together with at least 2 of \[0, 1\]"):
        cm.CUCB(space, 100, oracle="enumerate")


@pytest.mark.slow
def test_milp_route_is_exact_on_random_ruled_path_spaces() -> None:
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(60):
        g = nx.gnp_random_graph(8, 0.45, seed=seed, directed=seed % 2 == 1)
        if not nx.has_path(g, 0, 7):
            continue
        paths = cm.STPaths(g, 0, 7)
        pairs = [tuple(int(x) for x in rng.choice(paths.d, 2, replace=False)) for _ in range(3)]
        ruled = paths.with_conflicts(pairs).with_budget(rng.integers(0, 4, paths.d), 8)
        for space in (paths, ruled):
            try:
                actions = space.enumerate()
            except ValueError:
                continue
            checked += 1
            assert int(best_action(space, enumerate_below=0).sum()) == int(actions.sum(axis=1).max())
            for _ in range(5):
                w = rng.normal(size=space.d)
                assert np.isclose(w @ best_action(space, w, enumerate_below=0), (actions @ w).max(), atol=1e-7)
    assert checked > 80
