"""``auto`` plans within a bound and picks the backend its costs rank first.

Found: ``auto`` counted actions by enumerating a constrained space. On the s-t paths of a 6x6 grid
with at most 20 edges its first query took 16 s where ``highs`` took 0.05 s, and on the 10x10 grid
with at most 60 edges it ran for minutes in ``AutoOracle._rank -> enumerate_cost -> count ->
space.enumerate()``. Now counting enumerates the base family under a visit cap paid for by a share
of the cheapest sure candidate's estimate, and only when a closed-form bound (or a search that
stops at its cap) keeps the work within it.

Each family of ``bench/graphs_large.py``, with and without side rows: at the bench's sizes ``auto``
plans for the backend the bench measured fastest (planning only); at small sizes each query goes to
its first planned backend and its answer is optimal. How ``auto``'s time compares with the fastest
backend's is measured by ``bench/auto_graphs.py`` (figures: ``docs/performance.md``).
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.auto_facts import QueryShape
from cmab_milp.oracles.core.registry import capabilities

EXACT = [b for b in ("highs", "scip", "ortools", "enumerate", "combinatorial") if b in cm.available_backends()]


def grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def hop_limited(n: int, hops: int, directed: bool = False) -> cm.ActionSpace:
    g = grid(n).to_directed() if directed else grid(n)
    space = cm.STPaths(g, 0, n * n - 1)
    return space.with_constraint(np.ones(space.d), "<=", hops)


def test_planning_a_hop_limited_path_space_is_bounded() -> None:
    """10x10 grid, at most 60 edges: planning counted by enumeration and did not end; now it does not enumerate."""
    auto = cm.make_oracle(hop_limited(10, 60), "auto")
    start = time.perf_counter()
    for positive in (False, True):
        auto.plan(QueryShape("linear", positive=positive))
    took = time.perf_counter() - start
    # the counting search stops after 0.25 x the cheapest estimate (SCIP, 3.6 s) of a longest-path query
    # here, at 5 us a partial path: ~0.9 s (a loaded machine runs it 2-3x slower); before, minutes
    assert took < 10.0, took
    assert auto.facts.actions is None  # nothing enumerated: the space has far more paths
    assert auto.facts._visits_over > 0  # the search gave up at its cap


def test_first_queries_on_a_hop_limited_grid_are_not_planning_bound() -> None:
    """6x6 grid, at most 20 edges: auto's first query took 16 s, highs's 0.05 s.

    Planning is now paid for by the first ``plan_queries`` queries (issue 39: counting a small space with
    rules pays over a learning run), so a first query may cost a counting search more than highs's; over
    ten queries auto stays within 2x of highs.
    """
    space = hop_limited(6, 20)
    rng = np.random.default_rng(0)
    queries = [rng.uniform(0.1, 1.0, space.d) for _ in range(10)]
    took: dict[str, tuple[float, list[float]]] = {}
    for _ in range(2):  # the best of two fresh oracles each, interleaved: one timer reading is noise here
        for backend in ("highs", "auto"):
            start = time.perf_counter()
            oracle = cm.make_oracle(space, backend)
            values = [float(w @ oracle.argmax(w)) for w in queries]
            seconds = time.perf_counter() - start
            took[backend] = (min(seconds, took.get(backend, (np.inf, []))[0]), values)
    assert took["auto"][1] == pytest.approx(took["highs"][1], abs=1e-9)
    assert took["auto"][0] <= 2.0 * took["highs"][0] + 0.05, took


def test_plan_share_bounds_what_planning_may_enumerate() -> None:
    """With plan_share 0 nothing is enumerated to count; with the default a 12-path grid is."""
    space = cm.STPaths(grid(3), 0, 8)
    assert cm.make_oracle(space, "auto", plan_share=0.0).plan(QueryShape("linear"))[0] != "enumerate"
    assert cm.make_oracle(space, "auto").plan(QueryShape("linear"))[0] == "enumerate"
    with pytest.raises(ValueError, match="plan_share"):
        cm.make_oracle(space, "auto", plan_share=-1.0)


def test_auto_hands_its_time_limit_on() -> None:
    auto = cm.make_oracle(cm.STPaths(grid(3), 0, 8), "auto", time_limit=7.0, plan_share=0.0)
    auto.argmax(np.ones(auto.d))
    assert auto.oracles and all(getattr(o, "time_limit", 7.0) == 7.0 for o in auto.oracles.values())


def _bench():
    """``bench/auto_graphs.py``, loaded by path: the test checks the very families the bench measures."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "auto_graphs.py"
    spec = importlib.util.spec_from_file_location("auto_graphs_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _families(big: bool) -> dict:
    """name -> (space builder, query maker(space, rng)); the bench's families, small unless ``big``."""
    return _bench().families(big)


def _first_answering(auto, shape: QueryShape, space: cm.ActionSpace) -> str:
    """The first backend of ``auto``'s plan that answers every query of ``shape`` here (no declining one)."""
    return next(b for b in auto.plan(shape) if not capabilities(b).declines_some(space))


#: What ``auto`` picks at the bench's sizes, the backends ``bench/auto_graphs.py`` and ``bench/graphs_large.py``
#: measured fastest there (docs/performance.md, "Oracle core and backends"); None: the first installed of a list.
BENCH_PICKS = {
    "spanning trees + forbid_pairs": ["highs"],
    "forests + forbid_pairs": ["highs"],
    "spanning trees + knapsack": ["highs"],
    "longest paths": ["highs"],
    "longest paths + hop limit": ["scip", "highs"],
    "longest paths, digraph": ["ortools", "highs"],
    # 5,356 hop-limited paths, counted in 96,574 visits (0.4 s) within the plan's bound since count_visits=64:
    # enumeration answers in 0.4 ms against CP-SAT's 26 ms a query
    "longest paths, digraph + hop limit": ["enumerate"],
    "shortest paths + forbid_pairs": ["highs"],
    "shortest paths + forbid_pairs + knapsack": ["highs"],
    "shortest paths, digraph + forbid_pairs + knapsack": ["highs"],
    "news (cardinality + group + conflicts)": ["highs"],
    **{name: ["enumerate"] for name in _bench().small_constrained()},
}


@pytest.mark.parametrize("name", list(_families(True)))
def test_auto_picks_the_backend_measured_fastest_at_bench_size(name: str) -> None:
    """Planning only (no query is answered): the cost models rank first what the bench measured fastest."""
    make_space, make_query = _families(True)[name]
    space = make_space()
    auto = cm.make_oracle(space, "auto")
    shape = QueryShape.of(auto.linear_query(**make_query(space, np.random.default_rng(0))), auto._signed)
    expected = next(b for b in BENCH_PICKS[name] if b in cm.available_backends())
    assert _first_answering(auto, shape, space) == expected, auto.estimates(shape)


@pytest.mark.parametrize("name", list(_families(False)))
def test_auto_routes_each_query_to_its_first_planned_backend_and_answers_exactly(name: str) -> None:
    """Small sizes: every query goes to the cheapest estimate that answers it, and its value is the optimum."""
    make_space, make_query = _families(False)[name]
    space = make_space()
    auto = cm.make_oracle(space, "auto")
    truth = cm.make_oracle(space, "enumerate")
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = make_query(space, rng)
        shape = QueryShape.of(auto.linear_query(**q), auto._signed)
        before = dict(auto.routes)
        answer, best = auto.argmax(**q), truth.argmax(**q)
        used = [b for b in auto.routes if auto.routes[b] != before.get(b, 0)]
        declined = [b for b in auto.plan(shape)[: auto.plan(shape).index(used[0])]]
        assert all(capabilities(b).declines_some(space) for b in declined), (used, auto.plan(shape))
        assert (answer is None) == (best is None)
        if best is not None:
            assert space.contains(answer)
            assert float(q["weights"] @ answer) == pytest.approx(float(q["weights"] @ best), abs=1e-9)


def _ads() -> cm.ActionSpace:
    return _bench().ads()


def test_auto_counts_a_small_constrained_space_exactly_and_enumerates_it() -> None:
    """Issue 39: the ads space (7,669 matchings of K(12, 4) under a conflict row and a budget) went to HiGHS
    (its size estimated at 213,053); the routing space (13 paths) too. Both are now counted and enumerated."""
    for build, actions in ((_ads, 7_669), (_bench().routing, 13)):
        space = build()
        auto = cm.make_oracle(space, "auto")
        w = np.random.default_rng(0).uniform(0.1, 1.0, space.d)
        answer = auto.argmax(w)
        assert dict(auto.routes) == {"enumerate": 1}, auto.explain()
        assert len(auto.facts.actions) == actions == len(build().enumerate(10**6))
        assert float(w @ answer) == pytest.approx(float(w @ cm.make_oracle(build(), "highs").argmax(w)), abs=1e-9)
        assert f"actions: {actions:,}, counted" in auto.explain()


def test_auto_explains_why_it_routes_where_it_does() -> None:
    auto = cm.make_oracle(_ads(), "auto")
    assert "nothing planned yet" in auto.explain()
    auto.argmax(np.ones(auto.d), exclude=[0])
    lines = auto.explain().splitlines()
    assert lines[0].startswith("actions: 7,669")
    assert lines[1].startswith("linear queries with exclude: enumerate") and "< highs" in lines[1]


def test_plan_queries_is_a_checked_option_that_bounds_counting() -> None:
    """With planning paid for by one query only, the ads space is too costly to count: HiGHS answers."""
    auto = cm.make_oracle(_ads(), "auto", plan_queries=1)
    auto.argmax(np.ones(auto.d))
    assert dict(auto.routes) == {"highs": 1} and auto.facts.actions is None
    assert "counting search stopped" in auto.explain()
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="plan_queries"):
            cm.make_oracle(_ads(), "auto", plan_queries=bad)


@pytest.mark.slow
def test_cucb_with_auto_on_small_constrained_spaces_is_within_1_3x_of_the_fastest_exact_backend() -> None:
    """The issue's measurement: CUCB, 400 steps, build and first query included, best of two, interleaved."""
    bench = _bench()
    for build in (bench.ads, bench.routing):
        env = cm.UniformNoise(np.random.default_rng(0).uniform(0.1, 0.9, build().d))
        best: dict[str, float] = {}
        for _ in range(2):
            for backend in ("auto", "enumerate", "highs"):
                start = time.perf_counter()
                cm.simulate(cm.CUCB(build(), 400, oracle=backend), env, 400, seed=0)
                best[backend] = min(best.get(backend, np.inf), time.perf_counter() - start)
        assert best["auto"] <= 1.3 * min(best["enumerate"], best["highs"]), best
