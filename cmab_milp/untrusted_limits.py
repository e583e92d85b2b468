"""Limits on untrusted files, in one place: problem files, saved learners and results folders.

Every reader of a file it did not write checks it against these values before
it trusts it: the problem-file reader (``experiments/problem/``), the saved
learner's reader (``policies/saved_files.py``, ``policies/header_checks.py``) and
the results-folder reader (``experiments/run/storage.py``). One value per
quantity, so that a saved learner, a problem file and a results folder nested
equally deep are refused (or accepted) alike. This module imports nothing of the
package: every layer may use it.

* :data:`MAX_NESTING`: arrays and tables (JSON objects) nested deeper than this
  are refused, by a linear scan before any recursive parser runs.
* :data:`MAX_HORIZON`: the largest ``T`` a policy is told or a saved learner states.
* :data:`MAX_RUN_STEPS`: the most time steps one job of a problem file plays.
* :data:`MAX_SEEDS`, :data:`MAX_CURVE_POINTS`: the ceilings a problem file's
  ``[run] limits`` cannot lift.
* :data:`MAX_SAVED_BYTES`: what a saved learner's arrays may declare by default.
* :data:`MAX_GENERATOR_TRIES`: the retry count a graph generator may be given.

>>> check_json_depth("[[[]]]", max_depth=3)
>>> check_json_depth("[[[[]]]]", max_depth=3)
Traceback (most recent call last):
...
ValueError: the header nests arrays and objects more than 3 deep
"""

from __future__ import annotations

__all__ = [
    "MAX_CURVE_POINTS",
    "MAX_GENERATOR_TRIES",
    "MAX_HORIZON",
    "MAX_NESTING",
    "MAX_RUN_STEPS",
    "MAX_SAVED_BYTES",
    "MAX_SEEDS",
    "check_json_depth",
]

#: Arrays and tables nested deeper than this are refused in every untrusted file. A saved learner's
#: header needs about ten levels and a problem file a handful; 64 is the larger of the two values the
#: readers had (problem files 32, saved learners 64), so nothing accepted before is refused, and the
#: recursive parsers behind the scan (``tomllib``, ``json``) stay far below Python's recursion limit.
MAX_NESTING = 64

#: The largest horizon ``T`` (policies, saved learners' headers): beyond it float64 round counts stop
#: being exact.
MAX_HORIZON = 2**53

#: The most time steps a job of a problem file plays (``[run] horizon`` / ``steps``, even when raised
#: in ``[run] limits``): a run's int64 products of steps and arms (AROQ's ``T m |T_i|``) and float64
#: counters are exact and tested up to here. Lower than :data:`MAX_HORIZON` on purpose: that one bounds
#: what a policy can be told, this one what a run is sure to play exactly.
MAX_RUN_STEPS = 2**50

#: Seeds (jobs per policy) no ``[run] limits`` can lift.
MAX_SEEDS = 1_000_000

#: Points per curve (rows of a job's CSV) no ``[run] limits`` can lift.
MAX_CURVE_POINTS = 1_000_000

#: Default bound on the bytes a saved learner's arrays may declare (``load_policy(..., max_bytes=)``).
MAX_SAVED_BYTES = 2**31

#: The most attempts a retrying graph generator may be given (``tries`` of connected_watts_strogatz_graph).
MAX_GENERATOR_TRIES = 1000


def check_json_depth(text: str, max_depth: int = MAX_NESTING, what: str = "the header") -> None:
    """Refuse JSON ``text`` whose arrays and objects nest deeper than ``max_depth`` (a linear scan, no recursion).

    Run it before ``json.loads``, whose C parser recurses once per level. ``what`` names the text in
    the message.

    >>> check_json_depth('{"a": [1, 2]}')
    >>> check_json_depth("[" * 65 + "]" * 65, what="summary.json")
    Traceback (most recent call last):
    ...
    ValueError: summary.json nests arrays and objects more than 64 deep
    """
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                raise ValueError(f"{what} nests arrays and objects more than {max_depth} deep")
        elif c in "]}":
            depth -= 1
        i += 1
