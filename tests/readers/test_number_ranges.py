"""Numbers out of range in a trace, on every read path: the whole-file decode, the reference
loop, and small slices through the Python builders and the C scanner (PERFLINT_NATIVE).

A number that does not fit its column (an int beyond int64, a float beyond float64), or a time
that cannot be, is one stderr line naming the file and the field (exit 2). An id or a size that
fits but cannot be (negative, a launch of more threads than exist) is unknown, with a warning;
so is optional metadata out of range (distributedInfo, deviceProperties). `summary --format
json` and `check --format json` write their JSON whatever the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.model import NONE, Trace
from perflint.readers import read_trace
from perflint.readers.kineto import chunked, native_scan
from tests.builder import TraceBuilder

BIG = 18446744073709551623  # 2^64 + 7: found by test_fuzz as a rank

WAYS: dict[str, dict[str, str]] = {
    "whole": {},
    "reference": {"PERFLINT_READER": "reference"},
    "sliced-python": {"PERFLINT_CHUNK_BYTES": "512", "PERFLINT_NATIVE": "0"},
    "sliced-native": {"PERFLINT_CHUNK_BYTES": "512", "PERFLINT_NATIVE": "1"},
}


@pytest.fixture(params=sorted(WAYS))
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test once per read path; the C scanner's must really read slices into columns."""
    name: str = request.param
    if name == "sliced-native" and not native_scan.built():
        pytest.skip("C scanner not built")
    for k, v in WAYS[name].items():
        monkeypatch.setenv(k, v)
    if name == "sliced-native":
        decode = chunked._decode_events
        kinds: list[str] = []

        def spy(buf: Any, lo: int, hi: int) -> Any:
            got = decode(buf, lo, hi)
            kinds.append(type(got).__name__)
            return got

        monkeypatch.setattr(chunked, "_decode_events", spy)
        yield name
        assert {"NativeSlice", "Parts"} & set(kinds), kinds
        return
    yield name


def _builder() -> TraceBuilder:
    b = TraceBuilder(rank=2)
    b.step(1, ts=0, dur=2000)
    b.op("aten::mm", ts=10, dur=300, dims=[[4, 4], [4, 4]], types=["float", "float"], seq=5, fwd_tid=1)
    b.kernel("gemm_kernel", ts=400, dur=50, launch_ts=20)
    b.memcpy(ts=500, dur=10, nbytes=4096, launch_ts=30)
    b.memory(ts=15, nbytes=512, total_allocated=1024, total_reserved=2048)
    b.pyfn("train.py(3): step", ts=5, dur=1000)
    return b


def _first(doc: dict[str, Any], cat: str) -> dict[str, Any]:
    return next(e for e in doc["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X")


def _memory(doc: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in doc["traceEvents"] if e.get("name") == "[memory]")


def _trace(tmp_path: Path, edit: Callable[[dict[str, Any]], Any], name: str = "t.json", text: tuple[str, str] | None = None) -> Path:
    """The small trace with `edit` applied (and `text`: a replacement in the JSON text, for a
    number json.dumps cannot write)."""
    doc = _builder().to_dict()
    edit(doc)
    raw = json.dumps(doc)
    if text is not None:
        assert raw.count(text[0]) == 1
        raw = raw.replace(*text)
    p = tmp_path / name
    p.write_text(raw)
    return p


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, list[str]]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, json.loads(out), [ln for ln in err.splitlines() if ln.startswith("perflint: error:")]


def bad(capsys: pytest.CaptureFixture[str], path: Path, problem: str) -> str:
    """Both commands: exit 2, one line naming `path` and matching `problem`."""
    code, doc, err = _main(capsys, "summary", str(path), "--format", "json", "-j", "1")
    assert (code, doc["traces"], len(err)) == (2, [], 1), err
    line = err[0]
    assert line.startswith(f"perflint: error: {path}: "), line
    assert re.search(problem, line), line
    code, doc, err = _main(capsys, "check", str(path), "--format", "json", "-j", "1")
    assert (code, err) == (2, [line])
    return line


def ok(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[dict[str, Any], Trace]:
    """Both commands read it: the summary's trace, and the trace as read."""
    code, doc, err = _main(capsys, "summary", str(path), "--format", "json", "-j", "1")
    assert (code, err) == (0, [])
    code, report, err = _main(capsys, "check", str(path), "--format", "json", "-j", "1")
    assert code in (0, 1) and err == [] and len(report["traces"]) == 1
    return doc["traces"][0], read_trace(str(path))


def test_the_trace_reads_clean(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: None))
    views = ("memory is null",)  # a view the trace has no data for, not a read problem
    assert summary["rank"] == 2 and [w for w in summary["warnings"] if not w.endswith(views)] == [] and trace.world_size == 3
    assert trace.devices[0].sm_count == 108 and trace.devices[0].warp_size == 32


# --------------------------------------------------------------------------- metadata


@pytest.mark.parametrize("rank", [BIG, -(2**70), 2**31, -3], ids=["2^64+7", "-2^70", "2^31", "-3"])
def test_rank_out_of_range_is_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, rank: int) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: d["distributedInfo"].update(rank=rank, world_size=BIG)))
    assert summary["rank"] is None and trace.rank is None and trace.world_size is None
    assert "distributedInfo: out-of-range rank ignored" in summary["warnings"]
    assert "distributedInfo: out-of-range world_size ignored" in summary["warnings"]


def test_rank_from_the_file_name_in_range(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    def no_info(d: dict[str, Any]) -> None:
        del d["distributedInfo"]

    summary, _ = ok(capsys, _trace(tmp_path, no_info, "run_rank99999999999999999999.json"))
    assert summary["rank"] is None
    summary, _ = ok(capsys, _trace(tmp_path, no_info, "run_rank7.json"))
    assert summary["rank"] == 7


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("numSms", BIG, "sm_count"),  # beyond 64 bits, as the rank test_fuzz found
        ("numSms", -4, "sm_count"),
        ("totalGlobalMem", 10**400, "total_memory"),
        ("maxThreadsPerMultiprocessor", 1, "max_threads_per_sm"),  # less than a warp
        ("computeMajor", 2**62, "compute_capability"),
        ("regsPerMultiprocessor", 2**40, "regs_per_sm"),
    ],
)
def test_device_property_out_of_range_is_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, key: str, value: int, field: str
) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: d["deviceProperties"][0].update({key: value})))
    assert getattr(trace.devices[0], field) is None
    assert f"deviceProperties[0]: out-of-range {key} ignored" in summary["warnings"]


@pytest.mark.parametrize("warp", [2**62, 0, 48, BIG], ids=["2^62", "0", "48", "2^64+7"])
def test_impossible_warp_size_is_the_default(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, warp: int) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: d["deviceProperties"][0].update(warpSize=warp)))
    assert trace.devices[0].warp_size == 32
    assert "deviceProperties[0]: out-of-range warpSize ignored" in summary["warnings"]


def test_version_beyond_int64_is_dropped(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: d.update(schemaVersion=BIG, cuda_runtime_version=-BIG)))
    assert "schemaVersion" not in trace.meta and "cuda_runtime_version" not in trace.meta
    assert "out-of-range schemaVersion ignored" in summary["warnings"]


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("cat", "key", "field"),
    [
        ("cpu_op", "External id", "cpu_op External id"),
        ("cpu_op", "Sequence number", "Sequence number"),
        ("cpu_op", "Fwd thread id", "Fwd thread id"),
        ("cuda_runtime", "correlation", "runtime correlation"),
        ("kernel", "correlation", "kernel correlation"),
        ("kernel", "External id", "kernel External id"),
    ],
)
@pytest.mark.parametrize("value", [BIG, -(2**63) - 1, 1e300], ids=["2^64+7", "-2^63-1", "1e300"])
def test_id_beyond_int64_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, cat: str, key: str, field: str, value: Any
) -> None:
    p = _trace(tmp_path, lambda d: _first(d, cat)["args"].update({key: value}))
    bad(capsys, p, rf"out-of-range value in {re.escape(field)}$")


@pytest.mark.parametrize(
    ("cat", "key", "table", "col"),
    [
        ("cpu_op", "External id", "ops", "ext_id"),
        ("cpu_op", "Sequence number", "ops", "seq"),
        ("cuda_runtime", "correlation", "runtime", "correlation"),
        ("kernel", "correlation", "gpu", "correlation"),
    ],
)
def test_negative_id_is_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, cat: str, key: str, table: str, col: str
) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _first(d, cat)["args"].update({key: -7})))
    values = getattr(getattr(trace, table), col)
    assert -7 not in values and NONE in values
    assert any(w.startswith("out-of-range values ignored") and key in w for w in summary["warnings"]), summary["warnings"]


# --------------------------------------------------------------------------- times


@pytest.mark.parametrize(
    ("cat", "key", "value", "problem", "table"),
    [
        ("cpu_op", "ts", 1e300, r"1 cpu op event with absurd timestamp beyond 2\^64 us \(first: 'aten::mm'", "ops"),
        ("kernel", "ts", -(2**70), r"1 GPU event with absurd timestamp .*'gemm_kernel'", "gpu"),
        ("python_function", "ts", BIG * 2, r"1 python event with absurd timestamp", "pyfn"),
        ("kernel", "dur", 1e300, r"1 GPU event with absurd duration over 7 days", "gpu"),
        ("cpu_op", "dur", -(2**70), r"1 cpu op event with negative duration", "ops"),
    ],
    ids=["op-ts-1e300", "kernel-ts--2^70", "pyfn-ts-2^65", "kernel-dur-1e300", "op-dur--2^70"],
)
def test_an_absurd_time_drops_its_event(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, cat: str, key: str, value: Any, problem: str, table: str
) -> None:
    """A damaged event costs only itself: dropped, and counted in a warning."""
    clean = read_trace(str(_trace(tmp_path, lambda d: None, name="clean.json")))
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _first(d, cat).update({key: value})))
    assert len(getattr(trace, table)) == len(getattr(clean, table)) - 1
    assert any(w.startswith("1 event with unusable times dropped") and re.search(problem, w) for w in summary["warnings"]), summary["warnings"]


def test_a_runtime_time_beyond_a_float_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    bad(capsys, _trace(tmp_path, lambda d: _first(d, "cuda_runtime").update(ts=10**400)), r"out-of-range value in runtime ts|non-numeric")


@pytest.mark.parametrize("key", ["ts", "dur"])
def test_infinite_time_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, key: str) -> None:
    p = _trace(tmp_path, lambda d: _first(d, "kernel").update({key: 123.25}), text=(f'"{key}": 123.25', f'"{key}": -1e400'))
    bad(capsys, p, r"out of range|non-finite")


def test_memory_record_time_out_of_range(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    summary, _ = ok(capsys, _trace(tmp_path, lambda d: _memory(d).update(ts=1e300)))
    assert any(re.search(r"1 \[memory\] event with absurd timestamp", w) for w in summary["warnings"]), summary["warnings"]


def test_profiler_span_out_of_range_is_ignored(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 10**30, "dur": 5}
    _, trace = ok(capsys, _trace(tmp_path, lambda d: d["traceEvents"].append(span)))
    assert "profiler_range" not in trace.meta


def test_counter_range_time_out_of_range(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    rng = {"ph": "X", "cat": "cuda_profiler_range", "name": "r", "pid": 0, "tid": 0, "ts": 1e300, "dur": 5,
           "args": {"sm__inst_executed.sum": 100}}  # fmt: skip
    bad(capsys, _trace(tmp_path, lambda d: d["traceEvents"].append(rng)), r"cuda_profiler_range event with a non-finite or absurd time")


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("grid", "block"),
    [([2**40, 2**40, 1], [256, 1, 1]), ([2**62, 1, 1], [1024, 1, 1]), ([-1, 1, 1], [256, 1, 1]), ([8, 1, 1], [-256, 1, 1]),
     ([2**31, 1, 1], [256, 1, 1])],
    ids=["grid-2^80", "threads-2^72", "grid-negative", "block-negative", "grid-beyond-32-bits"],
)
def test_impossible_launch_is_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, grid: list[int], block: list[int]
) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _first(d, "kernel")["args"].update(grid=grid, block=block)))
    k = int(trace.strings.index("gemm_kernel"))
    row = int((trace.gpu.name == k).nonzero()[0][0])
    assert trace.gpu.grid[row].tolist() == [0, 0, 0] and trace.gpu.block[row].tolist() == [0, 0, 0]
    assert any("1 grid/block" in w for w in summary["warnings"]), summary["warnings"]


def test_grid_beyond_int64_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    bad(capsys, _trace(tmp_path, lambda d: _first(d, "kernel")["args"].update(grid=[BIG, 1, 1])), r"out-of-range value in kernel grid$")


@pytest.mark.parametrize("nbytes", [2**60, -5], ids=["2^60", "-5"])
def test_impossible_byte_count_is_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, nbytes: int) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _first(d, "gpu_memcpy")["args"].update(bytes=nbytes)))
    assert nbytes not in trace.gpu.nbytes
    assert any("1 bytes" in w for w in summary["warnings"]), summary["warnings"]


def test_bytes_beyond_int64_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str) -> None:
    bad(capsys, _trace(tmp_path, lambda d: _first(d, "gpu_memcpy")["args"].update(bytes=BIG)), r"out-of-range value in bytes$")


@pytest.mark.parametrize(("key", "col"), [("Bytes", "nbytes"), ("Total Allocated", "total_allocated"), ("Total Reserved", "total_reserved")])
def test_memory_sizes_out_of_range_are_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, key: str, col: str
) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _memory(d)["args"].update({key: -(2**60)})))
    assert -(2**60) not in getattr(trace.memory, col)
    assert any(f"1 [memory] {key}" in w or f"1 {key}" in w for w in summary["warnings"]), summary["warnings"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("registers per thread", -3), ("shared memory", -1024), ("shared memory", 2**31), ("est. achieved occupancy %", 250.0),
     ("blocks per SM", -2.0), ("blocks per SM", 10**400), ("warps per SM", 10**400)],
    ids=["regs-negative", "shmem-negative", "shmem-2^31", "occupancy-250", "bps-negative", "bps-10^400", "wps-10^400"],
)  # fmt: skip
def test_impossible_kernel_detail_is_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, way: str, key: str, value: Any
) -> None:
    summary, trace = ok(capsys, _trace(tmp_path, lambda d: _first(d, "kernel")["args"].update({key: value})))
    if value != 10**400:  # beyond float64: unknown as a value of the wrong type is, without a warning
        assert any(f"1 {key}" in w for w in summary["warnings"]), summary["warnings"]
    assert len(trace.gpu) == 2
