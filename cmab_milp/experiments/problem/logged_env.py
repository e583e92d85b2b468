"""The problem-file environment ``kind = "logged"``: a :class:`~cmab_milp.LoggedEnvironment` read from a log file.

::

    [environment]
    kind = "logged"
    file = "clicks.csv"            # CSV, or Parquet (.parquet / .pq), beside the problem file or below it
    round = "round"                # column names (these are the defaults)
    arm = "arm"                    # or ["u", "v"]: an edge per row on graph spaces
    reward = "reward"
    inclusion = "p"                # optional: the logging policy's inclusion probability column
    action_propensity = "q"        # optional
    full_information = false
    prior = 0.0                    # optional: the outcome of arms the log never includes
    seed = 0                       # optional

``file`` is named relative to the problem file's folder and must stay inside
it (no absolute path, no ``..``, no link leading out); a log given on the
command line (``cmab-milp evaluate --log FILE``) is not bound by this. The
stored problem keeps the file's SHA-256: a changed file is refused when the
problem is rebuilt (a worker, ``--resume``). A bad log is refused with the
problem file's key and the log's own row and column.

Example
-------
>>> import os, tempfile
>>> import cmab_milp as cm
>>> from cmab_milp.experiments.problem.schema import Table
>>> folder = tempfile.mkdtemp()
>>> _ = open(os.path.join(folder, "log.csv"), "w").write("round,arm,reward\\n0,0,1\\n1,1,0\\n")
>>> table = Table({"kind": "logged", "file": "log.csv"}, "environment", os.path.join(folder, "p.toml"))
>>> env, stored = build_logged_environment(table, cm.Cardinality(2, 1))
>>> env.means.tolist(), len(stored["sha256"])
([1.0, 0.0], 64)
>>> table = Table({"kind": "logged", "file": "../log.csv"}, "environment", os.path.join(folder, "p.toml"))
>>> build_logged_environment(table, cm.Cardinality(2, 1))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: ...p.toml: environment.file: the log must be in the problem file's \
folder or below it, got '../log.csv'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...logged.environment import LoggedEnvironment
from ...logged.table import LoggedFeedback
from .limits import Limits
from .matrices import _check_digest, _sha256, confined_path
from .schema import Table

__all__ = ["LOGGED_KIND", "build_logged_environment", "log_options", "log_path"]

#: The environment kind read by this module.
LOGGED_KIND = "logged"
#: Suffixes of the log files a problem file may name.
LOG_SUFFIXES = (".csv", ".parquet", ".pq")


def log_path(table: Table, name: str = "file") -> Path:
    """The log file ``table[name]`` names: relative to the problem file's folder and inside it."""
    return confined_path(table, name, LOG_SUFFIXES, "log", "a log is a .csv or .parquet file")


def log_options(table: Table) -> dict[str, Any]:
    """The column names and reading options of a ``kind = "logged"`` table (defaults as ``from_csv``'s)."""
    options: dict[str, Any] = {
        "round": table.string("round", "round"),
        "reward": table.string("reward", "reward"),
        "inclusion": table.string("inclusion", None),
        "action_propensity": table.string("action_propensity", None),
        "full_information": table.boolean("full_information", False),
    }
    arm = table.raw("arm", "arm")
    if isinstance(arm, list) and len(arm) == 2 and all(isinstance(c, str) for c in arm):
        options["arm"] = tuple(arm)
    elif isinstance(arm, str):
        options["arm"] = arm
    else:
        raise table.error("arm", f"expected a column name or two (an edge's ends), got {arm!r}")
    return options


def build_logged_environment(
    table: Table, space: Any, limits: Limits | None = None
) -> tuple[LoggedEnvironment, dict[str, Any]]:
    """The environment of a ``kind = "logged"`` table, and the table as stored (with the log's ``sha256``)."""
    table.used.add("kind")
    path = log_path(table)
    options = log_options(table)
    prior = table.number("prior", None)
    seed = table.integer("seed", None, minimum=0)
    table.used.add("sha256")
    table.finish()
    digest = _sha256(path)
    _check_digest(digest, table.data.get("sha256"), table.path("file"), table.file)
    try:
        log = LoggedFeedback.from_csv(path, space, **options)
        env = LoggedEnvironment(log, prior=prior, seed=seed)
    except (ValueError, ImportError) as exc:
        raise table.error("file", str(exc)) from None
    table.data["sha256"] = digest  # kept in the stored problem: a changed log is refused on a rebuild
    return env, dict(table.data)
