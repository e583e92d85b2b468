"""Experiments: problem files (TOML), the job runner, results on disk, and the paper's figures.

``cmab-milp run PROBLEM.toml --out DIR`` (see :mod:`cmab_milp.cli`) is
:func:`load_problem` followed by :func:`run_problem`.

Modules: :mod:`.schema` (typed reading of TOML tables with key paths),
:mod:`.builders` (spaces, graphs, environments, policies from tables),
:mod:`.problem` (the schema and :class:`Problem`), :mod:`.executors` (where jobs
run), :mod:`.storage` (the results folder), :mod:`.progress`, :mod:`.runner`,
:mod:`.plots`.
"""

from .executors import EXECUTORS, open_executor, register_executor
from .plots import DEFAULT_PANELS, PANELS, Panel, PolicyCurves, make_figure, save_figures
from .problem import PolicySpec, Problem, load_problem, parse_problem
from .runner import METRICS, JobsFailed, RunError, RunInterrupted, collect_curves, run_problem, summarise
from .schema import ProblemError

__all__ = [
    "DEFAULT_PANELS",
    "EXECUTORS",
    "METRICS",
    "PANELS",
    "JobsFailed",
    "Panel",
    "PolicyCurves",
    "PolicySpec",
    "Problem",
    "ProblemError",
    "RunError",
    "RunInterrupted",
    "collect_curves",
    "load_problem",
    "make_figure",
    "open_executor",
    "parse_problem",
    "register_executor",
    "run_problem",
    "save_figures",
    "summarise",
]
