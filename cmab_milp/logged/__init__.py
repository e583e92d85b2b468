"""Logged feedback: a log of plays as data, its off-policy estimators, replay, and an environment built from it.

One job per module: :mod:`.checks` (bulk row checks), :mod:`.table`
(:class:`LoggedFeedback`), :mod:`.reading` (CSV / Parquet through pandas),
:mod:`.targets` (what a frozen target plays), :mod:`.estimators`
(:func:`offline_value`), :mod:`.replaying` (:func:`replay`), :mod:`.environment`
(:class:`LoggedEnvironment`) and :mod:`.evaluate` (``cmab-milp evaluate``).
"""

from .._lazy import lazy_names

_LAZY = {
    "LoggedFeedback": ".table",
    "read_log": ".reading",
    "offline_value": ".estimators",
    "OfflineValue": ".estimators",
    "ESTIMATORS": ".estimators",
    "replay": ".replaying",
    "ReplayResult": ".replaying",
    "LoggedEnvironment": ".environment",
}

__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
