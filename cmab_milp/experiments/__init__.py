"""Experiments: problem files (TOML), the job runner, results on disk, and the paper's figures.

``cmab-milp run PROBLEM.toml --out DIR`` (see :mod:`cmab_milp.cli`) is
:func:`load_problem` followed by :func:`run_problem`.

Modules: :mod:`.schema` (typed reading of TOML tables with key paths),
:mod:`.registry` (what a file may name: kinds, ``--plugin`` modules),
:mod:`.limits` (sizes checked before any work),
:mod:`.builders` (spaces, graphs, environments, policies from tables; split into
:mod:`.kinds`, :mod:`~cmab_milp.experiments.problem.graphs`, :mod:`~cmab_milp.experiments.problem.spaces`,
:mod:`~cmab_milp.experiments.problem.rules`, :mod:`.draws`),
:mod:`.problem` (the schema and :class:`Problem`), :mod:`.policy_specs` (one
``[[policies]]`` entry and its oracle options), :mod:`.executors` (where jobs
run), :mod:`.storage` (the results folder), :mod:`.progress`, :mod:`.jobs` (one
job: played, then recorded), :mod:`.summary` (``summary.json`` and the curves), :mod:`.runner`,
:mod:`.plots`, :mod:`.compare` and :mod:`.compare_report` (``compare-oracles``; its Python face:
:func:`record_queries`, :func:`candidate_backends`, :func:`compare_backends`, :func:`save_plot`,
:func:`compare_oracles`), :mod:`.manifest` (a results folder's data files and hashes), :mod:`.verify` and
:mod:`.verify_report` (``cmab-milp verify``: a folder re-run and compared run by run).
"""

from .problem.builders import DRAWS, GENERATORS, register_draw, register_generator
from .problem.limits import Limits
from .problem.problem_file import PolicySpec, Problem, load_problem, parse_problem
from .problem.registry import load_plugins, register_kind
from .problem.schema import ProblemError, ProblemErrors
from .report.compare import candidate_backends, compare_backends, compare_oracles, record_queries, save_plot
from .report.plots import DEFAULT_PANELS, PANELS, Panel, PolicyCurves, make_figure, save_figures
from .run.executors import EXECUTORS, open_executor, register_executor
from .run.runner import (
    METRICS,
    JobsFailed,
    RunError,
    RunFailed,
    RunInterrupted,
    collect_curves,
    run_problem,
    summarise,
)

__all__ = [
    "DEFAULT_PANELS",
    "DRAWS",
    "EXECUTORS",
    "GENERATORS",
    "METRICS",
    "PANELS",
    "JobsFailed",
    "Limits",
    "Panel",
    "PolicyCurves",
    "PolicySpec",
    "Problem",
    "ProblemError",
    "ProblemErrors",
    "RunError",
    "RunFailed",
    "RunInterrupted",
    "candidate_backends",
    "collect_curves",
    "compare_backends",
    "compare_oracles",
    "load_plugins",
    "load_problem",
    "make_figure",
    "open_executor",
    "parse_problem",
    "record_queries",
    "register_draw",
    "register_executor",
    "register_generator",
    "register_kind",
    "run_problem",
    "save_figures",
    "save_plot",
    "summarise",
]
