"""Saved learners record the versions that wrote them; other versions are read and named (issue 36, item 6)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.persistence import SavedVersionsWarning
from cmab_milp.provenance import provenance


def played(policy, rounds: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        a = policy.select()
        policy.observe(a, np.where(a, rng.random(policy.d), np.nan))
    return policy


def rewrite_header(path, change) -> None:
    """Rewrite the JSON header of a saved file through ``change(header)``."""
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(bytes(arrays.pop("header")).decode())
    change(header)
    with open(path, "wb") as f:
        np.savez(f, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)


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
