"""Problem files: every file in problems/ validates; bad files are refused with file, key and problem;
the schema builds the spaces and environments it describes."""

from __future__ import annotations

from math import comb
from pathlib import Path

import numpy as np
import pytest

import cmab_milp
from cmab_milp.cli import main
from cmab_milp.experiments import ProblemError, load_problem

PROBLEMS = sorted((Path(__file__).resolve().parents[3] / "problems").glob("*.toml"))

SPACE = """
[space]
kind = "Cardinality"
d = 4
m = 2
"""
ENVIRONMENT = """
[environment]
kind = "BernoulliArms"
means = [0.1, 0.2, 0.3, 0.4]
"""
POLICIES = """
[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"
"""
RUN = """
[run]
horizon = 20
seeds = 2
"""


def problem_text(space: str = SPACE, environment: str = ENVIRONMENT, policies: str = POLICIES, run: str = RUN) -> str:
    return space + environment + policies + run


def write(tmp_path: Path, text: str, name: str = "problem.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", PROBLEMS, ids=[p.name for p in PROBLEMS])
def test_every_shipped_problem_validates(path: Path) -> None:
    if "topohub =" in path.read_text(encoding="utf-8"):
        pytest.importorskip("topohub")  # a topology named from the optional extra "routing"
    problem = load_problem(path)
    assert problem.policies and problem.horizon >= 1 and problem.seeds
    space = problem.build_space()
    env = problem.build_environment(space)
    assert space.d >= 1 and env is not None


def test_shipped_folder_is_not_empty() -> None:
    assert any(p.name == "paper_linear.toml" for p in PROBLEMS)


def test_paper_linear_matches_the_paper_setting() -> None:
    problem = load_problem(PROBLEMS[[p.name for p in PROBLEMS].index("paper_linear.toml")])
    space = problem.build_space()
    assert (space.d, space.m) == (20, 3)
    assert problem.horizon == 100_000 and len(problem.seeds) == 10
    assert problem.environment["means"] == {"draw": "uniform", "low": 0.0, "high": 1.0, "seed": 7}  # the recipe
    assert problem.build_environment(space).means.tolist() == np.random.default_rng(7).uniform(0, 1, 20).tolist()
    assert {p.kind for p in problem.policies} == {"CUCB", "AROQ", "SROQ"}
    assert {p.oracle for p in problem.policies} == {"highs"}


# ------------------------------------------------------------- refusals
INVALID = [
    # (file content, key in the message, problem in the message)
    ("title = 1\n" + problem_text(), ": title:", "expected a string"),
    ("[spaces]\nkind = 'x'\n" + problem_text(), ": spaces:", "unknown key"),
    (problem_text(space=SPACE.replace("m = 2", "m = 30")), ": space.m:", "m must be <= d"),
    (problem_text(space=SPACE.replace("m = 2", "m = 2\nmm = 3")), ": space.mm:", "unknown key"),
    (problem_text(space=SPACE.replace("d = 4", 'd = "4"')), ": space.d:", "expected an integer"),
    (problem_text(space=SPACE.replace("Cardinality", "Cardinal")), ": space.kind:", "unknown space kind"),
    (problem_text(space=SPACE.replace("m = 2\n", "")), ": space.m:", "missing required key"),
    (
        problem_text(space=SPACE + "[[space.constraints]]\ncoeffs = [1, 1]\nsense = '<='\nrhs = 1\n"),
        ": space.constraints[0].coeffs:",
        "one number per arm",
    ),
    (
        problem_text(space=SPACE + "[[space.constraints]]\narms = [0, 9]\nsense = '<='\nrhs = 1\n"),
        ": space.constraints[0].arms[1]:",
        "out of range",
    ),
    (
        problem_text(space=SPACE + "[[space.constraints]]\narms = [0]\nsense = '<'\nrhs = 1\n"),
        ": space.constraints[0].sense:",
        "unknown value",
    ),
    (
        problem_text(
            space="[space]\nkind = 'STPaths'\nsource = 0\ntarget = 99\n[space.graph]\nedges = [[0, 1], [1, 2]]\n"
        ),
        ": space.target:",
        "99",
    ),
    (
        problem_text(space="[space]\nkind = 'SpanningTrees'\n[space.graph]\ngenerator = 'no_such_graph'\n"),
        ": space.graph.generator:",
        "unknown networkx generator",
    ),
    (
        problem_text(
            space="[space]\nkind = 'SpanningTrees'\n[space.graph]\ngenerator = 'cycle_graph'\nedges = [[0, 1]]\n"
        ),
        ": space.graph:",
        "exactly one of",
    ),
    (
        problem_text(
            space="[space]\nkind = 'Intersection'\n[[space.parts]]\nkind = 'Cardinality'\nd = 4\nm = 2\n"
            "[[space.parts]]\nkind = 'Cardinality'\nd = 5\nm = 2\n"
        ),
        ": space:",
        "same d",
    ),
    (problem_text(environment=ENVIRONMENT.replace("Bernoulli", "Bernouli")), ": environment.kind:", "unknown"),
    (problem_text(environment=ENVIRONMENT + "width = 0.5\n"), ": environment.width:", "unknown parameter"),
    (
        problem_text(environment=ENVIRONMENT.replace("0.4]", "0.4, 0.5]")),
        ": environment.means:",
        "one mean per arm",
    ),
    (
        problem_text(environment=ENVIRONMENT.replace("0.4]", "1.4]")),
        ": environment.means:",
        "must lie in [0, 1]",
    ),
    (
        problem_text(environment="[environment]\nkind = 'BernoulliArms'\nmeans = { draw = 'gauss', seed = 1 }\n"),
        ": environment.means.draw:",
        "unknown draw 'gauss'",
    ),
    (
        problem_text(environment="[environment]\nkind = 'BernoulliArms'\nmeans = { draw = 'uniform' }\n"),
        ": environment.means.seed:",
        "missing required key",
    ),
    (
        problem_text(environment="[environment]\nkind = 'UniformNoise'\nmeans = [0.1, 0.2, 0.3, 0.4]\nwidth = -1\n"),
        ": environment.width:",
        "width must be",
    ),
    (problem_text(policies=POLICIES.replace('kind = "CUCB"', 'kind = "CUCBX"')), ": policies[0].kind:", "unknown"),
    (problem_text(policies=POLICIES.replace("enumerate", "cplex")), ": policies[0].oracle:", "unknown oracle"),
    (problem_text(policies=POLICIES.replace("enumerate", "highs:X")), ": policies[0].oracle:", "no ':SOLVER'"),
    (problem_text(policies=POLICIES + "constants = { C = -1 }\n"), ": policies[0].constants.C:", "C must be"),
    # the constructor's ParameterError names the key, even beside other constants (CTS's prior, ESCB's route)
    (
        problem_text(policies=POLICIES.replace('"CUCB"', '"CTS"') + "constants = { prior = 'uniform', sigma = 2.0 }\n"),
        ": policies[0].constants.prior:",
        "prior must be one of 'beta', 'gaussian', got 'uniform'",
    ),
    (
        problem_text(policies=POLICIES.replace('"CUCB"', '"ESCB"') + "constants = { C = 2.0, route = 'fast' }\n"),
        ": policies[0].constants.route:",
        "route must be one of",
    ),
    (
        problem_text(policies=POLICIES.replace('"CUCB"', '"ESCB"') + "constants = { max_nodes = -1, route = 'x' }\n"),
        ": policies[0].constants.route:",  # two refused: the first check's key (trying each alone found neither)
        "route must be one of",
    ),
    (problem_text(policies=POLICIES + "constants = { Q = 1 }\n"), ": policies[0].constants:", "unexpected keyword"),
    (problem_text(policies=POLICIES + "colour = 'red'\n"), ": policies[0].colour:", "unknown key"),
    (problem_text(policies=POLICIES + POLICIES), ": policies[1].name:", "duplicate policy name"),
    (problem_text(policies=POLICIES.replace('name = "CUCB"', 'name = "a/b"')), ": policies[0].name:", "letters"),
    (problem_text(policies=""), ": policies:", "missing required key"),
    (problem_text(run=RUN.replace("horizon = 20", "horizon = 0")), ": run.horizon:", "must be >= 1"),
    (problem_text(run=RUN.replace("horizon = 20", "horizon = 2.5")), ": run.horizon:", "expected an integer"),
    (problem_text(run=RUN.replace("seeds = 2", "seeds = [1, 1]")), ": run.seeds:", "distinct"),
    (problem_text(run=RUN.replace("seeds = 2", "seeds = 'two'")), ": run.seeds:", "expected a count"),
    (problem_text(run=RUN + "panels = ['regret', 'fun']\n"), ": run.panels[1]:", "unknown panel"),
    (problem_text(run=RUN + "horizn = 3\n"), ": run.horizn:", "unknown key"),
    (problem_text() + "[run\n", "problem.toml:", "not valid TOML"),
    (problem_text(policies=POLICIES + "constants = { C = 2024-01-01 }\n"), ": policies[0].constants:", "no dates"),
    # keys that were misattributed: an infeasible side constraint (was policies[0]), a string in means
    # (was environment), an Intersection without common action
    (
        problem_text(space=SPACE + "exact = true\n[[space.constraints]]\narms = [0, 1, 2, 3]\nsense = '<='\nrhs = 1\n"),
        ": space.constraints[0]:",
        "no action of the space satisfies this constraint",
    ),
    (
        problem_text(
            space=SPACE
            + "[[space.constraints]]\narms = [0]\nsense = '<='\nrhs = 5\n"
            + "[[space.constraints]]\narms = [0, 1, 2, 3]\nsense = '>='\nrhs = 3\n"
        ),
        ": space.constraints[1]:",
        "no action of the space satisfies",
    ),
    (problem_text(environment=ENVIRONMENT.replace("0.2,", '"0.2",')), ": environment.means[1]:", "expected a number"),
    (
        problem_text(environment=ENVIRONMENT.replace("0.2,", "[0.2],")),
        ": environment.means[1]:",
        "expected a number",
    ),
    (
        problem_text(
            space="[space]\nkind = 'Intersection'\n[[space.parts]]\nkind = 'Cardinality'\nd = 4\nm = 1\nexact = true\n"
            "[[space.parts]]\nkind = 'Cardinality'\nd = 4\nm = 2\nexact = true\n"
        ),
        ": space:",
        "no action in common",
    ),
    (problem_text(run=RUN + "panels = [[1]]\n"), ": run.panels[0]:", "unknown panel"),
    (
        problem_text(space=SPACE + "[[space.constraints]]\narms = [0]\nsense = '<='\nrhs = nan\n"),
        ": space.constraints[0].rhs:",
        "finite",
    ),
]


@pytest.mark.parametrize(("content", "key", "message"), INVALID)
def test_invalid_problem_is_refused_with_file_key_and_problem(
    tmp_path: Path, content: str, key: str, message: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ProblemError) as info:
        load_problem(path)
    text = str(info.value)
    assert text.startswith(str(path)), text
    assert key in text, text
    assert message in text, text


def test_cli_refuses_before_any_simulation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("simulate must not run for a refused problem")

    monkeypatch.setattr(cmab_milp, "simulate", boom, raising=False)
    path = write(tmp_path, problem_text(space=SPACE.replace("m = 2", "m = 30")))
    out = tmp_path / "out"
    code = main(["run", str(path), "--out", str(out), "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{path}: space.m: m must be <= d" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="cannot read"):
        load_problem(tmp_path / "absent.toml")


# --------------------------------------------------- what the schema builds
def build(tmp_path: Path, space: str, environment: str | None = None):
    if environment is None:
        environment = "[environment]\nkind = 'BernoulliArms'\nmeans = { draw = 'uniform', seed = 3 }\n"
    problem = load_problem(write(tmp_path, problem_text(space=space, environment=environment)))
    return problem, problem.build_space()


def test_directed_grid_paths_count_the_monotone_lattice_paths(tmp_path: Path) -> None:
    # On a 3x3 grid oriented towards larger coordinates, s-t paths are the C(4, 2) = 6 lattice paths.
    _, space = build(
        tmp_path,
        "[space]\nkind = 'STPaths'\nsource = [0, 0]\ntarget = 8\n"
        "[space.graph]\ngenerator = 'grid_2d_graph'\nargs = [3, 3]\ndirected = true\nrelabel = true\n",
    )
    assert space.d == 12 and len(space.enumerate()) == comb(4, 2)
    assert all(isinstance(u, int) for edge in space.arms for u in edge)


def test_generated_graphs_keep_their_node_labels_by_default(tmp_path: Path) -> None:
    # node labels as given (grid cells stay (i, j)), and arms resolve by their edge
    _, space = build(
        tmp_path,
        "[space]\nkind = 'STPaths'\nsource = [0, 0]\ntarget = [2, 2]\n"
        "[space.graph]\ngenerator = 'grid_2d_graph'\nargs = [3, 3]\ndirected = true\n",
    )
    assert len(space.enumerate()) == comb(4, 2)
    assert all(isinstance(u, tuple) and len(u) == 2 for edge in space.arms for u in edge)
    assert space.arm_index(((0, 0), (0, 1))) == space.arms.index(((0, 0), (0, 1)))


def test_spanning_trees_of_k4_follow_cayley(tmp_path: Path) -> None:
    _, space = build(
        tmp_path, "[space]\nkind = 'SpanningTrees'\n[space.graph]\ngenerator = 'complete_graph'\nargs = [4]\n"
    )
    assert len(space.enumerate()) == 4 ** (4 - 2)


def test_perfect_matchings_of_k4(tmp_path: Path) -> None:
    _, space = build(
        tmp_path,
        "[space]\nkind = 'Matchings'\nperfect = true\n[space.graph]\ngenerator = 'complete_graph'\nargs = [4]\n",
    )
    assert len(space.enumerate()) == 3


def test_explicit_edges_keep_their_labels(tmp_path: Path) -> None:
    _, space = build(
        tmp_path,
        "[space]\nkind = 'GraphicMatroid'\n[space.graph]\nedges = [['a', 'b'], ['b', 'c'], ['c', 'a']]\n",
        "[environment]\nkind = 'BernoulliArms'\nmeans = [0.1, 0.2, 0.3]\n",
    )
    # arms are numbered as networkx lists the edges (contract: list(graph.edges())), labels as written
    assert {frozenset(e) for e in space.arms} == {frozenset("ab"), frozenset("bc"), frozenset("ca")}
    assert len(space.enumerate()) == 7  # every edge subset but the triangle


def test_side_constraint_by_arms_removes_exactly_the_forbidden_pair(tmp_path: Path) -> None:
    _, space = build(tmp_path, SPACE + "[[space.constraints]]\narms = [0, 1]\nsense = '<='\nrhs = 1\n")
    actions = space.enumerate()
    assert len(actions) == sum(comb(4, k) for k in range(3)) - 1
    assert not any(a[0] and a[1] for a in actions)


def test_intersection_of_parts(tmp_path: Path) -> None:
    _, space = build(
        tmp_path,
        "[space]\nkind = 'Intersection'\n[[space.parts]]\nkind = 'Cardinality'\nd = 4\nm = 2\n"
        "[[space.parts]]\nkind = 'PartitionMatroid'\nblocks = [[0, 1], [2, 3]]\ncapacities = [1, 1]\n",
    )
    assert len(space.enumerate()) == 9  # (1 + 2) * (1 + 2) choices per block, all within m = 2


def test_explicit_actions(tmp_path: Path) -> None:
    _, space = build(tmp_path, "[space]\nkind = 'ExplicitActions'\nactions = [[1, 0, 0, 1], [0, 1, 1, 0]]\n")
    assert space.enumerate().astype(int).tolist() == [[1, 0, 0, 1], [0, 1, 1, 0]]


def test_drawn_means_come_from_the_stated_seed_and_range(tmp_path: Path) -> None:
    env = "[environment]\nkind = 'BernoulliArms'\nmeans = { draw = 'uniform', low = 0.2, high = 0.6, seed = 11 }\n"
    problem, _ = build(tmp_path, SPACE, env)
    expected = np.random.default_rng(11).uniform(0.2, 0.6, 4)
    assert np.array_equal(problem.build_environment().means, expected)
    again, _ = build(tmp_path, SPACE, env)
    assert again.digest() == problem.digest()


def test_overrides_replace_the_run_table(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, problem_text()), steps=7, seeds=3)
    assert problem.horizon == 7 and problem.seeds == [0, 1, 2]


def test_environment_kinds_are_found_beside_the_exported_ones(tmp_path: Path) -> None:
    env = "[environment]\nkind = 'PaperGaussianNoise'\nmeans = [0.1, 0.2, 0.3, 0.4]\ncov_seed = 2\n"
    problem, space = build(tmp_path, SPACE, env)
    cov = problem.build_environment(space).cov
    assert cov.shape == (4, 4) and np.allclose(cov, cov.T)


def test_bipartite_generators_build_matching_spaces() -> None:
    from cmab_milp.experiments.problem.problem_file import parse_problem

    problem = parse_problem(
        {
            "space": {"kind": "Matchings", "graph": {"generator": "complete_bipartite_graph", "args": [3, 4]}},
            "environment": {"kind": "BernoulliArms", "means": {"draw": "uniform", "seed": 1}},
            "policies": [{"name": "CUCB", "kind": "CUCB", "oracle": "auto"}],
            "run": {"horizon": 10, "seeds": 1},
        },
        "bipartite.toml",
    )
    space = problem.build_space()
    assert space.d == 12 and space.m == 3 and space.bipartite


# ------------------------------------------------------------------- draws
@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        (
            {"draw": "integers", "low": 2, "high": 5, "seed": 4},
            np.random.default_rng(4).integers(2, 5, 4, endpoint=True),
        ),
        ({"draw": "normal", "mean": 1.0, "std": 0.5, "seed": 4}, np.random.default_rng(4).normal(1.0, 0.5, 4)),
        ({"draw": "choice", "values": [1, 3], "seed": 4}, np.random.default_rng(4).choice([1.0, 3.0], 4)),
        (
            {"draw": "choice", "values": [1, 3, 5, 7], "replace": False, "seed": 4},
            np.random.default_rng(4).choice([1.0, 3.0, 5.0, 7.0], 4, replace=False),
        ),
        ({"draw": "dirichlet", "alpha": [1, 2, 3], "seed": 4}, np.random.default_rng(4).dirichlet([1, 2, 3], 4)),
    ],
)
def test_draws_come_from_numpy_with_the_stated_seed(recipe: dict, expected: np.ndarray) -> None:
    from cmab_milp.experiments.problem.builders import resolve_parameter

    drawn = np.asarray(resolve_parameter(recipe, "environment.x", "x.toml", 4))
    assert drawn.shape == expected.shape and np.array_equal(drawn, expected)


def test_a_dirichlet_draw_is_a_probability_table_per_arm(tmp_path: Path) -> None:
    env = (
        "[environment]\nkind = 'DiscreteArms'\nvalues = [0.0, 0.5, 1.0]\n"
        "probs = { draw = 'dirichlet', alpha = [1, 1, 1], seed = 9 }\n"
    )
    problem, space = build(tmp_path, SPACE, env)
    probs = problem.build_environment(space).pmf  # values are sorted already: columns in the given order
    assert probs.shape == (4, 3) and np.allclose(probs.sum(axis=1), 1.0)
    assert np.allclose(probs, np.random.default_rng(9).dirichlet([1, 1, 1], 4))


@pytest.mark.parametrize(
    ("recipe", "key", "message"),
    [
        ("{ draw = 'integers', low = 3, high = 2, seed = 1 }", "means.high", "low <= high"),
        ("{ draw = 'normal', std = 0, seed = 1 }", "means.std", "must be > 0"),
        ("{ draw = 'normal', mean = inf, seed = 1 }", "means.mean", "finite"),
        ("{ draw = 'dirichlet', alpha = [1, -1], seed = 1 }", "means.alpha[1]", "must be > 0"),
        ("{ draw = 'dirichlet', alpha = [1], seed = 1 }", "means.alpha", "between 2"),
        ("{ draw = 'choice', values = [], seed = 1 }", "means.values", "at least one"),
        ("{ draw = 'choice', values = [1, 2], p = [0.5, 0.6], seed = 1 }", "means.p", "summing to 1"),
        ("{ draw = 'choice', values = [1, 2], replace = false, seed = 1 }", "means.size", "without replacement"),
    ],
)
def test_bad_draws_are_refused(recipe: str, key: str, message: str, tmp_path: Path) -> None:
    env = f"[environment]\nkind = 'BernoulliArms'\nmeans = {recipe}\n"
    with pytest.raises(ProblemError) as info:
        load_problem(write(tmp_path, problem_text(environment=env)))
    assert f"environment.{key}:" in str(info.value) and message in str(info.value), str(info.value)


def test_every_error_of_a_file_is_reported_at_once(tmp_path: Path, capsys) -> None:
    from cmab_milp.cli import main
    from cmab_milp.experiments import ProblemErrors

    text = problem_text(
        space=SPACE.replace("m = 2", "m = 9"),
        policies=POLICIES + '[[policies]]\nname = "B"\nkind = "CUCB"\noracle = "nope"\n',
        run=RUN.replace("horizon = 20", "horizon = -1") + "colour = 1\n",
    )
    text = "surprise = 1\n" + text
    path = write(tmp_path, text)
    with pytest.raises(ProblemErrors) as info:
        load_problem(path)
    keys = [e.key for e in info.value.errors]
    assert keys == ["surprise", "run.horizon", "policies[1].oracle", "space.m"], keys
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all(line.startswith(f"cmab-milp: error: {path}: ") for line in lines)
