"""Saved learners written before the catalogue of kinds (commit 6798ab4) still load and continue identically.

The files in ``data/base_learners/`` were written by that code (``data/make_base_learners.py``): graph spaces'
options under ``"options"``, labels applied after building, every space kind written by its own branch. Each must
load with today's reader and select exactly what the original learner selected next (``expected.json``).
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

import cmab_milp as cm

DATA = pathlib.Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from make_base_learners import next_picks  # noqa: E402  (the same continuation as the files recorded)

EXPECTED = json.loads((DATA / "base_learners" / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_learner_saved_by_the_base_code_loads_and_continues_identically(name: str) -> None:
    policy = cm.load_policy(DATA / "base_learners" / f"{name}.npz")
    assert next_picks(policy) == EXPECTED[name]


def test_old_graph_options_and_labels_are_rebuilt() -> None:
    paths = cm.load_policy(DATA / "base_learners" / "cucb_stpaths_options.npz").space
    assert paths.flow is True and paths.source == "s" and paths.target == "t"
    labelled = cm.load_policy(DATA / "base_learners" / "aroq_cardinality_labels.npz").space
    assert labelled.labels == list("abcde")
    rules = cm.load_policy(DATA / "base_learners" / "aroqcov_rules.npz").space
    assert rules.labels == ["a", "b", "c", "e"] and rules.m == 3


def test_a_resaved_old_learner_reads_back_the_same(tmp_path: pathlib.Path) -> None:
    for name in sorted(EXPECTED):
        old = cm.load_policy(DATA / "base_learners" / f"{name}.npz")
        old.save(tmp_path / "again.npz")
        again = cm.load_policy(tmp_path / "again.npz")
        assert repr(again) == repr(old) and again.space.labels == old.space.labels
