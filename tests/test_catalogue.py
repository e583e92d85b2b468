"""The catalogue of kinds and the objects that describe themselves (issue 41, item 5).

Each kind is listed once (:data:`cmab_milp.catalogue.BUILT_IN`); every other list of kinds is read from
it. Each space, environment and policy rebuilds from ``get_params()`` into an object that behaves the
same (same actions and labels, same draws, same decisions); a constructor's refusal names its parameter.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp import catalogue
from cmab_milp.described import ParameterError
from cmab_milp.experiments.problem import kinds
from cmab_milp.kind_data import from_data, to_data
from cmab_milp.testing import registered_kinds

GRAPH = nx.Graph([("s", "x"), ("x", "t"), ("s", "y"), ("y", "t"), ("x", "y")])
SPACES = {
    "Cardinality": cm.Cardinality(5, 2, exact=True, labels=list("abcde")),
    "PartitionMatroid": cm.PartitionMatroid([["p", "q"], ["r"]], [1, 1], labels=["p", "q", "r"]),
    "ExplicitActions": cm.ExplicitActions([[1, 0, 1], [0, 1, 1]]),
    "GraphicMatroid": cm.GraphicMatroid(nx.cycle_graph(5), flow=True),
    "SpanningTrees": cm.SpanningTrees(nx.complete_graph(4), sparse_cuts=True),
    "STPaths": cm.STPaths(GRAPH, "s", "t", oriented=False, cuts_min_edges=3),
    "Matchings": cm.Matchings(nx.complete_bipartite_graph(2, 2), perfect=True),
    "Intersection": cm.Intersection(
        cm.Cardinality(4, 2, labels=list("wxyz")), cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1]), labels=list("WXYZ")
    ),
    "ConstrainedSpace": cm.Cardinality(4, 3).with_budget([2, 1, 1, 1], 3),
    "ConflictSpace": cm.STPaths(GRAPH, "s", "t").with_conflicts([(("s", "x"), ("y", "t"))]).with_labels(list("ABCDE")),
}


# ------------------------------------------------------------------ one list
def test_every_library_kind_is_listed_once_and_resolves_to_a_class_of_its_name() -> None:
    for family in ("space", "environment", "policy"):
        for name in catalogue.names(family):
            cls = catalogue.lookup(family, name)
            assert cls.__name__ == name and catalogue.name_of(cls, family) == name
    assert set(SPACES) == set(catalogue.names("space"))


def test_the_other_lists_of_kinds_are_read_from_the_catalogue() -> None:
    from cmab_milp import policies
    from cmab_milp.policies.persistence import policy_classes

    policy_names = set(catalogue.names("policy"))
    assert set(policy_classes()) == policy_names
    assert {k for k, v in policies._LAZY.items() if v != ".persistence"} - {"Policy"} == policy_names
    assert set(kinds.policy_kinds()) == policy_names
    assert set(kinds.environment_kinds()) == set(catalogue.names("environment"))
    assert {k.name for k in registered_kinds("policy")} == policy_names
    assert next(k.name for k in registered_kinds("backend")) == catalogue.names("backend")[0]
    # problem files name the space families; the side rules have tables of their own
    assert set(kinds.space_kinds()) == set(catalogue.names("space")) - {"ConstrainedSpace", "ConflictSpace"}
    assert [k.name for k in registered_kinds("space")] == kinds.space_kinds()
    assert not hasattr(kinds, "_key_of_message")


def test_one_register_signature_for_every_family() -> None:
    from cmab_milp.oracles.backends.enumerate import EnumerateOracle

    class Mine(cm.BernoulliArms):
        def __init__(self, d: int):
            super().__init__([0.5] * d)

    catalogue.register("environment", "Mine", Mine)
    catalogue.register("backend", "my_enumerate", EnumerateOracle)
    try:
        assert catalogue.lookup("environment", "Mine") is Mine and "Mine" in catalogue.names("environment")
        assert "my_enumerate" in cm.available_backends()
        best = cm.make_oracle(cm.Cardinality(3, 1), "my_enumerate").argmax(np.array([0.1, 0.9, 0.2]))
        assert best.tolist() == [False, True, False]
    finally:
        catalogue.unregister("environment", "Mine")
        catalogue.unregister("backend", "my_enumerate")
    assert "Mine" not in catalogue.names("environment") and "my_enumerate" not in catalogue.names("backend")


@pytest.mark.parametrize(
    ("family", "name", "obj", "message"),
    [
        ("oracle", "X", object, "unknown family"),
        ("policy", "_Hidden", object, "plain name"),
        ("policy", "os.path", object, "plain name"),
        ("space", "Fn", lambda: None, "got function"),
    ],
)
def test_register_refuses_bad_entries(family, name, obj, message) -> None:
    with pytest.raises(ValueError, match=message):
        catalogue.register(family, name, obj)


def test_a_name_outside_the_catalogue_is_never_imported() -> None:
    for name in ("os", "os:system", "subprocess.Popen", "ActionSpace", "RuleSpace", "__class__"):
        with pytest.raises(catalogue.UnknownKind):
            catalogue.lookup("space", name)
        with pytest.raises(ValueError, match="unknown space kind"):
            from_data({"kind": name, "d": 3})


# ------------------------------------------------------------------ describing themselves
def _same_space(a, b) -> None:
    assert type(a) is type(b) and a.d == b.d and list(a.arms) == list(b.arms) and a.labels == b.labels
    assert sorted(map(tuple, a.enumerate().tolist())) == sorted(map(tuple, b.enumerate().tolist()))


@pytest.mark.parametrize("name", sorted(SPACES))
def test_every_space_kind_rebuilds_from_its_params_and_from_json_data(name: str) -> None:
    space = SPACES[name]
    params = space.get_params()
    assert catalogue.name_of(space) == name
    rebuilt = type(space).from_params(params)
    if "labels" not in params and space.given_labels() is not None:  # a rule space relabelled afterwards
        rebuilt = rebuilt.with_labels(space.given_labels())
    _same_space(rebuilt, space)
    data = json.loads(json.dumps(to_data(space)))
    _same_space(from_data(data), space)


def test_get_params_reads_the_constructor_signature() -> None:
    assert cm.Cardinality(4, 2).get_params() == {"d": 4, "m": 2, "exact": False, "labels": None}
    paths = cm.STPaths(GRAPH, "s", "t").get_params()
    assert list(paths) == ["graph", "source", "target", "oriented", "flow", "cuts_min_edges", "cuts_min_arcs", "labels"]
    assert paths["graph"] is GRAPH
    both = SPACES["Intersection"].get_params()
    assert len(both["spaces"]) == 2 and both["labels"] == list("WXYZ")
    # labels inherited from a member are not the intersection's own
    assert (
        cm.Intersection(cm.Cardinality(4, 2, labels=list("wxyz")), cm.Cardinality(4, 3)).get_params()["labels"] is None
    )


def test_a_graph_is_stored_as_node_and_edge_lists() -> None:
    data = to_data(cm.STPaths(nx.DiGraph([((0, 1), (1, 1)), ((1, 1), (2, 2))]), (0, 1), (2, 2)))
    assert data["graph"] == {
        "directed": True,
        "nodes": [{"__tuple__": [0, 1]}, {"__tuple__": [1, 1]}, {"__tuple__": [2, 2]}],
        "edges": [[{"__tuple__": [0, 1]}, {"__tuple__": [1, 1]}], [{"__tuple__": [1, 1]}, {"__tuple__": [2, 2]}]],
    }
    with pytest.raises(ValueError, match=r"node label 1\.5"):
        to_data(cm.GraphicMatroid(nx.Graph([(1.5, 2), (2, 3)])))


def _environments():
    from cmab_milp import environments as envs

    return {
        "UniformNoise": envs.UniformNoise([0.2, 0.5, 0.7], 0.1, seed=1),
        "BernoulliArms": envs.BernoulliArms([0.3, 0.6], seed=2),
        "GaussianNoise": envs.GaussianNoise([0.1, 0.2], [[1.0, 0.3], [0.3, 1.0]], seed=3),
        "BetaArms": envs.BetaArms([1.0, 2.0], [2.0, 1.0], seed=4),
        "PaperGaussianNoise": envs.PaperGaussianNoise([0.1, 0.2, 0.3], cov_seed=2, seed=5),
        "CopulaNoise": envs.CopulaNoise([0.2, 0.4, 0.6], corr_seed=1, seed=6),
        "BernoulliCosts": envs.BernoulliCosts([0.3, 0.5], seed=7),
        "DiscreteArms": envs.DiscreteArms([0.0, 0.5, 1.0], [[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]], seed=8),
    }


def test_every_environment_kind_rebuilds_from_its_params_and_draws_the_same() -> None:
    environments = _environments()
    assert set(environments) == set(catalogue.names("environment"))
    for name, env in environments.items():
        rebuilt = catalogue.lookup("environment", name).from_params(env.get_params())
        action = np.ones(env.d, bool)
        assert np.array_equal(rebuilt.means, env.means), name
        draws = [env.sample(action) for _ in range(5)]
        assert all(np.array_equal(rebuilt.sample(action), x) for x in draws), name


def test_every_policy_kind_rebuilds_from_its_params_and_decides_the_same() -> None:
    space = cm.Cardinality(4, 2)
    for name in catalogue.names("policy"):
        cls = catalogue.lookup("policy", name)
        oracle = "dist_enumerate" if name in ("SDCB", "AROQGR", "SROQGR") else "enumerate"
        extra = {"support": [0.0, 1.0]} if oracle == "dist_enumerate" else {"seed": 5} if name == "CTS" else {}
        policy = cls(space, 50, oracle=oracle, **extra)
        twin = cls.from_params(policy.get_params())
        assert twin.get_params() == policy.get_params()
        rng = np.random.default_rng(0)
        for _ in range(6):
            a, b = policy.select(), twin.select()
            assert np.array_equal(a, b), name
            y = np.where(a, rng.integers(0, 2, 4).astype(float), np.nan)
            policy.observe(a, y)
            twin.observe(b, y)


# ------------------------------------------------------------------ errors naming their parameter
BAD = [
    (lambda: cm.Cardinality(3, 4), "m"),
    (lambda: cm.Cardinality(0, 1), "d"),
    (lambda: cm.Cardinality(3, 1, labels=["a", "a", "b"]), "labels"),
    (lambda: cm.PartitionMatroid([[0, 1], [2]], [1, -1]), "capacities"),
    (lambda: cm.PartitionMatroid([], []), "blocks"),
    (lambda: cm.ExplicitActions([[0, 2]]), "actions"),
    (lambda: cm.GraphicMatroid(nx.Graph()), "graph"),
    (lambda: cm.GraphicMatroid(nx.cycle_graph(3), flow="yes"), "flow"),
    (lambda: cm.STPaths(GRAPH, "s", "nowhere"), "target"),
    (lambda: cm.STPaths(GRAPH, "s", "t", cuts_min_arcs=-1), "cuts_min_arcs"),
    (lambda: cm.Intersection(cm.Cardinality(3, 1), cm.Cardinality(4, 1)), "spaces"),
    (lambda: cm.Cardinality(3, 2).with_constraint([1, 1, 1], "<>", 1), "sense"),
    (lambda: cm.Cardinality(3, 2).with_budget([1, 1, 1], -1), "budget"),
    (lambda: cm.BernoulliArms([0.5, 1.5]), "means"),
    (lambda: cm.UniformNoise([0.5], width=-1), "width"),
    (lambda: cm.GaussianNoise([0.1, 0.2], [[1.0, 2.0], [0.0, 1.0]]), "cov"),
    (lambda: cm.CUCB(cm.Cardinality(3, 1), 10, oracle="enumerate", C=-1), "C"),
    (lambda: cm.AROQ(cm.Cardinality(3, 1), 0, oracle="enumerate"), "T"),
    (lambda: cm.SROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", M=0), "M"),
    (lambda: cm.SDCB(cm.Cardinality(3, 1), 10, oracle="enumerate", reward="nope"), "reward"),
    (lambda: cm.CUCB(cm.Cardinality(3, 1), 10, oracle=3), "oracle"),
]


@pytest.mark.parametrize(("build", "param"), BAD, ids=[p for _, p in BAD])
def test_a_refused_value_names_its_parameter(build, param: str) -> None:
    with pytest.raises(ParameterError) as caught:
        build()
    assert caught.value.param == param and isinstance(caught.value, ValueError)


def test_an_unknown_parameter_is_named() -> None:
    with pytest.raises(ParameterError, match="unknown parameter 'k' of Cardinality") as caught:
        cm.Cardinality.from_params({"d": 3, "k": 1})
    assert caught.value.param == "k"


def test_a_problem_file_names_the_key_from_the_error_not_its_text(tmp_path) -> None:
    """A registered space whose message never spells its parameter: the key still comes out right."""
    from cmab_milp.experiments import ProblemError, parse_problem

    class Tiny(cm.Cardinality):
        def __init__(self, d: int, m: int, exact: bool = False, *, labels=None):
            if m > 1:
                raise ParameterError("m", "too many at once for this toy")
            super().__init__(d, m, exact, labels=labels)

    problem = {
        "space": {"kind": "Tiny", "d": 3, "m": 2},
        "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3]},
        "policies": [{"name": "CUCB", "kind": "CUCB", "oracle": "enumerate"}],
        "run": {"horizon": 10, "seeds": 1},
    }
    catalogue.register("space", "Tiny", Tiny)
    try:
        with pytest.raises(ProblemError, match=r"space\.m: too many at once for this toy"):
            parse_problem(problem, "toy.toml").build_space()
    finally:
        catalogue.unregister("space", "Tiny")
