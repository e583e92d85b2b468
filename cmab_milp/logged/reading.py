"""Read a logged-feedback table from a CSV or Parquet file with pandas (the optional extra ``[data]``).

Only the named columns are read; a missing column is refused with the
columns the file has and the closest names ("did you mean"); an empty file
or a file without the columns is refused naming the file. Rows are named in
messages by their line in a CSV file (the header is line 1) and by their
index in a Parquet file.

Example
-------
>>> import os, tempfile
>>> import cmab_milp as cm
>>> path = os.path.join(tempfile.mkdtemp(), "log.csv")
>>> _ = open(path, "w").write("round,arm,reward\\n1,0,0.5\\n1,2,1.0\\n2,1,0.0\\n")
>>> log = cm.LoggedFeedback.from_csv(path, cm.Cardinality(3, 2))
>>> log.n, log.n_rows
(2, 3)
>>> cm.LoggedFeedback.from_csv(path, cm.Cardinality(3, 2), reward="rewards")
Traceback (most recent call last):
...
ValueError: log.csv: no column 'rewards' (the columns are 'round', 'arm', 'reward'); did you mean 'reward'?
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._names import close_names, shown_names
from .checks import RowNames

__all__ = ["PARQUET_SUFFIXES", "LogColumns", "need_pandas", "read_columns"]

#: File name endings read as Parquet (everything else is read as CSV).
PARQUET_SUFFIXES = (".parquet", ".pq")


def need_pandas() -> Any:
    """The ``pandas`` module, or an ``ImportError`` saying which extra to install."""
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "reading a log file needs pandas (and pyarrow for Parquet): pip install 'cmab_milp[data]'"
        ) from None
    return pandas


def _columns_of(path: Path, parquet: bool, pd: Any) -> list[str]:
    if parquet:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("reading a Parquet log needs pyarrow: pip install 'cmab_milp[data]'") from None
        return list(pq.read_schema(path).names)
    try:
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path.name}: the log is empty (no header, no rows)") from None


@dataclass
class LogColumns:
    """The columns of a log file as arrays (keyword arguments of ``LoggedFeedback``) and how to name its rows."""

    arrays: dict[str, Any]
    names: RowNames


def read_columns(
    path: str | os.PathLike,
    *,
    round: str = "round",
    arm: str | tuple[str, str] = "arm",
    reward: str = "reward",
    inclusion: str | None = None,
    action_propensity: str | None = None,
) -> LogColumns:
    """The named columns of a CSV or Parquet file, read with pandas (see ``LoggedFeedback.from_csv``).

    ``arm`` names one column (arm indices or labels) or two (an edge ``(u, v)`` per row).
    """
    pd = need_pandas()
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no log file {str(path)!r}")
    parquet = path.suffix.lower() in PARQUET_SUFFIXES
    arm_columns = (arm,) if isinstance(arm, str) else tuple(arm)
    if not arm_columns or len(arm_columns) > 2 or not all(isinstance(c, str) for c in arm_columns):
        raise ValueError(f"arm names one column or two (an edge's ends), got {arm!r}")
    wanted = {"round": round, "reward": reward}
    if inclusion is not None:
        wanted["inclusion"] = inclusion
    if action_propensity is not None:
        wanted["action_propensity"] = action_propensity
    have = _columns_of(path, parquet, pd)
    for name in (round, *arm_columns, reward, inclusion, action_propensity):
        if name is not None and name not in have:
            near = close_names(name, have, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in near)}?" if near else ""
            raise ValueError(f"{path.name}: no column {name!r} (the columns are {shown_names(have)}){hint}")
    columns = list(dict.fromkeys([round, *arm_columns, *wanted.values()]))
    if parquet:
        frame = pd.read_parquet(path, columns=columns)
    else:
        frame = pd.read_csv(path, usecols=columns, skipinitialspace=True)
    if len(frame) == 0:
        raise ValueError(f"{path.name}: the log is empty (no rows)")
    if len(arm_columns) == 1:
        arms: Any = frame[arm_columns[0]].to_numpy()
    else:
        pairs = pd.MultiIndex.from_arrays([frame[c] for c in arm_columns])
        arms = PairColumn(pairs)
    roles = {"round": round, "arm": arm_columns[0] if len(arm_columns) == 1 else "/".join(arm_columns)}
    roles.update(wanted)
    names = RowNames(path.name, roles, None if parquet else 2)
    arrays = {
        "rounds": frame[round].to_numpy(),
        "arms": arms,
        "rewards": frame[reward].to_numpy(),
        "inclusion": None if inclusion is None else frame[inclusion].to_numpy(),
        "action_propensity": None if action_propensity is None else frame[action_propensity].to_numpy(),
    }
    return LogColumns(arrays, names)


class PairColumn:
    """Two columns read as one column of ``(u, v)`` keys, factorised without building tuples row by row."""

    def __init__(self, pairs: Any):
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def factorize(self) -> tuple[np.ndarray, list]:
        codes, uniques = self.pairs.factorize()
        return np.asarray(codes, np.int64), list(uniques)
