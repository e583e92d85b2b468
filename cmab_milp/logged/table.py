"""The logged-feedback table: one row per (round, arm) played, checked against the action space before any use.

:class:`LoggedFeedback` holds a log of a semi-bandit: for each round, the arms
the logging policy played and each one's observed outcome; where the logging
policy is known, the probability it had of including each row's arm in that
round (``inclusion``) and of playing the whole logged action
(``action_propensity``). Each round's arms must form an action of the space
(the space's own ``contains``, once per distinct action); a *full-information*
log instead holds every arm's outcome every round. Bad logs are refused
before anything else happens, naming the row and the column (see
:mod:`cmab_milp.logged.checks`); ``on_bad_rows="drop"`` drops whole rounds
instead and counts them per reason in ``log.dropped``.

Rows are kept sorted by round (rounds in order of first appearance) and arm.

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(3, 2).with_labels(["a", "b", "c"])
>>> log = cm.LoggedFeedback(space, [1, 1, 2], ["a", "c", "b"], [0.5, 1.0, 0.0], inclusion=[2/3, 2/3, 2/3])
>>> log.n, log.action(0).astype(int).tolist(), log.round_rewards().tolist()
(2, [1, 0, 1], [1.5, 0.0])
>>> cm.LoggedFeedback(space, [1, 1], ["a", "z"], [0.5, 1.0])
Traceback (most recent call last):
...
ValueError: the arrays: row 1, column 'arm': unknown arm 'z' (the space's arms are indices 0..2 or its labels)
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ..spaces.base import ActionSpace
from .checks import Problems, RowNames, arm_codes, number_column
from .feasibility import as_bool_actions, outside

__all__ = ["LoggedFeedback"]


def _one_dimensional(values: Any) -> Any:
    """``values`` as a 1-D array: a list of tuples (edges) or a 2-D array becomes an object array of tuples."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values
    if isinstance(values, np.ndarray) and values.ndim == 2:
        values = values.tolist()
    items = [tuple(v) if isinstance(v, list | np.ndarray) else v for v in values]
    return np.fromiter(items, dtype=object, count=len(items))


def factorize(values: Any) -> tuple[np.ndarray, list]:
    """Codes of ``values`` in order of first appearance, and the distinct values in that order."""
    if hasattr(values, "factorize") and not hasattr(values, "dtype"):  # two columns read as (u, v) keys
        return values.factorize()
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        codes, uniques = pd.factorize(_one_dimensional(values))
        return np.asarray(codes, np.int64), list(uniques)
    table: dict[Any, int] = {}
    codes = np.empty(len(values), np.int64)
    for k, value in enumerate(values):
        value = value.item() if isinstance(value, np.generic) else value
        value = tuple(value) if isinstance(value, list | np.ndarray) else value
        codes[k] = table.setdefault(value, len(table))
    return codes, list(table)


def distinct_actions(padded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``padded`` (arm indices, ``-1`` padding) in order of first appearance, and each row's index.

    >>> arms, inverse = distinct_actions(np.array([[0, 2], [1, -1], [0, 2]]))
    >>> arms.tolist(), inverse.tolist()
    ([[0, 2], [1, -1]], [0, 1, 0])
    """
    width = padded.shape[1]
    base = int(padded.max()) + 2
    if base**width < 2**62:  # each row as one integer in base d + 1: a fast integer sort
        keys = (padded + 1) @ (base ** np.arange(width, dtype=np.int64))
    else:
        keys = np.ascontiguousarray(padded).view(np.dtype((np.void, padded.itemsize * width))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return padded[first[order]], rank[inverse.ravel()].astype(np.int64)


def _item(values: Any, k: int) -> Any:
    """Row ``k`` of a column as given (for messages: the value the user wrote)."""
    value = values[k]
    return value.item() if isinstance(value, np.generic) else value


def _missing(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=object) if isinstance(values, list) else np.asarray(values)
    if array.dtype.kind == "f":
        return np.isnan(array)
    if array.dtype.kind in "biumM":
        return np.zeros(len(array), bool)
    return np.array([v is None or (isinstance(v, float) and v != v) for v in array.tolist()], bool)


def _probabilities(values: Any, role: str, problems: Problems, raw: np.ndarray | None = None) -> np.ndarray:
    numbers, text = number_column(values)
    problems.add(text, role, lambda k: f"{_item(values, k)!r} is not a number", f"non-numeric {role}")
    outside = ~text & ~((numbers > 0) & (numbers <= 1))
    problems.add(
        outside, role, lambda k: f"probability {float(numbers[k])!r} is outside (0, 1]", f"{role} outside (0, 1]"
    )
    return numbers


class LoggedFeedback:
    """A log of semi-bandit feedback over ``space``: row ``k`` says arm ``arms[k]`` saw ``rewards[k]`` in ``rounds[k]``.

    Parameters
    ----------
    space : ActionSpace
    rounds : sequence
        Round ids (any hashable values: ints, timestamps, text); rounds are numbered in order of first appearance.
    arms : sequence
        Arm indices ``0..d-1`` or the space's labels (an edge ``(u, v)`` on graph spaces).
    rewards : sequence of numbers
        The observed outcome of the row's arm (finite).
    inclusion : sequence of numbers in (0, 1], optional
        The logging policy's probability of including the row's arm in that round's action.
    action_propensity : sequence of numbers in (0, 1], optional
        The logging policy's probability of the round's whole logged action (equal on a round's rows).
    full_information : bool
        The log holds every arm's outcome every round (the played action is not recorded); rounds are then
        not checked as actions, and :func:`~cmab_milp.replay` feeds a policy the outcomes of its own choice.
    on_bad_rows : ``"raise"`` or ``"drop"``
        Refuse a bad log with a ``ValueError`` naming the row and column (default), or drop the whole
        rounds holding bad rows, counted per reason in ``dropped``.

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> space = cm.Cardinality(3, 2, exact=True)
    >>> log = cm.LoggedFeedback(space, rounds=[0, 0, 1, 1], arms=[0, 1, 1, 2], rewards=[1.0, 0.0, 1.0, 1.0])
    >>> log.n, log.arm_means().tolist()
    (2, [1.0, 0.5, 1.0])
    """

    def __init__(
        self,
        space: ActionSpace,
        rounds: Any,
        arms: Any,
        rewards: Any,
        inclusion: Any = None,
        action_propensity: Any = None,
        *,
        full_information: bool = False,
        on_bad_rows: str = "raise",
        names: RowNames | None = None,
    ):
        if not isinstance(space, ActionSpace):
            raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
        names = RowNames("the arrays") if names is None else names
        problems = Problems(names, on_bad_rows)
        columns = {"round": rounds, "arm": arms, "reward": rewards}
        if inclusion is not None:
            columns["inclusion"] = inclusion
        if action_propensity is not None:
            columns["action_propensity"] = action_propensity
        sizes = {role: len(values) for role, values in columns.items()}
        if len(set(sizes.values())) != 1:
            shown = ", ".join(f"{names.column(r)!r}: {n}" for r, n in sizes.items())
            raise ValueError(f"{names.source}: the columns have different lengths ({shown})")
        n_rows = sizes["round"]
        if n_rows == 0:
            raise ValueError(f"{names.source}: the log is empty (no rows)")
        self.space = space
        self.d = space.d
        self.source = names.source
        self.full_information = bool(full_information)

        codes, keys = factorize(arms)
        arm, unknown = arm_codes(space, keys, codes)
        arm[codes < 0] = -1
        problems.add(
            arm < 0, "arm", lambda k: unknown.get(int(codes[k]), "the arm is missing"), "unknown or missing arm"
        )
        reward, text = number_column(rewards)
        problems.add(text, "reward", lambda k: f"{_item(rewards, k)!r} is not a number", "non-numeric reward")
        problems.add(
            ~text & ~np.isfinite(reward), "reward", lambda k: f"{reward[k]} is not a finite number", "NaN or inf reward"
        )
        incl = None if inclusion is None else _probabilities(inclusion, "inclusion", problems)
        prop = None if action_propensity is None else _probabilities(action_propensity, "action_propensity", problems)
        problems.add(_missing(rounds), "round", lambda k: "the round id is missing", "missing round id")

        round_code, round_ids = factorize(rounds)
        self._all_round_ids = round_ids
        keep = ~problems.bad_rows(n_rows)
        if not keep.all():
            keep &= ~np.isin(round_code, round_code[~keep])
        rows = np.flatnonzero(keep)
        rows = self._sorted_rows(rows, round_code, arm, prop, problems)
        if problems.masks:
            dropped_rows = problems.bad_rows(n_rows)
            rows = rows[~np.isin(round_code[rows], np.unique(round_code[dropped_rows]))]
        self.dropped: dict[str, int] = problems.dropped_rounds(round_code)
        if rows.size == 0:
            raise ValueError(f"{names.source}: every round was dropped ({self._dropped_text()})")
        sorted_codes = round_code[rows]  # non-decreasing: rows are sorted by round
        first = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]
        used = sorted_codes[first]
        self.round_of_row = np.cumsum(first, dtype=np.int64) - 1
        #: The original id of each round, in order.
        self.round_ids = np.asarray(round_ids, dtype=object)[used]
        self.n = int(used.size)
        self.arm = arm[rows]
        self.reward = reward[rows]
        self.inclusion = None if incl is None else incl[rows]
        self.offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(np.bincount(self.round_of_row, minlength=self.n), out=self.offsets[1:])
        self.action_propensity = None if prop is None else prop[rows][self.offsets[:-1]]
        #: Row number (as read) of each kept row, for messages.
        self.source_rows = rows
        self.names = names
        del self._all_round_ids

    # ----------------------------------------------------------- building
    def _sorted_rows(
        self, rows: np.ndarray, round_code: np.ndarray, arm: np.ndarray, prop: np.ndarray | None, problems: Problems
    ) -> np.ndarray:
        """``rows`` sorted by (round, arm), after the checks that need the sort: duplicates, actions, propensities."""
        rc, ar = round_code[rows], arm[rows]
        step_r, step_a = np.diff(rc), np.diff(ar)
        if not ((step_r >= 0).all() and ((step_r > 0) | (step_a > 0)).all()):  # logs are usually sorted already
            order = np.argsort(rc * (self.d + 1) + ar, kind="stable")
            rows, rc, ar = rows[order], rc[order], ar[order]
        same_round = rc[1:] == rc[:-1]
        duplicate = np.zeros(rows.size, bool)
        duplicate[1:] = same_round & (ar[1:] == ar[:-1])
        if duplicate.any():
            where = rows[duplicate]
            first = {int(rows[k]): int(rows[k - 1]) for k in np.flatnonzero(duplicate)}
            k = int(where.min())
            problems.fail(
                k,
                "arm",
                f"arm {self.space.label_of(int(arm[k]))!r} appears twice in round "
                f"{self._round_name(round_code[k])} (also {problems.names.row(first[k])})",
                "duplicate (round, arm)",
                np.isin(round_code, rc[duplicate]),
            )
        if prop is not None:
            differs = np.zeros(rows.size, bool)
            differs[1:] = same_round & (prop[rows][1:] != prop[rows][:-1])
            if differs.any():
                k = int(rows[differs].min())
                problems.fail(
                    k,
                    "action_propensity",
                    f"{float(prop[k])!r} differs from the propensity on the round's other rows (one per logged action)",
                    "action_propensity differs within a round",
                    np.isin(round_code, rc[differs]),
                )
        self._check_actions(rows, round_code, arm, problems)
        return rows

    def _round_name(self, code: int) -> str:
        value = self._all_round_ids[int(code)]
        return repr(value.item() if isinstance(value, np.generic) else value)

    def _check_actions(self, rows: np.ndarray, round_code: np.ndarray, arm: np.ndarray, problems: Problems) -> None:
        """Each round's arms form an action (once per distinct action), or every arm (full information)."""
        if rows.size == 0:
            return
        rc = round_code[rows]
        starts = np.flatnonzero(np.r_[True, rc[1:] != rc[:-1]])
        sizes = np.diff(np.r_[starts, rows.size])
        if self.full_information:
            short = sizes != self.d
            if short.any():
                j = int(np.flatnonzero(short)[0])
                problems.fail(
                    int(rows[starts[j]]),
                    "arm",
                    f"its round holds {int(sizes[j])} of the {self.d} arms; a full-information log "
                    "holds every arm's outcome in every round",
                    "round without every arm (full information)",
                    np.isin(round_code, rc[starts[short]]),
                )
            return
        padded = np.full((starts.size, int(sizes.max())), -1, np.int64)
        padded[np.repeat(np.arange(starts.size), sizes), np.arange(rows.size) - np.repeat(starts, sizes)] = arm[rows]
        distinct, inverse = distinct_actions(padded)
        bad_distinct = np.flatnonzero(outside(self.space, distinct))
        if not bad_distinct.size:
            return
        bad_round = np.isin(inverse, bad_distinct)
        j = int(np.flatnonzero(bad_round)[0])
        labels = [self.space.label_of(int(a)) for a in padded[j][padded[j] >= 0]]
        hint = (
            "; a log holding every arm's outcome each round is read with full_information=True"
            if sizes[j] == self.d
            else ""
        )
        problems.fail(
            int(rows[starts[j]]),
            "arm",
            f"the arms of round {self._round_name(rc[starts[j]])}, {labels}, are not an action of the space{hint}",
            "action outside the space",
            np.isin(round_code, rc[starts[bad_round]]),
        )

    def _dropped_text(self) -> str:
        return ", ".join(f"{n} for {reason}" for reason, n in self.dropped.items()) or "none"

    # ----------------------------------------------------------- views
    def __len__(self) -> int:
        return self.n

    @property
    def n_rows(self) -> int:
        """Number of (round, arm) rows kept."""
        return int(self.arm.size)

    @cached_property
    def _distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct logged actions ``(k, d)`` and each round's index among them."""
        padded = np.full((self.n, int(np.diff(self.offsets).max())), -1, np.int64)
        padded[self.round_of_row, np.arange(self.n_rows) - self.offsets[self.round_of_row]] = self.arm
        distinct, inverse = distinct_actions(padded)
        return as_bool_actions(distinct, self.d), inverse

    @property
    def actions(self) -> np.ndarray:
        """The distinct logged actions, one per row of a ``(k, d)`` bool matrix (see :attr:`action_ids`)."""
        return self._distinct[0]

    @property
    def action_ids(self) -> np.ndarray:
        """For each round, the row of :attr:`actions` it played."""
        return self._distinct[1]

    def action(self, t: int) -> np.ndarray:
        """The action logged in round ``t`` (``0..n-1``), bool ``(d,)``."""
        a = np.zeros(self.d, bool)
        a[self.arm[self.offsets[t] : self.offsets[t + 1]]] = True
        return a

    def outcomes(self, t: int) -> np.ndarray:
        """Round ``t``'s outcomes, shape ``(d,)``, NaN for arms not in the round."""
        y = np.full(self.d, np.nan)
        sl = slice(self.offsets[t], self.offsets[t + 1])
        y[self.arm[sl]] = self.reward[sl]
        return y

    def round_rewards(self) -> np.ndarray:
        """Each round's whole-action reward: the sum of its rows' outcomes (linear reward)."""
        return np.bincount(self.round_of_row, weights=self.reward, minlength=self.n)

    def arm_counts(self) -> np.ndarray:
        """How many rounds included each arm."""
        return np.bincount(self.arm, minlength=self.d)

    def inclusion_or_frequency(self) -> tuple[np.ndarray, bool]:
        """Each row's inclusion probability: as logged, else its arm's inclusion frequency; and whether logged."""
        if self.inclusion is not None:
            return self.inclusion, True
        return (self.arm_counts() / self.n)[self.arm], False

    def arm_means(self) -> np.ndarray:
        """Per-arm mean outcome, each observation weighted by ``1 / inclusion`` (NaN for an arm never seen).

        With constant inclusion per arm (or none logged) this is the plain mean of the arm's outcomes;
        otherwise it is the self-normalised importance-weighted mean, which corrects rounds where the
        logging policy favoured the arm.
        """
        weights = 1.0 / self.inclusion if self.inclusion is not None else np.ones(self.n_rows)
        total = np.bincount(self.arm, weights=weights * self.reward, minlength=self.d)
        mass = np.bincount(self.arm, weights=weights, minlength=self.d)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mass > 0, total / np.where(mass > 0, mass, 1.0), np.nan)

    def __repr__(self) -> str:
        known = [name for name in ("inclusion", "action_propensity") if getattr(self, name) is not None]
        extra = f", with {' and '.join(known)}" if known else ""
        full = ", full information" if self.full_information else ""
        dropped = f"; dropped rounds: {self._dropped_text()}" if self.dropped else ""
        return (
            f"LoggedFeedback({self.source}: {self.n:,} rounds, {self.n_rows:,} rows over d={self.d} arms"
            f"{extra}{full}{dropped})"
        )

    # ----------------------------------------------------------- reading
    @classmethod
    def from_csv(
        cls,
        path: Any,
        space: ActionSpace,
        *,
        round: str = "round",
        arm: str | tuple[str, str] = "arm",
        reward: str = "reward",
        inclusion: str | None = None,
        action_propensity: str | None = None,
        full_information: bool = False,
        on_bad_rows: str = "raise",
    ) -> LoggedFeedback:
        """Read a log from the named columns of a CSV file (or Parquet: ``.parquet`` / ``.pq``).

        ``arm`` names one column (indices or labels) or two (an edge ``(u, v)`` per row); ``inclusion`` and
        ``action_propensity`` name their columns when the log has them. Needs pandas (and pyarrow for
        Parquet): ``pip install 'cmab_milp[data]'``. Rows are named in messages by their file line.
        """
        from .reading import read_columns

        columns = read_columns(
            path, round=round, arm=arm, reward=reward, inclusion=inclusion, action_propensity=action_propensity
        )
        return cls(
            space,
            **columns.arrays,
            full_information=full_information,
            on_bad_rows=on_bad_rows,
            names=columns.names,
        )
