"""Saved learners record the versions that wrote them; other versions are read and named (issue 36, item 6)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from test_saved_learners import played, rewrite_header  # the saved-learner tests' helpers

import cmab_milp as cm
from cmab_milp.policies.persistence import SavedVersionsWarning
from cmab_milp.provenance import provenance


def _saved(tmp_path):
    path = tmp_path / "p.npz"
    policy = played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5)
    policy.save(path)
    return policy, path


def test_the_header_records_this_process_versions(tmp_path):
    _, path = _saved(tmp_path)
    with np.load(path, allow_pickle=False) as archive:
        header = json.loads(bytes(archive["header"]).decode())
    assert header["provenance"]["software"] == provenance()["software"]


def test_same_versions_load_without_a_warning(tmp_path):
    policy, path = _saved(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        restored = cm.load_policy(path)
    assert np.array_equal(restored.select(), policy.select())


def test_other_versions_are_read_and_named(tmp_path):
    policy, path = _saved(tmp_path)
    rewrite_header(path, lambda h: h["provenance"]["software"].update(numpy="1.26.4"))
    with pytest.warns(SavedVersionsWarning, match=r"numpy 1\.26\.4 -> "):
        restored = cm.load_policy(path)
    assert np.array_equal(restored.select(), policy.select())


def test_a_file_saved_before_versions_were_recorded_is_read(tmp_path):
    policy, path = _saved(tmp_path)
    rewrite_header(path, lambda h: h.pop("provenance"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        restored = cm.load_policy(path)
    assert np.array_equal(restored.select(), policy.select())


@pytest.mark.parametrize("bad", ["1.0", {"software": ["numpy"]}, {"software": {"numpy": 2}}])
def test_a_malformed_provenance_is_refused(tmp_path, bad):
    _, path = _saved(tmp_path)
    rewrite_header(path, lambda h: h.update(provenance=bad))
    with pytest.raises(ValueError, match="provenance"):
        cm.load_policy(path)
