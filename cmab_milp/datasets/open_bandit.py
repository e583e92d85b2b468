"""The Open Bandit Dataset (ZOZOTOWN fashion e-commerce) as an action space and a logged-feedback table.

The dataset (Saito et al. 2021) logs a recommendation widget showing 3 items
in 3 positions, under two logging policies (``random``: uniform; ``bts``:
Bernoulli Thompson sampling) and three campaigns (``all``: 80 items, ``men``:
34, ``women``: 46). Its layout, the full data as the 10,000-row samples inside
the ``obp`` wheel (``obp/dataset/obd/``)::

    folder/<logging>/<campaign>/<campaign>.csv        # item_id, position, click, propensity_score, ...
    folder/<logging>/<campaign>/item_context.csv      # item_id, item features (optional here)

Positions are numbered as in the data: 1, 2 and 3 (``obp`` renumbers them 0-2
internally; this reader does not).

The space is the bipartite matching of items to positions
(:class:`~cmab_milp.Matchings` of the complete bipartite graph), arms labelled
``(item_id, position)``: a display of 3 distinct items in 3 positions is an
action of 3 arms. Each row of the data is one *impression* (one item at one
position; the rows of a display are not linked), so each row is a round whose
action is its single arm, and the click is its outcome. ``propensity_score``
is the logging policy's probability of the item at that position given the
display; every display yields one impression per position, so the impression's
arm had probability ``propensity_score / 3`` (``/ number of positions``): that
is the row's ``inclusion``. With it, the per-arm estimators value a matching
in **expected clicks per display** (the sum of its 3 arms' click rates).

Example
-------
>>> import os, tempfile
>>> import cmab_milp as cm
>>> folder = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(folder, "random", "all"))
>>> rows = ["timestamp,item_id,position,click,propensity_score"]
>>> rows += [f"t{k},{k % 4},{1 + k % 3},{int(k % 5 == 0)},0.25" for k in range(24)]
>>> _ = open(os.path.join(folder, "random", "all", "all.csv"), "w").write("\\n".join(rows) + "\\n")
>>> space, log = cm.datasets.open_bandit(folder)
>>> space.d, space.m, space.label_of(5), log.n
(12, 3, (1, 3), 24)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from .._names import close_names, shown_names
from ..logged.checks import RowNames
from ..logged.reading import PairColumn, need_pandas
from ..logged.table import LoggedFeedback
from ..spaces.graphs import Matchings

__all__ = ["CAMPAIGNS", "COLUMNS", "LOGGING_POLICIES", "open_bandit"]

#: The campaigns of the dataset.
CAMPAIGNS = ("all", "men", "women")
#: The logging policies: uniform random and Bernoulli Thompson sampling.
LOGGING_POLICIES = ("random", "bts")
#: The columns read from ``<campaign>.csv``.
COLUMNS = ("item_id", "position", "click", "propensity_score")


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        near = close_names(str(value), allowed, n=2)
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        raise ValueError(f"{what} must be one of {', '.join(map(repr, allowed))}, got {value!r}{hint}")
    return value


def matching_space(items: list[int], positions: list[int]) -> Matchings:
    """Matchings of ``items`` to ``positions`` (complete bipartite), arms labelled ``(item, position)``.

    >>> matching_space([7, 9], [1, 2]).labels
    [(7, 1), (7, 2), (9, 1), (9, 2)]
    """
    graph = nx.Graph()
    graph.add_nodes_from(f"item {i}" for i in items)  # items first: arms run item by item
    graph.add_nodes_from(f"position {p}" for p in positions)
    graph.add_edges_from((f"item {i}", f"position {p}") for i in items for p in positions)
    space = Matchings(graph)
    ends = {f"item {i}": i for i in items} | {f"position {p}": p for p in positions}
    labels = []
    for u, v in space.arms:
        item, position = (u, v) if u.startswith("item") else (v, u)
        labels.append((ends[item], ends[position]))
    return space.with_labels(labels)


def open_bandit(
    folder: str | os.PathLike, campaign: str = "all", logging: str = "random"
) -> tuple[Matchings, LoggedFeedback]:
    """The space and log of one campaign and logging policy of the Open Bandit Dataset under ``folder``.

    Items are those of ``item_context.csv`` when the folder has it, else those the log shows; positions
    those the log shows (1-3 in the dataset). Needs pandas (``pip install 'cmab_milp[data]'``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import cmab_milp as cm
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "random" / "all").mkdir(parents=True)
    >>> rows = [",timestamp,item_id,position,click,propensity_score"]
    >>> rows += [f"{k},2019-11-24 00:00:0{k}+00:00,{k % 4},{k % 3 + 1},{k % 2},0.25" for k in range(6)]
    >>> _ = (folder / "random" / "all" / "all.csv").write_text("\\n".join(rows) + "\\n")
    >>> space, log = cm.datasets.open_bandit(folder)
    >>> space.d, space.labels[:2], log.n
    (12, [(0, 1), (0, 2)], 6)
    """
    pd = need_pandas()
    campaign = _choice(campaign, CAMPAIGNS, "campaign")
    logging = _choice(logging, LOGGING_POLICIES, "logging")
    base = Path(folder) / logging / campaign
    path = base / f"{campaign}.csv"
    if not path.is_file():
        raise ValueError(f"no Open Bandit file {str(path)!r} (expected folder/<logging>/<campaign>/<campaign>.csv)")
    try:
        have = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path.name}: the log is empty (no header, no rows)") from None
    for name in COLUMNS:
        if name not in have:
            near = close_names(name, have, n=3)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            raise ValueError(f"{path.name}: no column {name!r} (the columns are {shown_names(have)}){hint}")
    frame = pd.read_csv(path, usecols=list(COLUMNS))
    if len(frame) == 0:
        raise ValueError(f"{path.name}: the log is empty (no rows)")
    names = RowNames(path.name, {"arm": "item_id/position", "reward": "click", "inclusion": "propensity_score"}, 2)
    for column in ("item_id", "position"):
        if frame[column].dtype.kind not in "iu":
            values = pd.to_numeric(frame[column], errors="coerce")
            bad = np.flatnonzero(values.isna().to_numpy() | (values % 1 != 0).to_numpy())
            k = int(bad[0]) if bad.size else 0
            raise ValueError(f"{path.name}: {names.row(k)}, column {column!r}: {frame[column].iloc[k]!r} is not an id")
    context = base / "item_context.csv"
    if context.is_file():
        items = sorted(int(i) for i in pd.read_csv(context, usecols=["item_id"])["item_id"].unique())
    else:
        items = sorted(int(i) for i in frame["item_id"].unique())
    positions = sorted(int(p) for p in frame["position"].unique())
    space = matching_space(items, positions)
    arms = pd.MultiIndex.from_arrays([frame["item_id"], frame["position"]])
    propensity = pd.to_numeric(frame["propensity_score"], errors="coerce").to_numpy(dtype=float)
    outside = np.flatnonzero(~((propensity > 0) & (propensity <= 1)))
    if outside.size:
        k = int(outside[0])
        value = frame["propensity_score"].iloc[k]
        shown = repr(value) if isinstance(value, str) else str(value)
        raise ValueError(
            f"{path.name}: {names.row(k)}, column 'propensity_score': {shown} is not a probability in (0, 1]"
        )
    log = LoggedFeedback(
        space,
        np.arange(len(frame)),
        PairColumn(arms),
        frame["click"].to_numpy(),
        inclusion=propensity / len(positions),
        names=names,
    )
    return space, log
