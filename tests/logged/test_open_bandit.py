"""The Open Bandit Dataset reader, on a small fixture in the dataset's layout that the test writes itself.

Where the real data is at hand (the full dataset, or the samples of the obp 0.4.1 wheel unpacked, which hold
10,000 rows per campaign), set ``OBD_FOLDER`` to the folder holding ``random/`` and ``bts/`` to read it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm

pytest.importorskip("pandas", reason="log files are read with pandas (the [data] extra)")

ITEMS, POSITIONS = 6, (1, 2, 3)


def ctr(item: int, position: int) -> float:
    """Known click rates: better items and higher positions click more."""
    return 0.02 + 0.03 * item / (ITEMS - 1) + 0.02 * (3 - position)


def write_fixture(folder: Path, logging: str, rows: int, seed: int) -> None:
    """``rows`` impressions in the dataset's columns (an unnamed index first, user features after)."""
    rng = np.random.default_rng(seed)
    base = folder / logging / "all"
    base.mkdir(parents=True, exist_ok=True)
    position = rng.choice(POSITIONS, rows)
    if logging == "random":
        probs = np.full((3, ITEMS), 1 / ITEMS)
    else:  # a fixed non-uniform policy per position, as a Bernoulli-TS log would have
        probs = rng.dirichlet(np.full(ITEMS, 2.0), size=3)
    item = np.array([rng.choice(ITEMS, p=probs[p - 1]) for p in position])
    rate = np.array([ctr(i, p) for i, p in zip(item, position, strict=True)])
    click = (rng.random(rows) < rate).astype(int)
    lines = [",timestamp,item_id,position,click,propensity_score,user_feature_0"]
    for k in range(rows):
        lines.append(
            f"{k},2019-11-24 00:00:{k % 60:02d}+00:00,{item[k]},{position[k]},{click[k]},"
            f"{float(probs[position[k] - 1, item[k]])!r},81ce123c"
        )
    (base / "all.csv").write_text("\n".join(lines) + "\n")
    context = [",item_id,item_feature_0"] + [f"{i},{i},{0.1 * i}" for i in range(ITEMS)]
    (base / "item_context.csv").write_text("\n".join(context) + "\n")


@pytest.fixture(scope="module")
def obd(tmp_path_factory):
    folder = tmp_path_factory.mktemp("obd")
    write_fixture(folder, "random", 30000, 0)
    write_fixture(folder, "bts", 30000, 1)
    return folder


def test_the_space_matches_items_to_positions_labelled_as_in_the_data(obd):
    space, log = cm.datasets.open_bandit(obd)
    assert (space.d, space.m) == (ITEMS * 3, 3)
    assert space.labels[:4] == [(0, 1), (0, 2), (0, 3), (1, 1)]
    assert space.contains(space.arm_vector({(0, 1): 1, (4, 2): 1, (5, 3): 1}).astype(bool))
    assert not space.contains(space.arm_vector({(0, 1): 1, (0, 2): 1}).astype(bool))  # one item, two positions
    # one impression per row, its arm's inclusion = propensity / positions
    assert log.n == 30000 and log.n_rows == 30000
    np.testing.assert_allclose(log.inclusion, 1 / ITEMS / 3)


@pytest.mark.parametrize("logging", ["random", "bts"])
def test_ips_values_a_matching_in_clicks_per_display(obd, logging):
    space, log = cm.datasets.open_bandit(obd, logging=logging)
    matching = {(5, 1): 1, (4, 2): 1, (3, 3): 1}
    target = space.arm_vector(matching).astype(bool)
    truth = sum(ctr(i, p) for i, p in matching)
    for estimator in ("ips", "snips", "dr"):
        est = cm.offline_value(target, log, estimator=estimator)
        assert abs(est.value - truth) < 4 * est.se, (estimator, est, truth)


def test_bad_folders_and_files_are_refused(tmp_path, obd):
    with pytest.raises(ValueError, match="logging must be one of 'random', 'bts', got 'bst'; did you mean 'bts'"):
        cm.datasets.open_bandit(obd, logging="bst")
    with pytest.raises(ValueError, match="campaign must be one of"):
        cm.datasets.open_bandit(obd, campaign="kids")
    with pytest.raises(ValueError, match="no Open Bandit file"):
        cm.datasets.open_bandit(obd, campaign="men")
    base = tmp_path / "random" / "all"
    base.mkdir(parents=True)
    (base / "all.csv").write_text("item,position,click,propensity_score\n1,1,0,0.5\n")
    with pytest.raises(ValueError, match=r"all.csv: no column 'item_id' .*did you mean 'item'"):
        cm.datasets.open_bandit(tmp_path)
    (base / "all.csv").write_text("item_id,position,click,propensity_score\n1,1,0,0.5\n2,2,0,1.5\n")
    with pytest.raises(ValueError, match=r"line 3, column 'propensity_score': 1.5 is not a probability"):
        cm.datasets.open_bandit(tmp_path)
    (base / "all.csv").write_text("item_id,position,click,propensity_score\n1,1,0,0.5\n2,2,x,0.5\n")
    with pytest.raises(ValueError, match=r"line 3, column 'click': 'x' is not a number"):
        cm.datasets.open_bandit(tmp_path)


@pytest.mark.skipif(not os.environ.get("OBD_FOLDER"), reason="set OBD_FOLDER to the real data's folder")
@pytest.mark.parametrize("logging", ["random", "bts"])
@pytest.mark.parametrize(("campaign", "items"), [("all", 80), ("men", 34), ("women", 46)])
def test_the_real_data_reads(logging, campaign, items):
    space, log = cm.datasets.open_bandit(os.environ["OBD_FOLDER"], campaign, logging)
    assert space.d == 3 * items and sorted({p for _, p in space.labels}) == [1, 2, 3]
    assert log.n == log.n_rows and set(np.unique(log.reward)) <= {0.0, 1.0}
