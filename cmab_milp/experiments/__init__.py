"""Experiments: problem files (TOML), the job runner, results on disk, and the paper's figures.

``cmab-milp run PROBLEM.toml --out DIR`` (see :mod:`cmab_milp.cli`) is
:func:`load_problem` followed by :func:`run_problem`.

The package follows a run's flow, one folder a stage:

* :mod:`cmab_milp.experiments.problem` - reading and checking a problem file: ``schema`` (typed reading of
  TOML tables with key paths), ``problem_file`` (the schema and :class:`Problem`), ``registry`` (what a file
  may name: kinds, ``--plugin`` modules), ``limits`` and ``file_limits`` (sizes checked before any work),
  ``builders`` with ``kinds``, ``graphs``, ``spaces``, ``rules``, ``arm_values``, ``matrices``, ``draws``,
  ``logged_env`` (spaces, graphs, environments, policies from tables) and ``policy_specs`` (one
  ``[[policies]]`` entry and its oracle options);
* :mod:`cmab_milp.experiments.run` - running it: ``runner``, ``jobs`` (one job: played, then recorded),
  ``executors`` and ``dask_executor`` (where jobs run), ``storage`` (the results folder), ``progress``,
  ``manifest`` (a results folder's data files and hashes), ``verify`` and ``verify_report``
  (``cmab-milp verify``: a folder re-run and compared run by run), ``evaluate`` (``cmab-milp evaluate``);
* :mod:`cmab_milp.experiments.report` - reporting it: ``summary`` (``summary.json`` and the curves),
  ``summary_table``, ``plots``, ``compare`` and ``compare_report`` (``compare-oracles``; its Python face:
  :func:`record_queries`, :func:`candidate_backends`, :func:`compare_backends`, :func:`save_plot`,
  :func:`compare_oracles`).
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
