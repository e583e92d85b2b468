"""The logged-feedback table: what it holds, and every bad log refused with its row and column (or dropped)."""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm

pd = pytest.importorskip("pandas", reason="log files are read with pandas (the [data] extra)")

HEADER = "round,arm,reward,p\n"
GOOD = ["1,a,0.5,0.5", "1,b,1.0,0.5", "2,c,0.0,0.5", "2,a,1,0.5"]


def labelled() -> cm.ActionSpace:
    return cm.Cardinality(3, 2).with_labels(["a", "b", "c"])


def write(tmp_path, lines: list[str], header: str = HEADER, name: str = "log.csv"):
    path = tmp_path / name
    path.write_text(header + "".join(line + "\n" for line in lines))
    return path


def test_rows_sorted_by_round_then_arm_rounds_in_order_of_appearance():
    space = labelled()
    log = cm.LoggedFeedback(space, ["x", "y", "x", "y"], ["c", "b", "a", 0], [1.0, 2.0, 3.0, 4.0])
    assert log.n == 2 and log.round_ids.tolist() == ["x", "y"]
    assert log.arm.tolist() == [0, 2, 0, 1] and log.reward.tolist() == [3.0, 1.0, 4.0, 2.0]
    assert log.action(1).tolist() == [True, True, False]
    assert log.round_rewards().tolist() == [4.0, 6.0]
    assert log.arm_counts().tolist() == [2, 1, 1]
    assert np.isnan(log.outcomes(0)[1]) and log.outcomes(0)[2] == 1.0
    assert sorted(map(tuple, log.actions.astype(int).tolist())) == [(1, 0, 1), (1, 1, 0)]


def test_graph_spaces_take_edges_and_from_csv_reads_two_columns(tmp_path):
    space = cm.Matchings(nx.complete_bipartite_graph(2, 2))
    path = write(tmp_path, ["0,0,2,1", "0,1,3,0", "1,0,3,1"], header="round,u,v,reward\n")
    log = cm.LoggedFeedback.from_csv(path, space, arm=("u", "v"))
    assert log.n == 2 and [space.label_of(int(a)) for a in log.arm] == [(0, 2), (1, 3), (0, 3)]
    bad = write(tmp_path, ["0,0,2,1", "0,1,2,0"], header="round,u,v,reward\n", name="bad.csv")
    with pytest.raises(ValueError, match=r"bad.csv: line 2, column 'u/v': the arms of round 0, \[\(0, 2\), \(1, 2\)\]"):
        cm.LoggedFeedback.from_csv(bad, space, arm=("u", "v"))


def test_arrays_take_edges_as_tuples_lists_or_a_two_column_array():
    space = cm.Matchings(nx.complete_bipartite_graph(2, 2))
    for arms in ([(0, 2), (1, 3), (3, 0)], [[0, 2], [1, 3], [3, 0]], np.array([[0, 2], [1, 3], [3, 0]])):
        log = cm.LoggedFeedback(space, [0, 0, 1], arms, [1.0, 0.0, 1.0])
        assert [space.label_of(int(a)) for a in log.arm] == [(0, 2), (1, 3), (0, 3)]


def test_full_information_logs_hold_every_arm_every_round():
    space = cm.Cardinality(3, 1, exact=True)
    rounds, arms = np.nonzero(np.ones((4, 3)))
    log = cm.LoggedFeedback(space, rounds, arms, np.arange(12.0), full_information=True)
    assert log.full_information and log.n == 4
    with pytest.raises(ValueError, match="full_information=True"):
        cm.LoggedFeedback(space, rounds, arms, np.arange(12.0))
    with pytest.raises(ValueError, match=r"row 9, column 'arm': its round holds 2 of the 3 arms"):
        cm.LoggedFeedback(space, rounds[:-1], arms[:-1], np.arange(11.0), full_information=True)


BAD_LOGS = [
    # (rows, message): line N is the file line (the header is line 1)
    (["1,a,0.5,0.5", "1,z,1.0,0.5"], r"line 3, column 'arm': unknown arm 'z'"),
    (["1,a,0.5,0.5", "2,aa,1.0,0.5"], r"line 3, column 'arm': unknown arm 'aa' .*did you mean 'a'"),
    (["1,a,0.5,0.5", "2,7,1.0,0.5"], r"line 3, column 'arm': arm index 7 is outside 0..2"),
    (["1,a,0.5,0.5", "1,b,1.0,0.5", "1,c,0,0.5"], r"line 2, column 'arm': the arms of round 1, \['a', 'b', 'c'\], are"),
    (
        ["1,a,0.5,0.5", "2,b,1.0,0.5", "2,b,0.0,0.5"],
        r"line 4, column 'arm': arm 'b' appears twice in round 2 \(also line 3\)",
    ),
    (["1,a,0.5,0.5", "2,b,abc,0.5"], r"line 3, column 'reward': 'abc' is not a number"),
    (["1,a,0.5,0.5", "2,b,,0.5"], r"line 3, column 'reward': nan is not a finite number"),
    (["1,a,0.5,0.5", "2,b,inf,0.5"], r"line 3, column 'reward': inf is not a finite number"),
    (["1,a,0.5,0.5", "2,b,1,1.5"], r"line 3, column 'p': probability 1.5 is outside \(0, 1\]"),
    (["1,a,0.5,0", "2,b,1,0.5"], r"line 2, column 'p': probability 0.0 is outside \(0, 1\]"),
    (["1,a,0.5,0.5", "2,b,1,x"], r"line 3, column 'p': 'x' is not a number"),
    (["1,a,0.5,0.5", ",b,1,0.5"], r"line 3, column 'round': the round id is missing"),
]


@pytest.mark.parametrize(("rows", "message"), BAD_LOGS)
def test_every_bad_log_is_refused_in_one_line_naming_the_row_and_column(tmp_path, rows, message):
    path = write(tmp_path, rows)
    with pytest.raises(ValueError, match=message) as info:
        cm.LoggedFeedback.from_csv(path, labelled(), inclusion="p")
    assert str(info.value).startswith("log.csv: ") and "\n" not in str(info.value)


def test_arrays_name_rows_by_index_and_columns_by_parameter():
    with pytest.raises(ValueError, match=r"the arrays: row 1, column 'reward': nan is not a finite number"):
        cm.LoggedFeedback(labelled(), [1, 2], ["a", "b"], [0.5, float("nan")])
    with pytest.raises(ValueError, match=r"row 0, column 'inclusion': probability -0.1 is outside"):
        cm.LoggedFeedback(labelled(), [1], ["a"], [0.5], inclusion=[-0.1])
    with pytest.raises(ValueError, match=r"row 1, column 'action_propensity': 0.3 differs"):
        cm.LoggedFeedback(labelled(), [1, 1], ["a", "b"], [0.5, 1.0], action_propensity=[0.5, 0.3])
    with pytest.raises(ValueError, match="different lengths"):
        cm.LoggedFeedback(labelled(), [1, 2], ["a"], [0.5, 1.0])
    with pytest.raises(ValueError, match="the log is empty"):
        cm.LoggedFeedback(labelled(), [], [], [])


def test_missing_columns_say_did_you_mean_and_empty_files_are_refused(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(ValueError, match=r"log.csv: no column 'rewards' .*did you mean 'reward'\?"):
        cm.LoggedFeedback.from_csv(path, labelled(), reward="rewards", inclusion="p")
    with pytest.raises(ValueError, match=r"no column 'prob'"):
        cm.LoggedFeedback.from_csv(path, labelled(), inclusion="prob")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.csv: the log is empty"):
        cm.LoggedFeedback.from_csv(empty, labelled())
    header_only = write(tmp_path, [], name="header.csv")
    with pytest.raises(ValueError, match=r"header\.csv: the log is empty"):
        cm.LoggedFeedback.from_csv(header_only, labelled())
    with pytest.raises(ValueError, match="no log file"):
        cm.LoggedFeedback.from_csv(tmp_path / "nothing.csv", labelled())


def test_drop_mode_drops_whole_rounds_and_says_why(tmp_path):
    rows = [*GOOD, "3,a,abc,0.5", "3,b,1,0.5", "4,z,1,0.5", "5,a,1,0.5", "5,a,0,0.5", "6,a,1,0.5", "6,b,1,0.5"]
    rows += ["6,c,0,0.5"]
    path = write(tmp_path, rows)
    log = cm.LoggedFeedback.from_csv(path, labelled(), inclusion="p", on_bad_rows="drop")
    assert log.round_ids.tolist() == [1, 2]
    assert log.dropped == {
        "non-numeric reward": 1,
        "unknown or missing arm": 1,
        "duplicate (round, arm)": 1,
        "action outside the space": 1,
    }
    assert "dropped rounds" in repr(log)
    with pytest.raises(ValueError, match="every round was dropped"):
        cm.LoggedFeedback(labelled(), [1], ["z"], [0.5], on_bad_rows="drop")
    with pytest.raises(ValueError, match="on_bad_rows"):
        cm.LoggedFeedback(labelled(), [1], ["a"], [0.5], on_bad_rows="skip")


def test_parquet_reads_the_same_log(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the [data] extra)")
    csv = write(tmp_path, GOOD)
    frame = pd.read_csv(csv)
    frame.to_parquet(tmp_path / "log.parquet")
    a = cm.LoggedFeedback.from_csv(csv, labelled(), inclusion="p")
    b = cm.LoggedFeedback.from_csv(tmp_path / "log.parquet", labelled(), inclusion="p")
    assert a.arm.tolist() == b.arm.tolist() and a.reward.tolist() == b.reward.tolist()
    frame.loc[1, "reward"] = np.inf
    frame.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad.parquet: row 1, column 'reward': inf"):
        cm.LoggedFeedback.from_csv(tmp_path / "bad.parquet", labelled(), inclusion="p")


def test_without_pandas_from_csv_names_the_extra(tmp_path, monkeypatch):
    path = write(tmp_path, GOOD)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'cmab_milp\[data\]'"):
        cm.LoggedFeedback.from_csv(path, labelled())
    log = cm.LoggedFeedback(labelled(), [1, 1, 2], ["a", "b", "c"], [0.5, 1.0, 0.0])  # arrays need no pandas
    assert log.n == 2 and log.round_ids.tolist() == [1, 2]
