"""Problem files written to hang, recurse or spoof: refused at once, at the key, printably."""

from __future__ import annotations

import inspect
import itertools
import time
from pathlib import Path

import networkx as nx
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import ProblemError, load_problem
from cmab_milp.experiments.problem.file_limits import MAX_DEPTH, check_nesting
from cmab_milp.experiments.problem.graphs import GENERATORS, MAX_TRIES

SPACE = '[space]\nkind = "Cardinality"\nd = 4\nm = 2\n'
ENVIRONMENT = '[environment]\nkind = "BernoulliArms"\nmeans = [0.1, 0.2, 0.3, 0.4]\n'
POLICY = '[[policies]]\nname = "CUCB"\nkind = "CUCB"\noracle = "enumerate"\n'
RUN = "[run]\nhorizon = 20\nseeds = 1\n"


def write(tmp_path: Path, *, space: str = SPACE, policies: str = POLICY, run: str = RUN) -> Path:
    path = tmp_path / "p.toml"
    path.write_text("\n".join([space, ENVIRONMENT, policies, run]))
    return path


def graph_space(generator: str, args: str) -> str:
    return f'[space]\nkind = "GraphicMatroid"\n[space.graph]\ngenerator = "{generator}"\nargs = {args}\n'


def refused(path: Path, key: str, fragment: str, seconds: float = 5.0) -> None:
    start = time.perf_counter()
    with pytest.raises(ProblemError) as info:
        load_problem(path)
    assert time.perf_counter() - start < seconds
    errors = getattr(info.value, "errors", [info.value])
    assert any(e.key.startswith(key) and fragment in e.message for e in errors), str(info.value)


# ------------------------------------------------------------ generators
@pytest.mark.parametrize(
    ("generator", "args", "key", "fragment"),
    [
        ("balanced_tree", "[1, 1000000000000000]", "space.graph.args", "graph_nodes"),
        ("balanced_tree", "[2, 1000000000000000]", "space.graph.args", "graph_nodes"),
        ("balanced_tree", "[1000000000000000, 1000000000000000]", "space.graph.args", "graph_nodes"),
        ("connected_watts_strogatz_graph", "[10, 0, 0.5, 1000000000000000000, 1]", "space.graph.args[3]", "at most"),
        ("connected_watts_strogatz_graph", "[10, 0, 0.5, 5, 1]", "space.graph.args", "k >= 2"),
        ("connected_watts_strogatz_graph", "[10, 1, 0.5]", "space.graph.args", "k >= 2"),
        ("fast_gnp_random_graph", f"[{10**400}, 0.5]", "space.graph.args", "graph_nodes"),
        ("grid_graph", f"[[{', '.join(['1000000000000000000'] * 2000)}]]", "space.graph.args", "graph_nodes"),
    ],
)
def test_generators_that_would_hang_are_refused_at_once(tmp_path, generator, args, key, fragment) -> None:
    refused(write(tmp_path, space=graph_space(generator, args)), key, fragment)


def _small_values(spec) -> list[dict]:
    """Argument sets of ``spec`` small enough to build: every combination of a few values per parameter."""
    choices = {"int": [0, 1, 2, 3, 5], "ints": [[2, 3], [1, 4, 2]], "prob": [0.0, 0.3, 1.0], "bool": [False]}
    choices |= {"seed": [1], "tries": [20]}
    names = [p for p, _ in spec.params]
    if spec.variadic:
        return [{names[0]: sizes} for sizes in ([2, 3], [1, 1, 4], [])]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(choices[k] for _, k in spec.params))]


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_every_generator_bound_is_closed_form_and_holds(name) -> None:
    """The bound answers at once for astronomically large arguments, and bounds every small graph actually built."""
    spec = GENERATORS[name]
    huge = {"int": 10**18, "ints": [10**18] * 50, "prob": 1.0, "bool": True, "seed": 10**18, "tries": MAX_TRIES}
    names = [p for p, _ in spec.params]
    values = {names[0]: [10**18] * 50} if spec.variadic else {p: huge[k] for p, k in spec.params}
    start = time.perf_counter()
    nodes, edges = spec.size(values)
    assert time.perf_counter() - start < 0.1
    assert nodes >= 0 and edges >= 0
    for values in _small_values(spec):
        if spec.refuse is not None and spec.refuse(values) is not None:
            continue
        try:
            graph = spec.function(*values[names[0]]) if spec.variadic else spec.function(**values)
        except (nx.NetworkXException, ValueError):
            continue  # arguments networkx itself refuses at once
        nodes, edges = spec.size(values)
        assert graph.number_of_nodes() <= nodes and graph.number_of_edges() <= edges, (name, values)


def test_retrying_generators_declare_their_retries() -> None:
    """A generator with a ``tries`` argument declares it as kind ``tries`` (bounded by MAX_TRIES)."""
    for name, spec in GENERATORS.items():
        params = inspect.signature(spec.function).parameters
        if "tries" in params:
            assert ("tries", "tries") in spec.params, name


# ------------------------------------------------------------ nesting
def test_deeply_nested_constants_are_refused_at_the_key(tmp_path) -> None:
    deep = "{ a = " * 100_000 + "1" + " }" * 100_000
    path = write(tmp_path, policies=POLICY + f"constants = {{ C = {deep} }}\n")
    refused(path, "policies[0].constants.C", f"more than {MAX_DEPTH} deep")


def test_deeply_nested_labels_are_refused_at_the_key(tmp_path) -> None:
    path = write(tmp_path, space=SPACE + "labels = " + "[" * 900 + "1" + "]" * 900 + "\n")
    refused(path, "space.labels[0]", f"more than {MAX_DEPTH} deep")


def test_nesting_by_dotted_keys_is_refused_after_parsing(tmp_path) -> None:
    dotted = ".".join(["a"] * 1000)
    path = write(tmp_path, policies=POLICY + f"constants.{dotted} = 1\n")
    refused(path, "policies[0].constants.a.a", f"more than {MAX_DEPTH} deep", seconds=30)


def test_the_nesting_scan_ignores_brackets_in_strings_and_comments() -> None:
    text = "a = \"[[[[[[\" # [[[[[[\nb = '''{{{{{{'''\n[c]\nd = [[1], [2]]\n"
    check_nesting(text, "x.toml", max_depth=2)
    with pytest.raises(ProblemError, match=r"x.toml: c.d\[1\]"):
        check_nesting(text.replace("[2]", "[[2]]"), "x.toml", max_depth=2)


def test_the_cli_names_the_key_not_a_recursion_error(tmp_path, capsys) -> None:
    path = write(tmp_path, space=SPACE + "labels = " + "[" * 900 + "1" + "]" * 900 + "\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "RecursionError" not in err and "space.labels[0]" in err


# ------------------------------------------------------------ counts
def test_twenty_thousand_policies_are_refused_before_any_is_read(tmp_path) -> None:
    many = "".join(f'[[policies]]\nname = "P{k}"\nkind = "CUCB"\noracle = "enumerate"\n' for k in range(20_000))
    refused(write(tmp_path, policies=many), "policies", "limit policies = 100", seconds=10)


def test_jobs_count_policies_times_seeds(tmp_path) -> None:
    several = "".join(f'[[policies]]\nname = "P{k}"\nkind = "CUCB"\noracle = "enumerate"\n' for k in range(20))
    path = write(tmp_path, policies=several, run="[run]\nhorizon = 20\nseeds = 1000\n")
    refused(path, "policies", "20 policies x 1000 seeds is above the limit jobs = 10000")
    raised = "[run]\nhorizon = 20\nseeds = 1000\nlimits = { jobs = 20000 }\n"
    assert len(load_problem(write(tmp_path, policies=several, run=raised)).policies) == 20


# ------------------------------------------------------------ control characters
def test_control_characters_of_a_key_are_escaped(tmp_path, capsys) -> None:
    spoof = '"bad\\ncmab-milp: ok (\\u001b[31m" = 1\n'
    path = write(tmp_path, space=SPACE + spoof)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.count("\n") == 1 and err.startswith("cmab-milp: error: ")
    assert "space.bad\\ncmab-milp: ok (\\x1b[31m" in err
