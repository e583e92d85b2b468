"""One conformance kit that every registered oracle backend runs.

The backends come from the registry (:func:`cmab_milp.testing.registered_kinds`): a backend joins by
being registered with :func:`cmab_milp.register_backend`, one that cannot run here (its solver is not
installed) is skipped with the reason. Each answers random linear queries (near-ties, negative
weights, random include / exclude / forbid_pairs) on every family of ``instances.SPACES``; the truth
is brute force over the enumerated actions, computed here in numpy. A backend may decline
(``UnsupportedQuery``) only what its capabilities declare it may.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from instances import SPACES

import cmab_milp as cm
from cmab_milp.oracles.core.registry import capabilities
from cmab_milp.testing import registered_kinds

#: Backend variants checked besides the registered backends: registry name plus options.
VARIANTS = {"highs-milp": ("highs", {"lp_when_integral": False})}

#: Backends that build a new solver model or process per query: fewer queries, marked slow_backend.
SLOW = ("pulp", "scip")


def backend_params() -> list:
    """Every registered backend (per usable solver) and the variants; those that cannot run here skip."""
    kinds = [(kind.name, kind.unavailable) for kind in registered_kinds("backend")]
    params = []
    for name, unavailable in [*kinds, *((name, None) for name in VARIANTS)]:
        marks = [] if unavailable is None else [pytest.mark.skip(reason=unavailable)]
        if name.split(":")[0] in SLOW:
            marks.append(pytest.mark.slow_backend)
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def _named(names: list[str]) -> list:
    """The params of ``names`` among the registered backends (each skips with its reason if it cannot run)."""
    by_id = {param.id: param for param in backend_params()}
    return [by_id[name] for name in names]


def may_decline(backend: str, space: cm.ActionSpace, query: dict) -> bool:
    """Whether the backend declares it may raise UnsupportedQuery for ``query`` on ``space``."""
    caps = capabilities(VARIANTS.get(backend, (backend, {}))[0])
    return caps.declines_some(space) or (bool(query.get("forbid_pairs")) and not caps.forbid_pairs)


_ORACLES: dict[tuple[str, str], cm.Oracle] = {}


def oracle_for(backend: str, family: str) -> cm.Oracle:
    key = (backend, family)
    if key not in _ORACLES:
        name, options = VARIANTS.get(backend, (backend, {}))
        try:
            _ORACLES[key] = cm.make_oracle(SPACES[family](), name, **options)
        except ValueError as exc:  # e.g. a PuLP solver that is not installed
            pytest.skip(str(exc))
    return _ORACLES[key]


def random_query(rng: np.random.Generator, d: int, kind: int) -> dict:
    """Weights with near-ties and negatives, and random restrictions."""
    if kind % 3 == 0:  # near-ties: values on a coarse grid plus ~1e-9 noise
        w = rng.integers(-2, 5, d) / 4 + rng.normal(scale=3e-9, size=d)
    elif kind % 3 == 1:
        w = rng.normal(size=d)
    else:
        w = rng.uniform(0, 1, d)
    arms = rng.permutation(d)
    q: dict = {"weights": w}
    if kind % 4 >= 1:
        q["include"] = [int(arms[0])] if rng.random() < 0.7 else []
    if kind % 4 >= 2:
        q["exclude"] = [int(a) for a in arms[1 : 1 + int(rng.integers(1, 3))]]
    if kind % 5 == 4:
        q["forbid_pairs"] = [(int(arms[3]), int(arms[4])), (int(arms[5]), int(arms[0]))]
    return q


def brute_force(actions: np.ndarray, q: dict) -> float | None:
    ok = np.ones(len(actions), bool)
    for i in q.get("include", ()):
        ok &= actions[:, i]
    for i in q.get("exclude", ()):
        ok &= ~actions[:, i]
    for i, j in q.get("forbid_pairs", ()):
        ok &= ~(actions[:, i] & actions[:, j])
    if not ok.any():
        return None
    return float((actions[ok] @ q["weights"]).max())


def check_answer(space: cm.ActionSpace, q: dict, answer, best: float | None) -> None:
    if best is None:
        assert answer is None, "the query is infeasible but an action was returned"
        return
    assert answer is not None, "a feasible query returned None"
    assert answer.dtype == bool and answer.shape == (space.d,)
    assert space.contains(answer)
    assert answer[list(q.get("include", ()))].all()
    assert not answer[list(q.get("exclude", ()))].any()
    for i, j in q.get("forbid_pairs", ()):
        assert not (answer[i] and answer[j])
    value = float(q["weights"] @ answer)
    rounding = 2 * len(q["weights"]) * np.finfo(float).eps * float(np.abs(q["weights"]).sum())  # of the float sums
    assert value >= best - 1e-9 * (1 + abs(best)) - rounding, f"value {value} < optimum {best}"


@pytest.mark.parametrize("family", sorted(SPACES))
@pytest.mark.parametrize("backend", backend_params())
def test_linear_queries_match_brute_force(backend: str, family: str) -> None:
    if not capabilities(VARIANTS.get(backend, (backend, {}))[0]).linear:
        pytest.skip(f"backend {backend!r} declares no linear queries")
    oracle = oracle_for(backend, family)
    space = oracle.space
    actions = space.enumerate()
    rng = np.random.default_rng(zlib.crc32(family.encode()))  # hash() of a str changes with every process
    n_queries = 8 if backend.startswith(SLOW) else 24
    answered = 0
    for kind in range(n_queries):
        q = random_query(rng, space.d, kind)
        try:
            answer = oracle.argmax(**q)
        except cm.UnsupportedQuery:
            assert may_decline(backend, space, q), f"{backend} declined a query its capabilities declare: {q}"
            continue
        check_answer(space, q, answer, brute_force(actions, q))
        answered += 1
    assert oracle.ledger.queries >= answered


@pytest.mark.parametrize("backend", _named(["highs", "auto", "enumerate"]))
def test_batch_matches_single_queries_and_counts_one_round(backend: str) -> None:
    oracle = cm.make_oracle(SPACES["spanning-trees"](), backend)
    rng = np.random.default_rng(1)
    queries = [random_query(rng, oracle.space.d, k) for k in range(10)]
    answers = oracle.argmax_batch([dict(q, kind="linear") for q in queries])
    assert oracle.ledger.queries == 10 and oracle.ledger.rounds == 1
    actions = oracle.space.enumerate()
    for q, a in zip(queries, answers, strict=True):
        check_answer(oracle.space, q, a, brute_force(actions, q))


def test_combinatorial_declines_what_it_cannot_answer_exactly() -> None:
    paths = cm.make_oracle(SPACES["paths-cyclic-undirected"](), "combinatorial")
    with pytest.raises(cm.UnsupportedQuery, match="NP-hard"):
        paths.argmax(np.ones(paths.d))
    card = cm.make_oracle(SPACES["cardinality"](), "combinatorial")
    with pytest.raises(cm.UnsupportedQuery, match="forbid_pairs"):
        card.argmax(np.ones(8), forbid_pairs=[(0, 1)])
    # a space it has no algorithm for is refused when the oracle is made, before any query
    with pytest.raises(ValueError, match="does not accept ConstrainedSpace"):
        cm.make_oracle(SPACES["with-constraint"](), "combinatorial")


def test_auto_routes_to_the_cheapest_exact_method() -> None:
    auto = cm.make_oracle(cm.Cardinality(30, 4), "auto")
    auto.argmax(np.linspace(0, 1, 30))
    auto.argmax(np.linspace(0, 1, 30), forbid_pairs=[(28, 29)])
    assert auto.routes["combinatorial"] == 1
    assert auto.routes["highs"] == 1  # 31k actions: past the enumeration cap
    # 17 paths: enumeration answers faster than HiGHS (0.4 ms), once planning may spend one query's worth
    # on counting them (the default plan_share 0.25 keeps the first query near HiGHS's and routes there)
    dag = cm.make_oracle(SPACES["paths-dag"](), "auto", plan_share=1.0)
    dag.argmax(np.ones(dag.d), forbid_pairs=[(0, 1)])
    assert dag.routes["enumerate"] == 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=9, max_size=9),
    st.sets(st.integers(0, 8), max_size=2),
    st.sets(st.integers(0, 8), max_size=3),
)
def test_property_highs_equals_brute_force_on_partition(weights, include, exclude) -> None:
    oracle = oracle_for("highs", "partition")
    q = {"weights": np.array(weights), "include": sorted(include), "exclude": sorted(exclude)}
    check_answer(oracle.space, q, oracle.argmax(**q), brute_force(oracle.space.enumerate(), q))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=12, max_size=12), st.sets(st.integers(0, 11), max_size=2))
def test_property_lazy_cuts_give_simple_paths(weights, exclude) -> None:
    oracle = oracle_for("highs", "paths-cyclic-undirected")
    q = {"weights": np.array(weights), "exclude": sorted(exclude)}
    check_answer(oracle.space, q, oracle.argmax(**q), brute_force(oracle.space.enumerate(), q))


def test_cancelling_weights_are_answered_within_the_rounding_of_their_sums() -> None:
    """Found by Hypothesis: ``1e-9 + 1 - 1`` sums to ``1.0000000827e-9`` in floating point, beyond
    ``1e-9 (1 + |opt|)`` of 0. HiGHS answered a path of value 0 with that bound, and the certificate
    refused it ("optimality not proven"): the bound check must allow the sums' rounding."""
    oracle = oracle_for("highs", "paths-cyclic-undirected")
    found = np.zeros(12)
    found[[6, 8, 9]] = 1e-9, 1.0, -1.0  # HiGHS answered 0 against 1.0000000827e-9: the test's own check
    refused = np.zeros(12)
    refused[[4, 6, 7, 8, 9]] = -0.842682564145318, 1e-9, -1.0, 1.0, -1.0  # HiGHS's bound 1.0000000827e-9, answer 0
    for weights in (found, refused):
        q = {"weights": weights, "exclude": [1]}
        check_answer(oracle.space, q, oracle.argmax(**q), brute_force(oracle.space.enumerate(), q))


BAD_QUERIES = [
    ({"weights": np.ones(3)}, "shape"),
    ({"weights": np.r_[np.ones(7), np.nan]}, "finite"),
    ({"weights": np.ones(8), "include": [8]}, "out of range"),
    ({"weights": np.ones(8), "exclude": [-1]}, "out of range"),
    ({"weights": np.ones(8), "include": [1.5]}, "integer"),
    ({"weights": np.ones(8), "forbid_pairs": [(1, 1)]}, "two different arms"),
    ({"weights": np.ones(8), "forbid_pairs": [(1, 2, 3)]}, "pairs"),
]


@pytest.mark.parametrize("backend", ["highs", "enumerate", "combinatorial", "auto"])
@pytest.mark.parametrize(("query", "message"), BAD_QUERIES)
def test_bad_queries_raise_clear_errors(backend: str, query: dict, message: str) -> None:
    oracle = oracle_for(backend, "cardinality")
    with pytest.raises(ValueError, match=message):
        oracle.argmax(**query)


BAD_NORM = [
    ({"mu": np.ones(8), "M": np.eye(7), "f": 1.0}, "shape"),
    ({"mu": np.ones(8), "M": np.triu(np.ones((8, 8))), "f": 1.0}, "symmetric"),
    ({"mu": np.ones(8), "M": np.eye(8), "f": -1.0}, "f must be"),
    ({"mu": np.ones(8), "M": np.eye(8), "f": 1.0, "sign": 0}, "sign"),
]


@pytest.mark.parametrize(("query", "message"), BAD_NORM)
def test_bad_norm_queries_raise_clear_errors(query: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oracle_for("enumerate", "cardinality").argmax_norm(**query)


def test_contradictory_restrictions_return_none_and_are_counted() -> None:
    oracle = oracle_for("highs", "cardinality")
    before = oracle.ledger.queries
    assert oracle.argmax(np.ones(8), include=[1], exclude=[1]) is None
    assert oracle.argmax(np.ones(8), include=[1, 2], forbid_pairs=[(1, 2)]) is None
    assert oracle.argmax(np.ones(8), include=[0, 1, 2, 3]) is None  # more than m arms
    assert oracle.ledger.queries == before + 3


def test_make_oracle_rejects_unknown_backends() -> None:
    space = cm.Cardinality(3, 1)
    with pytest.raises(ValueError, match="unknown oracle backend"):
        cm.make_oracle(space, "cplex")
    with pytest.raises(ValueError, match="takes no solver"):
        cm.make_oracle(space, "highs:foo")


def test_compiled_model_can_be_inspected(tmp_path) -> None:
    oracle = cm.make_oracle(SPACES["spanning-trees"](), "highs")
    oracle.argmax(np.ones(oracle.d))  # finds lazy cuts (removed after the query)
    text = oracle.model_text()
    assert "a0" in text and "a11" in text
    path = oracle.write_model(tmp_path / "trees.mps")
    assert path.stat().st_size > 0


@pytest.mark.parametrize("backend", ["highs", "auto", "enumerate", "combinatorial"])
def test_oracles_pickle_with_their_ledger(backend: str) -> None:
    import pickle

    oracle = cm.make_oracle(SPACES["spanning-trees"](), backend)
    w = np.linspace(0, 1, oracle.d)
    first = oracle.argmax(w)
    copy = pickle.loads(pickle.dumps(oracle))
    assert copy.ledger.queries == 1
    assert np.array_equal(copy.argmax(w), first)
    assert copy.ledger.queries == 2 and oracle.ledger.queries == 1


@pytest.mark.parametrize("backend", ["highs", "auto", "enumerate"])
def test_restrictions_given_as_arrays_or_lists_mean_the_same(backend: str) -> None:
    oracle = cm.make_oracle(SPACES["cardinality"](), backend)
    w = np.linspace(1.0, 0.0, oracle.d)
    as_lists = oracle.argmax(w, include=[oracle.d - 1, oracle.d - 2], exclude=[0, 1], forbid_pairs=[(2, 3)])
    as_arrays = oracle.argmax(
        w, include=np.array([oracle.d - 1, oracle.d - 2]), exclude=np.array([0, 1]), forbid_pairs=np.array([[2, 3]])
    )
    assert as_lists is not None and np.array_equal(as_lists, as_arrays)
    empty = oracle.argmax(w, include=np.array([], int), exclude=[], forbid_pairs=np.zeros((0, 2), int))
    assert np.array_equal(empty, oracle.argmax(w))


# ------------------------------------------------------------------ a backend joins by being registered
_PLUGIN = '''
import numpy as np

import cmab_milp as cm
from cmab_milp.oracles.backends.enumerate import EnumerateOracle


class Worst(EnumerateOracle):
    """Brute force answering the worst admitted action: wrong on every query without ties."""

    def _best(self, values, query):
        mask = query.restrictions.mask(self.actions)
        ok = np.ones(len(values), bool) if mask is None else mask
        return None if not ok.any() else self.actions[int(np.argmin(np.where(ok, values, np.inf)))].copy()


cm.register_backend("plugin_enum", EnumerateOracle)
cm.register_backend("plugin_worst", Worst)
cm.register_backend("plugin_missing", EnumerateOracle, requires=["no_such_solver_module"])
'''


def test_a_newly_registered_backend_joins_the_conformance_run(tmp_path) -> None:
    """Registered from a plugin before collection (nothing edited here): the right backend passes, the
    wrong one fails, the one whose solver is missing skips saying which module to install."""
    (tmp_path / "conformance_plugin.py").write_text(_PLUGIN, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(root), os.environ.get("PYTHONPATH", "")]))
    select = "test_linear_queries_match_brute_force and plugin_ and (cardinality-exact or paths-dag)"
    command = [sys.executable, "-m", "pytest", __file__, "-p", "conformance_plugin", "-p", "no:cacheprovider"]
    command += ["-n", "0"] if "xdist" in sys.modules else []
    done = subprocess.run(
        [*command, "-k", select, "-rA"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    out, test = done.stdout, Path(__file__).resolve().relative_to(root).as_posix()
    for family in ("cardinality-exact", "paths-dag"):
        assert f"PASSED {test}::test_linear_queries_match_brute_force[plugin_enum-{family}]" in out, out
        assert f"FAILED {test}::test_linear_queries_match_brute_force[plugin_worst-{family}]" in out, out
    assert "SKIPPED [2]" in out and "backend 'plugin_missing' needs no_such_solver_module, not installed" in out, out
    assert "2 failed, 2 passed, 2 skipped" in out and done.returncode == 1, out
