"""Problem files and results folders are data: no string in them imports or runs code.

Every test names code that would leave a trace if it ran (a marker file written
by a shell command, a module that writes a marker when imported, the module
``this`` which prints the Zen of Python) and checks the trace is absent after
``validate``, ``run`` or ``plot``.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import ProblemError, load_problem, parse_problem, register_kind
from cmab_milp.experiments.problem import registry as registry_module

SPACE = '[space]\nkind = "Cardinality"\nd = 4\nm = 2\n'
ENVIRONMENT = '[environment]\nkind = "BernoulliArms"\nmeans = [0.1, 0.2, 0.3, 0.4]\n'
POLICY = '[[policies]]\nname = "CUCB"\nkind = "CUCB"\noracle = "enumerate"\n'
RUN = "[run]\nhorizon = 20\nseeds = 1\n"


def text(space: str = SPACE, environment: str = ENVIRONMENT, policy: str = POLICY) -> str:
    return "\n".join([space, environment, policy, RUN])


@pytest.fixture
def trap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A module ``evil_trap`` on sys.path that writes a marker when imported, and a shell marker path."""
    marker = tmp_path / "imported"
    shell = tmp_path / "shell_ran"
    (tmp_path / "evil_trap.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\nclass Thing:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "evil_trap", raising=False)
    monkeypatch.delitem(sys.modules, "this", raising=False)
    return {"import": marker, "shell": shell}


def untouched(trap: dict[str, Path]) -> bool:
    return not trap["import"].exists() and not trap["shell"].exists() and "evil_trap" not in sys.modules


def shell_environment(trap: dict[str, Path]) -> str:
    return f'[environment]\nkind = "subprocess:Popen"\nargs = ["sh", "-c", "touch {trap["shell"]}"]\n'


def hostile_cases(trap: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(file text, key refused, message fragment): every place a string of a file is looked up."""
    env = ENVIRONMENT
    return [
        (text(environment=shell_environment(trap)), "environment.kind", "cannot import"),
        (text(environment=env.replace('"BernoulliArms"', '"this:X"')), "environment.kind", "cannot import"),
        (text(environment=env.replace('"BernoulliArms"', '"evil_trap:Thing"')), "environment.kind", "--plugin"),
        (text(environment=env.replace('"BernoulliArms"', '"__class__"')), "environment.kind", "not a plain name"),
        (text(environment=env.replace('"BernoulliArms"', '"_Private"')), "environment.kind", "not a plain name"),
        (text(environment=env.replace('"BernoulliArms"', '"os.path.join"')), "environment.kind", "not a plain name"),
        (text(environment=env.replace('"BernoulliArms"', '"lambda: 0"')), "environment.kind", "not a plain name"),
        (text(policy=POLICY.replace('kind = "CUCB"', 'kind = "evil_trap:Thing"')), "policies[0].kind", "--plugin"),
        (text(policy=POLICY.replace('kind = "CUCB"', 'kind = "os:system"')), "policies[0].kind", "cannot import"),
        (text(policy=POLICY.replace('kind = "CUCB"', 'kind = "__import__"')), "policies[0].kind", "plain name"),
        (text(space=SPACE.replace('"Cardinality"', '"evil_trap:Thing"')), "space.kind", "--plugin"),
        (text(space=SPACE.replace('"Cardinality"', '"__subclasses__"')), "space.kind", "plain name"),
        (
            text(space='[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "__import__"\nargs = ["os"]\n'),
            "space.graph.generator",
            "not a plain name",
        ),
        (
            text(space='[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "evil_trap:Thing"\n'),
            "space.graph.generator",
            "not a plain name",
        ),
        (
            text(space='[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "read_edgelist"\n'),
            "space.graph.generator",
            "unknown networkx generator",
        ),
        (  # networkx dispatches on backend=..., which loads entry points: not an argument a file may give
            text(
                space='[space]\nkind = "SpanningTrees"\n[space.graph]\ngenerator = "complete_graph"\n'
                'args = [4]\nkwargs = { backend = "evil_trap" }\n'
            ),
            "space.graph.kwargs.backend",
            "takes no argument",
        ),
        (
            text(environment=env.replace("[0.1, 0.2, 0.3, 0.4]", '{ draw = "__import__", seed = 1 }')),
            "environment.means.draw",
            "not a plain name",
        ),
        (
            text(environment=env.replace("[0.1, 0.2, 0.3, 0.4]", '{ draw = "evil_trap:Thing", seed = 1 }')),
            "environment.means.draw",
            "not a plain name",
        ),
        (text(policy=POLICY.replace('"enumerate"', '"evil_trap:Thing"')), "policies[0].oracle", "unknown oracle"),
        (text(policy=POLICY.replace('"enumerate"', '"pulp:__import__"')), "policies[0].oracle", "plain name"),
        (
            text(
                environment='[environment]\nkind = "DiscreteArms"\nvalues = [0.0, 1.0]\nreward = "evil_trap:Thing"\n'
                "probs = [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]\n"
            ),
            "environment.reward",
            "unknown reward",
        ),
    ]


CASES = 21


def test_the_case_list_is_complete(trap) -> None:
    assert len(hostile_cases(trap)) == CASES


@pytest.mark.parametrize("case", range(CASES))
def test_validate_refuses_and_runs_nothing(case: int, trap, tmp_path: Path, capsys) -> None:
    content, key, message = hostile_cases(trap)[case]
    path = tmp_path / "hostile.toml"
    path.write_text(content)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f": {key}" in err and message in err, err
    assert err.count("\n") == 1  # one line, no traceback
    assert untouched(trap)
    assert "this" not in sys.modules


def test_run_refuses_before_anything_runs_or_is_written(trap, tmp_path: Path, capsys) -> None:
    path = tmp_path / "hostile.toml"
    path.write_text(text(environment=shell_environment(trap)))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1"]) == 2
    assert "environment.kind" in capsys.readouterr().err
    assert untouched(trap) and not out.exists()


def test_plot_and_resume_import_nothing_a_results_folder_names(trap, tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text())
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    stored = json.loads((out / "problem.json").read_text())
    stored["problem"]["environment"] = {"kind": "subprocess:Popen", "args": ["sh", "-c", f"touch {trap['shell']}"]}
    stored["problem"]["space"]["kind"] = "evil_trap:Thing"
    stored["problem"]["policies"][0]["kind"] = "this:X"
    stored["digest"] = parse_problem(stored["problem"], "x", build=False).digest()  # a consistent hostile folder
    (out / "problem.json").write_text(json.dumps(stored))
    for job in (out / "runs").rglob("*.json"):
        job.write_text(json.dumps({**json.loads(job.read_text()), "digest": stored["digest"]}))
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0  # the folder's problem is data: it is drawn, never built
    assert (out / "figure.png").is_file()
    assert untouched(trap) and "this" not in sys.modules
    # --resume reads the problem from the (clean) file; the folder's problem.json is only compared
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--resume"]) == 2
    assert "different problem" in capsys.readouterr().err
    assert untouched(trap) and "this" not in sys.modules


def test_python_api_refuses_the_same_strings(trap) -> None:
    data = {
        "space": {"kind": "Cardinality", "d": 4, "m": 2},
        "environment": {"kind": "evil_trap:Thing"},
        "policies": [{"name": "A", "kind": "CUCB"}],
        "run": {"horizon": 5, "seeds": 1},
    }
    with pytest.raises(ProblemError, match=r"environment\.kind: refused"):
        parse_problem(data, "api")
    assert untouched(trap)


# ------------------------------------------------------------------ plugins
PLUGIN = textwrap.dedent(
    """
    import numpy as np
    from cmab_milp.environments import BernoulliArms
    from cmab_milp.experiments import register_kind


    class HalfArms(BernoulliArms):
        def __init__(self, d: int):
            super().__init__(np.full(d, 0.5))


    register_kind("environment", "HalfArms", HalfArms)
    """
)


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"trusted_kinds_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + __import__("os").environ.get("PYTHONPATH", ""))
    saved = registry_module.plugins()
    kinds = registry_module.registered("environment")
    yield name
    registry_module._PLUGINS[:] = saved
    registry_module._KINDS["environment"] = kinds


def test_a_plugin_registers_kinds_by_name_and_by_module_path(plugin: str, tmp_path: Path, capsys) -> None:
    env = '[environment]\nkind = "HalfArms"\nd = 4\n'
    path = tmp_path / "p.toml"
    path.write_text(text(environment=env))
    assert main(["validate", str(path)]) == 2  # without --plugin the name is unknown
    assert "unknown environment kind 'HalfArms'" in capsys.readouterr().err
    assert main(["validate", str(path), "--plugin", plugin]) == 0
    path.write_text(text(environment=f'[environment]\nkind = "{plugin}:HalfArms"\nd = 4\n'))
    assert main(["validate", str(path), "--plugin", plugin]) == 0
    path.write_text(text(environment=f'[environment]\nkind = "{plugin}:np"\nd = 4\n'))
    assert main(["validate", str(path), "--plugin", plugin]) == 2  # a module attribute that is not a class
    assert "defines no class 'np'" in capsys.readouterr().err


def test_plugin_kinds_reach_worker_processes(plugin: str, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text(environment='[environment]\nkind = "HalfArms"\nd = 4\n').replace("seeds = 1", "seeds = 2"))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "2", "--no-plots", "--plugin", plugin]) == 0
    assert sorted(p.name for p in (out / "runs" / "CUCB").glob("*.json")) == ["seed_0.json", "seed_1.json"]


def test_bad_plugin_names_are_refused(capsys, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text())
    assert main(["validate", str(path), "--plugin", "no_such_module_xyz"]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert main(["validate", str(path), "--plugin", "os; rm"]) == 2
    assert "module path" in capsys.readouterr().err


def test_register_kind_refuses_private_names_and_non_classes() -> None:
    with pytest.raises(ValueError, match="plain name"):
        register_kind("policy", "_Hidden", object)
    with pytest.raises(ValueError, match="got function"):
        register_kind("policy", "Fn", lambda: None)
    with pytest.raises(ValueError, match="unknown family"):
        register_kind("oracle", "X", object)


def test_problem_loads_after_registering_in_python(tmp_path: Path) -> None:
    from cmab_milp.environments import BernoulliArms

    class Quarter(BernoulliArms):
        def __init__(self, d: int):
            super().__init__([0.25] * d)

    saved = registry_module.registered("environment")
    try:
        register_kind("environment", "Quarter", Quarter)
        path = tmp_path / "p.toml"
        path.write_text(text(environment='[environment]\nkind = "Quarter"\nd = 4\n'))
        problem = load_problem(path)
        assert problem.build_environment().means.tolist() == [0.25] * 4
    finally:
        registry_module._KINDS["environment"] = saved
