"""Backends declare what they answer; make_oracle refuses unfit ones up front; auto reads the declarations."""

from __future__ import annotations

import math
import pickle

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles import norm_objective
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core.auto_facts import QueryShape
from cmab_milp.oracles.core.registry import BACKENDS, Capabilities, capabilities, check_backend_name, register_backend


@pytest.fixture
def scratch_backends():
    """Names registered by a test are removed afterwards."""
    before = dict(BACKENDS)
    yield
    BACKENDS.clear()
    BACKENDS.update(before)


def test_builtin_declarations_match_what_the_backends_do() -> None:
    comb = capabilities("combinatorial")
    assert comb.linear and not comb.norm and not comb.forbid_pairs
    assert comb.accepts_space(cm.Cardinality(4, 2)) and comb.accepts_space(cm.STPaths(nx.path_graph(3), 0, 2))
    assert not comb.accepts_space(cm.Cardinality(4, 2).with_constraint([1, 1, 1, 1], "<=", 1))
    assert not comb.accepts_space(cm.Intersection(cm.Cardinality(4, 2), cm.Cardinality(4, 3)))
    assert comb.declines_some(cm.STPaths(nx.cycle_graph(4), 0, 2))
    assert not comb.declines_some(cm.STPaths(nx.DiGraph([(0, 1), (1, 2)]), 0, 2))
    assert capabilities("pulp:HiGHS").takes_solver and not capabilities("pulp").norm
    assert capabilities("scip").tolerance_for("norm") == 1e-6 and capabilities("scip").tolerance_for("linear") == 1e-9
    assert capabilities("highs").time_limit and capabilities("highs").requires == ("highspy",)
    assert BACKENDS["pulp"].requires == ("pulp",) and BACKENDS["pulp"].takes_solver  # the old attributes stay


def test_undeclared_queries_are_really_unsupported() -> None:
    """A declaration of 'no norm' / 'no forbid_pairs' is what the backend does (so skipping is honest)."""
    space = cm.Cardinality(5, 2)
    comb = cm.make_oracle(space, "combinatorial")
    with pytest.raises(cm.UnsupportedQuery):
        comb.argmax_norm(np.ones(5), np.eye(5), 1.0)
    with pytest.raises(cm.UnsupportedQuery):
        comb.argmax(np.ones(5), forbid_pairs=[(0, 1)])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda s: cm.make_oracle(s, "highs", no_such_option=1), "takes no option"),
        (lambda s: cm.make_oracle(s, "enumerate", solver="x"), "takes no option"),
        (lambda s: cm.make_oracle(s, "enumerate:x"), "takes no solver suffix"),
        (lambda s: cm.make_oracle(s, "highs:"), "empty ':SOLVER'"),
        (lambda s: cm.make_oracle(s, "pulp:NO_SUCH_SOLVER"), "not available here"),
        (lambda s: cm.make_oracle(s, "cplex"), "unknown oracle backend 'cplex'"),
        (lambda s: cm.make_oracle(s, 3), "backend must be a name"),
        (lambda s: cm.make_oracle(s.with_constraint([1, 1, 1, 1], "<=", 1), "combinatorial"), "does not accept"),
        (lambda s: cm.make_oracle("space", "enumerate"), "ActionSpace"),
    ],
)
def test_make_oracle_refuses_unfit_backends_before_any_work(build, message) -> None:
    if message == "not available here":
        pytest.importorskip("pulp")
    with pytest.raises(ValueError, match=message):
        build(cm.Cardinality(4, 2))


def test_a_missing_module_is_refused_without_calling_the_factory(scratch_backends) -> None:
    called = []
    register_backend("needs_missing", lambda space: called.append(space), requires=("no_such_module_cmab",))
    assert "needs_missing" not in cm.available_backends()
    with pytest.raises(ValueError, match="no_such_module_cmab"):
        cm.make_oracle(cm.Cardinality(3, 1), "needs_missing")
    with pytest.raises(ValueError, match="missing module"):
        check_backend_name("needs_missing")
    assert check_backend_name("needs_missing", installed=False) == ("needs_missing", None)
    assert called == []


def test_register_backend_with_a_bare_factory_keeps_working(scratch_backends) -> None:
    def factory(space, max_actions=None):
        return EnumerateOracle(space, max_actions)

    cm.register_backend("my_brute", factory)
    assert "my_brute" in cm.available_backends()
    assert capabilities("my_brute") == Capabilities()  # defaults: a full exact backend
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "my_brute", max_actions=100)
    assert oracle.argmax(np.array([1.0, -1.0, 2.0, 0.5])).nonzero()[0].tolist() == [0, 2]
    with pytest.raises(ValueError, match=r"takes no option\(s\) \['typo'\]"):
        cm.make_oracle(cm.Cardinality(4, 2), "my_brute", typo=1)
    cm.register_backend("any_options", lambda space, **options: EnumerateOracle(space))
    assert cm.make_oracle(cm.Cardinality(4, 2), "any_options", whatever=1).d == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("", EnumerateOracle), "non-empty"),
        (("a:b", EnumerateOracle), "without ':'"),
        (("x", 42), "callable or 'module:attr'"),
        (("x", EnumerateOracle, (), "", False, {"norm": False}), "Capabilities record"),
    ],
)
def test_register_backend_refuses_bad_declarations(args, message, scratch_backends) -> None:
    with pytest.raises(ValueError, match=message):
        register_backend(*args)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("highs", ("highs", None)), ("enumerate", ("enumerate", None)), ("auto", ("auto", None))],
)
def test_check_backend_name_returns_name_and_solver(spec, expected) -> None:
    assert check_backend_name(spec) == expected


@pytest.mark.parametrize("spec", [None, 1, ["highs"], "no_such", "highs:x", "pulp:"])
def test_check_backend_name_refuses_bad_specs(spec) -> None:
    with pytest.raises(ValueError):
        check_backend_name(spec)


# ----------------------------------------------------------------- auto
def _norm_queries(d: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    M = a @ a.T / d + np.eye(d)
    return [(rng.uniform(0, 1, d), M, 1.0, sign) for sign in (1, -1) for _ in range(n)]


def test_auto_sends_norm_queries_on_the_10x4_matching_to_enumeration() -> None:
    """Reproduction: the action-count bound (102,091) passed the cap, so auto used HiGHS (~130 ms a query)."""
    space = cm.Matchings(nx.complete_bipartite_graph(10, 4))
    assert space.count_upper_bound() > 60_000  # the loose bound that misled the old dispatch
    auto = cm.make_oracle(space, "auto")
    enum = cm.make_oracle(space, "enumerate")
    for mu, M, f, sign in _norm_queries(space.d, 3):
        a, b = auto.argmax_norm(mu, M, f, sign), enum.argmax_norm(mu, M, f, sign)
        assert norm_objective(mu, M, f, sign, a) >= norm_objective(mu, M, f, sign, b) - 1e-9
    assert auto.routes == {"enumerate": 6}
    shape = QueryShape("norm", 1)
    estimates = auto.estimates(shape)
    assert estimates["enumerate"] * 5 < estimates["highs"]


def test_auto_plans_depend_on_the_space_and_query_shape_only() -> None:
    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    first, second = cm.make_oracle(space, "auto"), cm.make_oracle(space, "auto")
    for shape in (QueryShape("linear"), QueryShape("linear", forbid_pairs=True), QueryShape("norm", -1)):
        assert first.plan(shape) == second.plan(shape)
    # 12 paths: enumeration beats the HiGHS MILP with its lazy subtour cuts (SCIP, when installed, comes last)
    plan = [b for b in first.plan(QueryShape("linear")) if b != "scip"]
    assert set(plan) == {"combinatorial", "enumerate", "highs"}
    assert plan[-1] == "highs" and first.plan(QueryShape("linear"))[-1] in ("highs", "scip")
    assert [b for b in first.plan(QueryShape("norm", -1)) if b != "scip"] == ["enumerate", "highs"]


def test_auto_passes_a_declined_query_to_the_next_backend() -> None:
    """Longest simple path (positive weights) on a cyclic graph: combinatorial declines, the next one answers."""
    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    auto = cm.make_oracle(space, "auto", enumerate_cap=0)  # no enumeration: combinatorial first, then HiGHS
    assert auto.plan(QueryShape("linear"))[:2] == ["combinatorial", "highs"]
    longest = auto.argmax(np.ones(space.d))
    shortest = auto.argmax(-np.ones(space.d))
    assert longest.sum() == 8 and shortest.sum() == 4
    assert auto.routes == {"highs": 1, "combinatorial": 1}


def test_auto_reads_declarations_not_classes(scratch_backends) -> None:
    """A user backend declaring a cheaper cost is chosen; one declaring no norm never gets norm queries."""
    register_backend(
        "cheap_linear",
        lambda space: EnumerateOracle(space),
        capabilities=Capabilities(norm=False, cost=lambda space, shape, facts: 1e-9),
    )
    auto = cm.make_oracle(cm.Cardinality(5, 2), "auto")
    auto.argmax(np.arange(5.0))
    auto.argmax_norm(np.arange(5.0), np.eye(5), 1.0)
    assert auto.routes["cheap_linear"] == 1 and auto.routes["cheap_linear"] + auto.routes["enumerate"] == 2
    assert math.isinf(auto.estimates(QueryShape("norm")).get("cheap_linear", math.inf))


def test_auto_refuses_bad_caps_and_pickles() -> None:
    with pytest.raises(ValueError, match="enumerate_cap"):
        cm.make_oracle(cm.Cardinality(4, 2), "auto", enumerate_cap=-1)
    auto = cm.make_oracle(cm.Cardinality(4, 2), "auto")
    w = np.array([0.3, 0.1, 0.2, 0.9])
    first = auto.argmax(w, forbid_pairs=[(0, 3)])
    copy = pickle.loads(pickle.dumps(auto))
    assert np.array_equal(copy.argmax(w, forbid_pairs=[(0, 3)]), first)


# ---------------------------------------------------------------- options every backend or highs declares
@pytest.mark.parametrize("backend", ["enumerate", "combinatorial", "highs", "auto"])
def test_workers_is_an_option_of_every_backend(backend: str) -> None:
    space = cm.Cardinality(6, 2)
    assert "workers" in BACKENDS[backend].options()
    oracle = cm.make_oracle(space, backend, workers=3)
    assert oracle.max_workers() == 3
    w = np.random.default_rng(0).normal(size=(5, 6))
    batch = oracle.argmax_batch([{"weights": row} for row in w])
    truth = cm.make_oracle(space, "enumerate", workers=1)
    assert [a.tolist() for a in batch] == [truth.argmax(row).tolist() for row in w]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_workers_option_is_refused_before_the_factory_runs(bad, scratch_backends) -> None:
    built = []
    register_backend("counted", lambda space: built.append(space) or EnumerateOracle(space))
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        cm.make_oracle(cm.Cardinality(4, 2), "counted", workers=bad)
    assert built == []


def test_recovery_enumeration_is_a_typed_highs_tuning_option() -> None:
    space = cm.Cardinality(7, 3)
    assert cm.make_oracle(space, "highs").tuning.recovery_enumeration == 200_000  # today's default
    assert cm.make_oracle(space, "highs", tuning={"recovery_enumeration": 10}).tuning.recovery_enumeration == 10
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(ValueError, match=r"recovery_enumeration.*whole number >= 0"):
            cm.make_oracle(space, "highs", tuning={"recovery_enumeration": bad})


def test_workers_and_tuning_are_read_from_a_problem_file(tmp_path) -> None:
    from cmab_milp.experiments import ProblemError, load_problem

    head = '[space]\nkind = "Cardinality"\nd = 4\nm = 2\n[environment]\nkind = "BernoulliArms"\n'
    head += "means = [0.1, 0.2, 0.3, 0.4]\n[run]\nhorizon = 20\nseeds = 1\n"
    entry = '[[policies]]\nname = "P"\nkind = "CUCB"\noracle = "highs"\n'
    path = tmp_path / "ok.toml"
    path.write_text(head + entry + "workers = 2\ntuning = { recovery_enumeration = 5 }\n")
    oracle = load_problem(path).build_policy("P").oracle
    assert oracle.max_workers() == 2 and oracle.tuning.recovery_enumeration == 5
    for line, key in (("workers = 0\n", "workers"), ("tuning = { recovery_enumeration = -2 }\n", "tuning")):
        path.write_text(head + entry + line)
        with pytest.raises(ProblemError, match=key):
            load_problem(path)
