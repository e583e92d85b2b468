"""What a new user tripped over in the first hour (issue 27): each finding, checked against its plain truth."""

from __future__ import annotations

import numpy as np
import pytest

import cmab_milp as cm


# ---------------------------------------------------------------- 1. outcomes by label
@pytest.mark.parametrize(
    "make",
    [
        lambda: cm.Cardinality(4, 2, labels=["a", "b", "c", "d"]),
        lambda: cm.Cardinality(4, 2).with_labels(["a", "b", "c", "d"]).with_conflicts([("a", "c")]),
        lambda: cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1]).with_labels(["a", "b", "c", "d"]),
    ],
)
def test_observe_takes_labels_on_labelled_non_graph_spaces(make):
    space = make()
    by_label = cm.CUCB(space, 100, oracle="enumerate")
    by_index = cm.CUCB(space, 100, oracle="enumerate")
    action = by_label.select()
    assert np.array_equal(action, by_index.select())
    played = np.flatnonzero(action)
    values = {int(k): 0.1 + 0.2 * k for k in played}
    by_label.observe(action, {space.labels_of(np.eye(space.d, dtype=bool)[k])[0]: v for k, v in values.items()})
    by_index.observe(action, values)
    assert np.array_equal(by_label.index.counts, by_index.index.counts)
    assert np.array_equal(by_label.index.sums, by_index.index.sums)
    assert by_label.index.counts.sum() == len(played)
    with pytest.raises(ValueError, match="'zz'"):
        by_label.observe(by_label.select(), {"zz": 1.0})
