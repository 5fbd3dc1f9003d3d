"""Results from worker processes share one copy of each string (pipeline.shared.Strings)."""

from __future__ import annotations

import collections
import dataclasses
import pickle

import numpy as np

from perflint.findings import RuleStatus, SkippedFile, TraceResult
from perflint.pipeline import Outcome
from perflint.pipeline.shared import Strings


def _result(rank: int) -> list[Outcome]:
    """One rank's outcome as a worker sends it: pickled, so every string is a fresh copy."""
    statuses = [RuleStatus("STRAG001", "distributed.straggler-rank", "warning", "passed", None, 0)]
    t = TraceResult(f"rank{rank}.json", rank, {"name": "H100"}, {"steps": {"count": 3}}, statuses=statuses)
    t.rank_row = {"rank": rank, "kernel": "ncclKernel_AllReduce", "shape": ("x", "y")}
    return pickle.loads(pickle.dumps([Outcome(t.path, result=t)]))


def test_equal_strings_become_one_object_across_results() -> None:
    a, b = _result(0), _result(1)
    assert a[0].result.statuses[0].name is not b[0].result.statuses[0].name  # as unpickled
    want = pickle.dumps(b)
    strings = Strings()
    a, b = strings(a), strings(b)
    ta, tb = a[0].result, b[0].result
    assert ta.statuses[0].name is tb.statuses[0].name
    assert ta.rank_row["kernel"] is tb.rank_row["kernel"]
    assert next(iter(ta.metrics["steps"])) is next(iter(tb.metrics["steps"]))  # dict keys too
    assert ta.rank_row["shape"][0] is tb.rank_row["shape"][0]  # inside tuples
    assert pickle.dumps(b) == want  # same content, same order


def test_an_object_reached_twice_stays_one() -> None:
    shared = {"ranks": [1, 2]}
    x = pickle.loads(pickle.dumps({"a": shared, "b": shared, "l": [shared, shared]}))
    y = Strings()(x)
    assert y["a"] is y["b"] is y["l"][0] is y["l"][1]


def test_other_kinds_are_left_as_they_came() -> None:
    arr = np.arange(3)
    dd = collections.defaultdict(list, {"k": ["v"]})
    Point = collections.namedtuple("Point", "x y")
    frozen = SkippedFile("a.json", "excluded")
    got = Strings()({"arr": arr, "dd": dd, "pt": Point("a", "b"), "frozen": frozen, "set": {"s"}})
    assert got["arr"] is arr and got["dd"] is dd and type(got["dd"]) is collections.defaultdict
    assert type(got["pt"]) is Point
    assert dataclasses.astuple(got["frozen"]) == ("a.json", "excluded")  # a frozen dataclass is walked too
    assert got["set"] == {"s"}
