"""The ``cmab-milp`` command line.

Subcommands:

- ``cmab-milp run PROBLEM.toml --out DIR [--steps N] [--seeds K] [--jobs J] [--resume]
  [--no-plots] [--executor local|serial|dask://HOST:PORT] [--policies NAME,...] [--progress-seconds S]``:
  run a problem file (see
  :mod:`cmab_milp.experiments.problem.problem_file` for the schema) and write ``DIR/summary.json``,
  per-job curves under ``DIR/runs/`` and the figures. ``--steps`` (or its first name
  ``--horizon``) sets the time steps each job plays, and with them a known horizon ``T``; with
  ``[run] horizon = "unknown"`` the policies are still built with ``T=None``. Warnings about the
  file are printed first, one line each.
- ``cmab-milp validate PROBLEM.toml ...``: check problem files without running them (warnings,
  e.g. a policy's reward that differs from the environment's, go to stderr as ``warning: ...``).
- ``cmab-milp plot DIR``: redraw the figures of a (possibly partial) run.
- ``cmab-milp compare-oracles PROBLEM.toml --out DIR``: replay a run's oracle queries on
  every backend and check they agree (:mod:`cmab_milp.experiments.report.compare`).
- ``cmab-milp verify RESULTS [--seeds 0,3] [--policies NAME,...] [--jobs J]``: re-run a results
  folder and report per run identical, or the first step and field that differ; exit 0 all
  identical, 1 any differ (or the folder was edited), 2 it cannot be checked; writes nothing
  into ``RESULTS`` (:mod:`cmab_milp.experiments.run.verify`).
- ``cmab-milp evaluate PROBLEM.toml --log FILE --out DIR``: value every policy of a problem on a
  log (off-policy estimators and replay; :mod:`cmab_milp.experiments.run.evaluate`).

Every subcommand takes ``--plugin MODULE`` (repeatable: a module you trust,
imported before the file is read, that registers its own kinds with
:func:`cmab_milp.experiments.register_kind`; a problem file or a results folder
never causes an import by itself) and ``--debug`` (show the traceback of an
error instead of its one-line message).

Exit codes: 0 success; 2 a refused problem file, folder or argument (nothing
ran); 1 a failed run (some jobs failed, results could not be written, the
executor was lost; what finished is saved); 130 interrupted by Ctrl-C (SIGINT),
143 by SIGTERM (finished jobs are saved; continue with ``--resume``).

Example
-------
>>> main(["validate", "no/such/file.toml"])
2
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["COMMANDS", "build_parser", "main"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _progress_seconds(text: str) -> Any:
    from .experiments.run.progress import ProgressOptions

    try:
        return ProgressOptions.every(float(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("line_seconds", "--progress-seconds")) from None


def _error(message: str) -> int:
    sys.stderr.write(f"cmab-milp: error: {message}\n")
    return 2


def _print_summary(summary: dict[str, Any]) -> None:
    """The per-policy table of a run, with each row's seed count and what did not run
    (:func:`cmab_milp.experiments.report.summary_table.summary_table`).

    >>> same = {"mean": 1200, "std": 0}
    >>> exact = dict.fromkeys(("regret", "queries", "rounds", "wall_seconds", "oracle_seconds"), same)
    >>> approximate = {**exact, "alpha_regret": {"mean": 1000, "std": 0}, "alpha": {"mean": 0.95, "std": 0}}
    >>> _print_summary({"policies": {"A": exact, "B": approximate}})
    mean ± standard deviation over seeds
    policy  n  regret     queries    rounds     wall s     oracle s   alpha-regret  alpha
    A       ?  1,200 ± 0  1,200 ± 0  1,200 ± 0  1,200 ± 0  1,200 ± 0  -             -
    B       ?  1,200 ± 0  1,200 ± 0  1,200 ± 0  1,200 ± 0  1,200 ± 0  1,000 ± 0     0.9500 ± 0.0000
    """
    from .experiments.report.summary_table import summary_table

    print(summary_table(summary))


# ---------------------------------------------------------------- commands
def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run a problem file", description="Run a problem file and write results and plots.")
    p.add_argument("problem", help="problem file (TOML)")
    p.add_argument("--out", required=True, help="results folder (created if needed)")
    p.add_argument(
        "--steps",
        "--horizon",
        dest="steps",
        type=_positive_int,
        help='time steps each job plays: overrides [run] horizon (T), or [run] steps with horizon = "unknown"',
    )
    p.add_argument("--seeds", type=_positive_int, help="override [run] seeds with seeds 0..K-1")
    p.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, help="parallel jobs (default: cores)")
    p.add_argument("--resume", action="store_true", help="continue a run in --out, skipping finished jobs")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument(
        "--policies",
        metavar="NAME,...",
        help="run only these policies (comma-separated names); run the others later with --resume",
    )
    p.add_argument(
        "--executor",
        default="local",
        help="where jobs run: local (default: a process pool), serial, dask://HOST:PORT",
    )
    p.add_argument(
        "--progress-seconds",
        type=_progress_seconds,
        default=None,
        metavar="S",
        help="without a terminal, print each running job's steps at most every S seconds (default 10; 0: all)",
    )
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from .experiments import RunError, RunFailed, RunInterrupted, load_problem, run_problem
    from .experiments.run.executors import EXECUTORS
    from .oracles.core.interrupts import terminating

    name = args.executor.partition("://")[0]
    if name not in EXECUTORS:
        return _error(f"unknown executor {args.executor!r}; known: {', '.join(sorted(EXECUTORS))}")
    problem = load_problem(args.problem, steps=args.steps, seeds=args.seeds)
    # SIGTERM stops the run as Ctrl-C does, solves included (a handler raising inside a solver's callback was lost)
    with terminating() as termination:
        try:
            summary = run_problem(
                problem,
                args.out,
                jobs=args.jobs,
                executor=args.executor,
                resume=args.resume,
                plots=not args.no_plots,
                policies=[n.strip() for n in args.policies.split(",") if n.strip()] if args.policies else None,
                progress=args.progress_seconds,
            )
        except RunInterrupted as exc:
            sys.stderr.write(f"cmab-milp: {exc}\n")
            return 143 if termination.heard else 130
        except KeyboardInterrupt:  # before or after the jobs (checking the folder, writing the summary)
            return _failed(args, "interrupted", 143 if termination.heard else 130)
        except RunFailed as exc:
            sys.stderr.write(f"cmab-milp: {exc}\n")
            return 1
        except RunError as exc:
            return _error(str(exc))
    _print_summary(summary)
    return 0


def _add_validate(sub: Any) -> None:
    p = sub.add_parser("validate", help="check problem files without running them")
    p.add_argument("problems", nargs="+", help="problem files (TOML)")
    p.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from .experiments import load_problem

    for path in args.problems:
        problem = load_problem(path)
        space = problem.build_space()
        names = ", ".join(p.name + (" (on request)" if p.on_request else "") for p in problem.policies)
        for warning in problem.warnings:
            sys.stderr.write(f"warning: {warning}\n")
        print(
            f"{path}: ok ({problem.space['kind']} d={space.d}, {problem.environment['kind']}, "
            f"policies {names}, {problem.horizon_text}, {len(problem.seeds)} seed{'s' * (len(problem.seeds) != 1)})"
        )
    return 0


def _add_plot(sub: Any) -> None:
    p = sub.add_parser("plot", help="redraw the figures of a run folder")
    p.add_argument("out", help="results folder written by 'cmab-milp run'")
    p.add_argument("--panels", help="comma-separated panel names (default: the problem's)")
    p.set_defaults(handler=_plot)


def _plot(args: argparse.Namespace) -> int:
    from .experiments import PANELS, collect_curves, parse_problem, save_figures
    from .experiments.run.storage import read_json

    stored = read_json(Path(args.out) / "problem.json")
    if not isinstance(stored, dict) or not isinstance(stored.get("problem"), dict):
        return _error(f"{args.out} holds no readable problem.json: not a run folder")
    # build=False: the folder's problem is read as data; no kind it names is looked up or constructed
    problem = parse_problem(stored["problem"], str(Path(args.out) / "problem.json"), build=False)
    panels = args.panels.split(",") if args.panels else problem.panels
    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        return _error(f"unknown panels {unknown}; known: {', '.join(PANELS)}")
    curves = collect_curves(problem, args.out)
    if not curves:
        return _error(f"{args.out} holds no finished jobs to plot")
    for path in save_figures(curves, panels, args.out, problem.title):
        print(path)
    return 0


def _add_topologies(sub: Any) -> None:
    p = sub.add_parser(
        "topologies",
        help="list topohub's topologies, or the nodes of one",
        description="Without NAME: the topology names a problem file's [space.graph] topohub = ... takes "
        "(with --match, the close ones). With NAME: its nodes (the names source and target take) and its links.",
    )
    p.add_argument("name", nargs="?", help="a topology, e.g. topozoo/Geant2012")
    p.add_argument("--match", help="only the names close to this one (case-insensitive, parts, edit distance)")
    p.set_defaults(handler=_topologies)


def _topologies(args: argparse.Namespace) -> int:
    from ._names import close_names
    from .topologies import load_topology, topology_names

    try:
        names = topology_names()
    except ImportError as exc:
        return _error(str(exc))
    if args.name is None:
        shown = close_names(args.match, names, n=20) if args.match else names
        if not shown:
            return _error(f"no topology name close to {args.match!r}")
        print("\n".join(shown))
        return 0
    try:
        graph = load_topology(args.name)
    except ValueError as exc:
        return _error(str(exc))
    print(f"{args.name}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} links")
    print("nodes: " + ", ".join(str(v) for v in graph))
    return 0


def _add_compare_oracles(sub: Any) -> None:
    from .experiments.report.compare import add_command

    add_command(sub)


def _add_verify(sub: Any) -> None:
    from .experiments.run.verify import add_command

    add_command(sub)


def _add_evaluate(sub: Any) -> None:
    from .experiments.run.evaluate import add_command

    add_command(sub)


#: Subcommands: each adds its parser (and handler) to the subparsers object.
COMMANDS: dict[str, Callable[[Any], None]] = {
    "run": _add_run,
    "validate": _add_validate,
    "plot": _add_plot,
    "compare-oracles": _add_compare_oracles,
    "topologies": _add_topologies,
    "verify": _add_verify,
    "evaluate": _add_evaluate,
}


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (code you trust) first; it may register kinds with "
        "cmab_milp.experiments.register_kind (repeatable)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line messages")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="cmab-milp", description="Combinatorial semi-bandits with exact optimisation oracles."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        add(sub)
        _add_common(sub.choices[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``cmab-milp``; returns the exit code.

    A user error (a refused file, folder or argument) is one line on stderr and
    exit code 2; anything unexpected is one line and exit code 1; ``--debug``
    adds the traceback. Interrupted on the command line (``argv`` not given), the
    process ends at once, results saved, even if a thread of a job still works
    (:func:`_leave_now`).
    """
    code = _main(argv)
    if argv is None and code in (130, 143):
        _leave_now(code)
    return code


def _leave_now(code: int) -> None:
    """End the process with ``code`` now if threads other than the main one still work.

    After an interrupt, the worker threads of a job's batch query end at their next solver call; one in a long
    stretch of Python code between two calls (a tie search) would otherwise keep the process alive at exit,
    which waits for every such thread. Everything the run writes is written (atomically) by now.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    from .experiments import ProblemError
    from .experiments.problem.registry import load_plugins
    from .experiments.run.storage import FolderError

    args = build_parser().parse_args(argv)
    try:
        load_plugins(args.plugin)
    except ValueError as exc:
        return _failed(args, str(exc), 2)
    try:
        return args.handler(args)
    except (ProblemError, FolderError) as exc:
        return _failed(args, str(exc), 2)
    except KeyboardInterrupt as exc:
        from .oracles.core.interrupts import Terminated

        return _failed(args, "interrupted", 143 if isinstance(exc, Terminated) else 130)
    except MemoryError:
        return _failed(args, "out of memory (lower the problem's sizes)", 1)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        return _failed(args, f"cannot access{where}: {exc.strerror or exc}", 1)
    except Exception as exc:  # a bug or an unforeseen failure: one line, the traceback with --debug
        return _failed(args, f"unexpected {type(exc).__name__}: {exc} (run again with --debug for the traceback)", 1)


def _failed(args: argparse.Namespace, message: str, code: int) -> int:
    from .experiments.problem.schema import printable

    if getattr(args, "debug", False):
        traceback.print_exc(file=sys.stderr)
    for line in message.splitlines() or [""]:  # several errors of one file: one line each
        sys.stderr.write(f"cmab-milp: error: {printable(line)}\n")  # a file's keys: control characters escaped
    return code


if __name__ == "__main__":
    sys.exit(main())
