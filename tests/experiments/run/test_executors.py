"""Same seed, same numbers, however a run is executed: the default oracle (highs) with
tie-heavy policies (SROQ's batches of representatives, the covariance index), run serially, in a process pool,
on a Dask LocalCluster, and interrupted then resumed, gives identical curves and summary numbers."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from cmab_milp.experiments import parse_problem, run_problem
from cmab_milp.experiments.run.storage import job_paths, read_curve

PROBLEM = {
    "space": {"kind": "Cardinality", "d": 8, "m": 2},
    # few distinct means: many exact ties between UCB indices, the case that used to split runs
    "environment": {"kind": "BernoulliArms", "means": [0.5, 0.5, 0.7, 0.7, 0.2, 0.9, 0.9, 0.4]},
    "policies": [
        {"name": "CUCB", "kind": "CUCB", "oracle": "highs"},
        {"name": "AROQ", "kind": "AROQ", "oracle": "highs"},
        {"name": "SROQ", "kind": "SROQ", "oracle": "highs"},
        {"name": "SROQ-C", "kind": "SROQCov", "oracle": "highs"},
        {"name": "AROQ-C", "kind": "AROQCov", "oracle": "highs", "constants": {"warmup_cycles": 1}},
    ],
    "run": {"horizon": 600, "seeds": [0, 1]},
}
NAMES = [p["name"] for p in PROBLEM["policies"]]
SEEDS = PROBLEM["run"]["seeds"]
COLUMNS = ("t", "regret", "queries", "rounds")
METRICS = ("regret", "queries", "rounds")


def _run(out: Path, **kwargs) -> dict:
    problem = parse_problem(PROBLEM, "same.toml")
    return run_problem(problem, out, plots=False, stream=io.StringIO(), **kwargs)


def _same(a: Path, b: Path, summary_a: dict, summary_b: dict) -> None:
    for name in NAMES:
        for metric in METRICS:
            assert summary_a["policies"][name][metric] == summary_b["policies"][name][metric], (name, metric)
        for seed in SEEDS:
            x, y = read_curve(job_paths(a, name, seed)[0]), read_curve(job_paths(b, name, seed)[0])
            for column in COLUMNS:
                np.testing.assert_array_equal(x[column], y[column], err_msg=f"{name} seed {seed} {column}")


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("serial") / "out"
    return out, _run(out, jobs=1, executor="serial")


def test_a_process_pool_gives_the_serial_numbers(serial, tmp_path: Path) -> None:
    summary = _run(tmp_path / "pool", jobs=2)
    _same(serial[0], tmp_path / "pool", serial[1], summary)


def test_an_interrupted_then_resumed_run_gives_the_uninterrupted_numbers(serial, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    first = _run(out, jobs=1, policies=["SROQ", "CUCB"])  # as if stopped after these jobs
    assert not first["complete"]
    summary = _run(out, jobs=2, resume=True)
    _same(serial[0], out, serial[1], summary)


def test_a_dask_cluster_gives_the_serial_numbers(serial, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        summary = _run(tmp_path / "dask", executor=f"dask://{c.scheduler_address}")
    _same(serial[0], tmp_path / "dask", serial[1], summary)
