"""Sweeps on a Dask cluster: a LocalCluster started here (one in-process worker) runs the jobs, and
the numbers equal a local run with the same seeds; a missing dask names the extra to install."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import parse_problem, run_problem
from cmab_milp.experiments.run.storage import job_paths, read_curve

distributed = pytest.importorskip("distributed")

from cmab_milp.experiments.run.dask_executor import DaskExecutor, dask_executor  # noqa: E402

PROBLEM = {
    "space": {"kind": "Cardinality", "d": 6, "m": 2},
    "environment": {"kind": "UniformNoise", "means": {"draw": "uniform", "seed": 4}},
    "policies": [
        {"name": "CUCB", "kind": "CUCB", "oracle": "enumerate"},
        {"name": "AROQ", "kind": "AROQ", "oracle": "enumerate"},
    ],
    "run": {"horizon": 200, "seeds": [0, 5]},
}


def _square(x):
    return x * x


def _fail_odd(x):
    if x % 2:
        raise ArithmeticError(f"bad {x}")
    return x


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as running:
        yield running


def test_runs_calls_and_reports_indices(cluster):
    with dask_executor(cluster.scheduler_address, jobs=4) as executor:
        assert executor.workers == 1
        assert sorted(executor.run(_square, [(k,) for k in range(5)])) == [(k, k * k) for k in range(5)]
        with pytest.raises(RuntimeError, match="task 1 failed on the Dask cluster: bad 1"):
            dict(executor.run(_fail_odd, [(0,), (1,)]))


def test_sweep_on_the_cluster_equals_a_local_run(cluster, tmp_path):
    problem = parse_problem(PROBLEM, "dask.toml")
    stream = io.StringIO()
    local = run_problem(problem, tmp_path / "local", jobs=1, executor="serial", plots=False, stream=stream)
    remote = run_problem(
        problem, tmp_path / "dask", executor=f"dask://{cluster.scheduler_address}", plots=False, stream=stream
    )
    assert remote["run"]["executor"].startswith("dask://") and remote["complete"]
    for name in ("CUCB", "AROQ"):
        for metric in ("regret", "queries", "rounds"):
            assert remote["policies"][name][metric] == local["policies"][name][metric]
        for seed in (0, 5):
            a = read_curve(job_paths(tmp_path / "local", name, seed)[0])
            b = read_curve(job_paths(tmp_path / "dask", name, seed)[0])
            for column in ("t", "regret", "queries", "rounds"):
                np.testing.assert_array_equal(a[column], b[column])
    on_disk = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert on_disk["policies"]["AROQ"]["regret"] == local["policies"]["AROQ"]["regret"]


def test_address_without_scheme_means_tcp_and_unreachable_is_clear():
    with pytest.raises(ValueError, match=r"cannot reach a Dask scheduler at tcp://127\.0\.0\.1:9"):
        DaskExecutor("127.0.0.1:9", timeout=1)


def test_needs_an_address():
    with pytest.raises(ValueError, match="dask://HOST:PORT"):
        dask_executor("", jobs=1)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'cmab_milp\[dask\]'"):
        dask_executor("127.0.0.1:8786", jobs=1)


PROBLEM_TOML = """
[space]
kind = "Cardinality"
d = 5
m = 2
[environment]
kind = "BernoulliArms"
means = [0.1, 0.3, 0.5, 0.7, 0.9]
[[policies]]
name = "SROQ"
kind = "SROQ"
oracle = "enumerate"
[run]
horizon = 150
seeds = 2
"""


def test_command_line_runs_on_the_cluster(cluster, tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM_TOML)
    spec = f"dask://{cluster.scheduler_address}"
    assert main(["run", str(path), "--out", str(tmp_path / "dask"), "--executor", spec, "--no-plots"]) == 0
    assert main(["run", str(path), "--out", str(tmp_path / "local"), "--executor", "serial", "--no-plots"]) == 0
    remote = json.loads((tmp_path / "dask" / "summary.json").read_text())
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert remote["run"]["executor"] == spec
    assert remote["policies"]["SROQ"]["regret"] == local["policies"]["SROQ"]["regret"]


def test_command_line_without_dask_names_the_extra(monkeypatch, tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM_TOML)
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--executor", "dask://127.0.0.1:8786"]) == 2
    assert "pip install 'cmab_milp[dask]'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
