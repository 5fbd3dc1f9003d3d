"""A finding's identity: rule, subject, the trace's role (its run-varying file-name parts as *) and rank."""

from __future__ import annotations

import numpy as np
import pytest

from perflint.baseline.identity import RUN_ROLE, fingerprint, normalize_name, subject, trace_role


@pytest.mark.parametrize(
    ("name", "role"),
    [
        # tensorboard_trace_handler: {worker_name}.{time in ms}.pt.trace.json, worker_name = {hostname}_{pid}
        ("host_1234.1700000000000.pt.trace.json", "*_*.*.pt.trace.json"),
        ("gpu-node-7.cluster.local_88231.1700000123456.pt.trace.json.gz", "*_*.*.pt.trace.json"),
        ("ip-10-0-0-1_1.1700000000000.pt.trace.json", "*_*.*.pt.trace.json"),  # pid 1 in a container
        # newer torch writes the time in ns
        ("host_1234.1700000000000123456.pt.trace.json", "*_*.*.pt.trace.json"),
        # a worker_name set by the user is kept: it says which worker
        ("worker0.1623143089861.pt.trace.json.gz", "worker0.*.pt.trace.json"),
        ("rank_3.1700000000000.pt.trace.json", "rank_3.*.pt.trace.json"),
        ("gpu_1.1700000000000.pt.trace.json", "gpu_1.*.pt.trace.json"),
        # HTA-style rank-N.Mon_DD_HH_MM_SS.PID.pt.trace.json.gz
        ("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "rank-0.*.*.pt.trace.json"),
        ("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "rank-34.*.*.pt.trace.json"),
        # benchmark_result_PID_TIMESTAMP_trace.json.gz
        ("benchmark_result_2869224_1695835535_trace.json.gz", "benchmark_result_*_*_trace.json"),
        ("libkineto_activities_4711.json", "libkineto_activities_*.json"),
        # anything else is its own name, less .gz
        ("trace.json.gz", "trace.json"),
        ("rank0.json", "rank0.json"),
        ("model_v2.pt.trace.json", "model_v2.pt.trace.json"),
        ("run.12.pt.trace.json", "run.12.pt.trace.json"),  # 12 is no timestamp
    ],
)
def test_normalize_name(name: str, role: str) -> None:
    assert normalize_name(name) == role


def test_the_next_run_of_a_rank_keeps_its_name_and_other_ranks_do_not() -> None:
    assert normalize_name("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz") == normalize_name("rank-0.May_11_09_00_01.77.pt.trace.json")
    assert normalize_name("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz") != normalize_name("rank-1.Apr_03_18_51_38.1103.pt.trace.json.gz")
    assert normalize_name("worker0.1.pt.trace.json") == "worker0.1.pt.trace.json"


@pytest.mark.parametrize(
    ("path", "roots", "role"),
    [
        ("traces/a/host_1.1700000000000.pt.trace.json", ["traces"], "a/*_*.*.pt.trace.json"),
        ("traces/a/host_1.1700000000000.pt.trace.json", ["traces/"], "a/*_*.*.pt.trace.json"),
        ("./x.json.gz", ["."], "x.json"),
        ("/data/run/r.json", ["/"], "data/run/r.json"),
        # a file named on the command line is its own name, wherever it is
        ("traces/a/rank0.json", ["traces/a/rank0.json"], "rank0.json"),
        ("traces/a/rank0.json", ["elsewhere", "traces/a"], "rank0.json"),
        # a directory that only shares a prefix is not the root
        ("traces2/x.json", ["traces"], "x.json"),
    ],
)
def test_trace_role(path: str, roots: list[str], role: str) -> None:
    assert trace_role(path, roots) == role


def test_subject_holds_the_role_of_a_trace_path_never_its_name() -> None:
    row = {"path": "runs/host_1.1700000000000.pt.trace.json", "rank": 3, "time_us": 5.0}
    assert subject(("path", "rank"), row, {}) == ("*_*.*.pt.trace.json", 3)
    assert subject(("path", "rank"), row, {row["path"]: "a/b.json"}) == ("a/b.json", 3)


def test_fingerprint_is_a_function_of_code_subject_role_and_rank() -> None:
    base = fingerprint("UTIL001", (None,), "rank0.json", 0)
    assert base == fingerprint("UTIL001", (None,), "rank0.json", 0)
    assert len({base, fingerprint("UTIL002", (None,), "rank0.json", 0), fingerprint("UTIL001", ("x",), "rank0.json", 0),
                fingerprint("UTIL001", (None,), "rank1.json", 0), fingerprint("UTIL001", (None,), "rank0.json", 1),
                fingerprint("UTIL001", (None,), "rank0.json", None), fingerprint("UTIL001", (None,), RUN_ROLE, 0)}) == 7


def test_fingerprint_does_not_depend_on_how_a_value_was_built() -> None:
    a = fingerprint("DIM001", ("aten::mm", ((8, 3), (3, 5)), 2), "t.json", None)
    b = fingerprint("DIM001", ("aten::mm", [[8, 3], [3, 5]], np.int64(2)), "t.json", None)
    assert a == b
    # Field boundaries count: ("ab", "c") is not ("a", "bc").
    assert fingerprint("X", ("ab", "c"), "t", None) != fingerprint("X", ("a", "bc"), "t", None)
