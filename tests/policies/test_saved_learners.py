"""Saved learners: the file format, what is refused at save and at load, and atomic writes.

That a loaded policy continues exactly as the original, for all nine
policies, is checked in ``test_policy_conformance.py``.
"""

from __future__ import annotations

import json
import os
import zipfile

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.persistence import FORMAT_VERSION


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


GRAPH = nx.Graph([("s", "x"), ("x", "t"), ("s", "y"), ("y", "t"), ("x", "y")])
SPACES = {
    "Cardinality": cm.Cardinality(5, 2, exact=True),
    "PartitionMatroid": cm.PartitionMatroid([[0, 1], [2, 3, 4]], [1, 2]),
    "ExplicitActions": cm.ExplicitActions([[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1]]),
    "GraphicMatroid": cm.GraphicMatroid(nx.cycle_graph(5)),
    "SpanningTrees": cm.SpanningTrees(nx.complete_graph(4)),
    "STPaths": cm.STPaths(GRAPH, "s", "t"),
    "STPaths-directed": cm.STPaths(nx.DiGraph([((0, 1), (1, 1)), ((1, 1), (2, 2)), ((0, 1), (2, 2))]), (0, 1), (2, 2)),
    "Matchings": cm.Matchings(nx.complete_bipartite_graph(2, 3), perfect=False),
    "ConstrainedSpace": cm.Cardinality(5, 3).with_constraint([1, 2, 0, 1, 1], "<=", 2),
    "Intersection": cm.Intersection(cm.Cardinality(4, 2), cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1])),
    "ConflictSpace": cm.STPaths(GRAPH, "s", "t").with_conflicts([(("s", "x"), ("y", "t"))]),
    "labelled rules": cm.Cardinality(4, 3, labels=["a", "b", "c", "e"])
    .with_budget({"a": 2, "b": 1}, 2)
    .with_at_least(1, ["c", "e"]),
}


@pytest.mark.parametrize("name", list(SPACES))
def test_every_space_kind_is_stored_as_data(name, tmp_path):
    space = SPACES[name]
    policy = played(cm.AROQ(space, 500, oracle="enumerate"), 20)
    policy.save(tmp_path / "p.npz")
    restored = cm.load_policy(tmp_path / "p.npz")
    assert type(restored.space) is type(space) and list(restored.space.arms) == list(space.arms)
    assert restored.space.labels == space.labels and repr(restored.space) == repr(space)
    assert sorted(map(tuple, restored.space.enumerate().astype(int))) == sorted(
        map(tuple, space.enumerate().astype(int))
    )
    assert np.array_equal(restored.select(), policy.select())


def test_the_file_is_an_npz_with_a_json_header(tmp_path):
    policy = played(cm.SROQCov(cm.Cardinality(4, 2), None, oracle="enumerate"), 30)
    path = tmp_path / "p.npz"
    policy.save(path)
    with zipfile.ZipFile(path) as z:
        assert "header.npy" in z.namelist()
    with np.load(path, allow_pickle=False) as archive:
        header = json.loads(bytes(archive["header"]).decode())
    assert header["format"] == "cmab_milp.policy" and header["version"] == FORMAT_VERSION
    assert header["policy"] == "SROQCov" and header["T"] is None
    assert header["space"] == {"kind": "Cardinality", "d": 4, "m": 2, "exact": False}
    assert header["oracle"] == {"backend": "enumerate", "instance": False, "ties": "off"}
    assert header["state"]["t"] == 31


def test_another_version_is_refused(tmp_path):
    path = tmp_path / "p.npz"
    played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5).save(path)
    rewrite_header(path, lambda h: h.update(version=FORMAT_VERSION + 1))
    with pytest.raises(ValueError, match=f"version {FORMAT_VERSION + 1}"):
        cm.load_policy(path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:200] + bytes(x ^ 0xFF for x in b[200:260]) + b[260:],  # flipped bytes
        lambda b: b"not a zip file at all",
        lambda b: b"",
    ],
)
def test_a_damaged_file_is_refused(damage, tmp_path):
    path = tmp_path / "p.npz"
    played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5).save(path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError, match=r"damaged|not a saved"):
        cm.load_policy(path)


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda h: h.update(policy="os.system"), "unknown policy class"),
        (lambda h: h["space"].update(kind="builtins.eval"), "unknown space kind"),
        (lambda h: h["params"].update(reward="__import__('os')"), "damaged"),
        (lambda h: h.update(format="pickle"), "not a saved cmab_milp policy"),
        (lambda h: h["state"].pop("t"), "state has fields"),
        (lambda h: h["state"]["index"]["__map__"][0][1].update(__array__="a999"), "damaged"),
        (lambda h: h.update(oracle={"backend": "no-such-backend", "instance": False}), "no-such-backend"),
    ],
)
def test_loading_only_uses_the_library_tables(change, fragment, tmp_path):
    path = tmp_path / "p.npz"
    played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5).save(path)
    rewrite_header(path, change)
    with pytest.raises(ValueError, match=fragment):
        cm.load_policy(path)


def test_state_arrays_of_the_wrong_shape_are_refused(tmp_path):
    path = tmp_path / "p.npz"
    played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5).save(path)
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(bytes(arrays["header"]).decode())
    key = header["state"]["epochs"]["__array__"]
    arrays[key] = np.ones(7, np.int64)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(ValueError, match="epochs"):
        cm.load_policy(path)


class MyCardinality(cm.Cardinality):
    pass


def test_what_cannot_be_stored_is_refused_at_save(tmp_path):
    path = tmp_path / "p.npz"
    with pytest.raises(ValueError, match="MyCardinality"):
        cm.AROQ(MyCardinality(4, 2), 10, oracle="enumerate").save(path)
    weird = nx.Graph([(1.5, 2.5), (2.5, 3.5)])
    with pytest.raises(ValueError, match=r"node label 1\.5"):
        cm.AROQ(cm.GraphicMatroid(weird), 10, oracle="enumerate").save(path)
    policy = cm.SDCB(
        cm.Cardinality(3, 1), 10, oracle="enumerate", reward=lambda a, y: (y * a).max(axis=-1), support=[0, 1]
    )
    with pytest.raises(ValueError, match="reward"):
        policy.save(path)

    class MyAROQ(cm.AROQ):
        pass

    with pytest.raises(ValueError, match="MyAROQ"):
        MyAROQ(cm.Cardinality(4, 2), 10, oracle="enumerate").save(path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_saving_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "p.npz"
    policy = played(cm.AROQ(cm.Cardinality(4, 2), 100, oracle="enumerate"), 5)
    policy.save(path)
    old = path.read_bytes()
    played(policy, 5)

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError, match="disk full"):
        policy.save(path)
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["p.npz"]  # old file intact, no temp left
    monkeypatch.undo()
    policy.save(path)
    assert cm.load_policy(path).t == 11 and os.listdir(tmp_path) == ["p.npz"]


def test_an_oracle_object_is_rebuilt_by_name_or_given_at_load(tmp_path):
    space = cm.Cardinality(4, 2)
    path = tmp_path / "p.npz"
    policy = played(cm.AROQ(space, 100, oracle=cm.make_oracle(space, "enumerate")), 5)
    policy.save(path)
    assert cm.load_policy(path).oracle.name == "enumerate"
    given = cm.make_oracle(space, "enumerate")
    restored = cm.load_policy(path, oracle=given)
    assert restored.oracle is given and given.ledger.queries == 0  # a given oracle keeps its own ledger
    rewrite_header(path, lambda h: h["oracle"].update(backend="my-private-solver"))
    with pytest.raises(ValueError, match="pass oracle="):
        cm.load_policy(path)
    assert cm.load_policy(path, oracle="enumerate").t == 6


def test_general_reward_constants_round_trip(tmp_path):
    space = cm.Cardinality(4, 2)
    path = tmp_path / "p.npz"
    policy = played(cm.SROQGR(space, None, oracle="enumerate", reward="threshold:0.8", discretise=5), 40)
    policy.save(path)
    restored = cm.load_policy(path)
    assert restored.params["reward"] == "threshold:0.8" and restored.params["discretise"] == 5
    assert np.array_equal(restored.index.hist, policy.index.hist)
    assert np.array_equal(restored.select(), policy.select())
