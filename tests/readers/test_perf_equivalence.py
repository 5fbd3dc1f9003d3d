"""The fast reader paths give exactly what the reference reader gives (issue 6 points 2 and 5).

Three ways to read one trace must agree table for table and report for report:
- reference: whole-file decode, then the event-by-event loop (PERFLINT_READER=reference);
- fast: whole-file decode, then the columnar builder (files up to one slice);
- streaming: the traceEvents array decoded slice by slice (PERFLINT_CHUNK_BYTES forces tiny
  slices, so every corpus trace goes through dozens of slices and the boundary retries), from
  bytes and from a mapped file.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint.cli import main
from perflint.errors import InputError
from perflint.model import Trace
from perflint.readers import ReadOptions, source
from perflint.readers.kineto import chunked
from perflint.readers.kineto import reader as kineto
from perflint.readers.kineto.builder import ColumnBuilder
from perflint.readers.kineto.reference import build_trace_reference
from perflint.readers.kineto.slices import adder
from perflint.readers.source import read_bytes
from tests.builder import TraceBuilder
from tests.conftest import shared_trace

CORPUS = [
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/mtia_trace_single_rank/mtia_rank_0.json.gz",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "tracelens/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "param/resnet_kineto.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",  # cuda_sync event waits
    "tracelens/traces/mi300/resnet_act_checkpoint.json.gz",  # collective metadata on ops and kernels
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",  # collective metadata on ops only
]
SMALL_SLICE = "4096"


def _tables(t: Trace) -> dict[str, np.ndarray]:
    out = {}
    for name in ("ops", "runtime", "gpu", "pyfn", "memory", "comms"):
        tbl = getattr(t, name)
        for f in dataclasses.fields(tbl):
            out[f"{name}.{f.name}"] = getattr(tbl, f.name)
    return out


def assert_same_trace(a: Trace, b: Trace) -> None:
    assert a.strings == b.strings
    assert a.threads == b.threads
    assert (a.rank, a.world_size, a.meta, a.devices) == (b.rank, b.world_size, b.meta, b.devices)
    assert a.counter_ranges == b.counter_ranges
    ta, tb = _tables(a), _tables(b)
    for k, v in ta.items():
        w = tb[k]
        assert v.dtype == w.dtype and v.shape == w.shape, k
        assert np.array_equal(v, w, equal_nan=v.dtype.kind == "f"), k


def _reference(path: str, data: bytes) -> Trace:
    events, doc = kineto.decode(path, data)
    return build_trace_reference(path, events, doc, data if b"cuda_profiler_range" in data else None)


def _sliced(path: str, data: Any, size: int) -> Trace:
    b = ColumnBuilder(path)
    ok, doc = chunked.read_sliced(data, adder(b), size)
    assert ok, "the slicer fell back to the whole-file path"
    return b.finish(doc, lambda: bytes(data))


@pytest.mark.parametrize("rel", CORPUS)
def test_tables_identical(rel: str) -> None:
    path = shared_trace(rel)
    data = read_bytes(path)
    ref = _reference(path, data)
    events, doc = kineto.decode(path, data)
    assert_same_trace(ref, kineto.build_trace(path, events, doc, data))
    for size in (4096, 100_000):
        assert_same_trace(ref, _sliced(path, data, size))


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    main(argv)
    return capsys.readouterr().out


@pytest.mark.parametrize("rel", [CORPUS[0], CORPUS[2], CORPUS[3]])
def test_reports_identical(rel: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """check and summary JSON: reference reader == fast path == streaming (tiny slices)."""
    path = shared_trace(rel)
    check = ["check", path, "--format", "json", "--fail-on", "never", "--jobs", "1"]
    summary = ["summary", path, "--format", "json", "--jobs", "1"]
    monkeypatch.setenv("PERFLINT_READER", "reference")
    want = (_run(check, capsys), _run(summary, capsys))
    monkeypatch.delenv("PERFLINT_READER")
    assert (_run(check, capsys), _run(summary, capsys)) == want
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", SMALL_SLICE)
    assert (_run(check, capsys), _run(summary, capsys)) == want


def test_mapped_file_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big plain file is mapped (pread slices, pages released): same tables as the reference."""
    src = shared_trace(CORPUS[0])
    data = read_bytes(src)
    path = tmp_path / "rank0.json"
    path.write_bytes(data)
    monkeypatch.setattr(source, "MMAP_MIN_BYTES", 1024)
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", "65536")
    mapped = source.open_source(str(path))
    assert isinstance(mapped, source.MappedFile)
    seen: list[tuple[int, int]] = []
    got = kineto.read_kineto(str(path), mapped, ReadOptions(progress=lambda done, total: seen.append((done, total))))
    assert_same_trace(_reference(str(path), data), got)
    assert seen and seen[-1] == (len(data), len(data))  # the progress hook saw every slice
    # The same slices decoded in two forked workers and merged in order.
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "2")
    parallel = kineto._read_parallel(str(path), source.open_source(str(path)), 65536)
    assert parallel is not None
    assert_same_trace(_reference(str(path), data), parallel)


@pytest.mark.parametrize("rel", CORPUS[:3])
def test_parallel_slices_identical(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shared_trace(rel)
    data = read_bytes(path)
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "2")
    got = kineto._read_parallel(path, data, max(4096, len(data) // 6))
    assert got is not None
    assert_same_trace(_reference(path, data), got)


def _tricky() -> TraceBuilder:
    b = TraceBuilder(rank=3)
    b.step(1, 0, 1000)
    for i in range(40):
        t = 10 + i * 20
        b.op("aten::mm", t, 15)
        b.kernel("sm80_gemm }, { kernel", t + 8, 4, launch_ts=t + 1)
        b.pyfn(f"model.py({i}): forward", t, 16)
    # strings and nested objects that look like event boundaries
    b.events.append({"ph": "X", "cat": "cpu_op", "name": 'weird "}, {" name', "pid": 1, "tid": 1, "ts": 5, "dur": 1,
                     "args": {"nested": [{"a": 1}, {"b": [2, {"c": "}]"}]}], "Input Dims": [[1]]}})
    b.events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 6,
                     "args": {"Bytes": 10, "Total Allocated": 10, "Total Reserved": 20, "Device Type": 1, "Device Id": 0}})
    return b


@pytest.mark.parametrize("layout", ["indent", "compact", "spaced", "bare", "trailing"])
def test_slice_boundaries(layout: str, tmp_path: Path) -> None:
    """Boundary look-alikes inside strings and nested args, trailing metadata lists, a bare list."""
    b = _tricky()
    doc: Any = b.to_dict()
    if layout == "bare":
        doc = doc["traceEvents"]
    if layout == "trailing":
        doc = {**doc, "WARNING": ["a ] b", "}, {"], "traceName": "x]"}
    text = {
        "indent": lambda d: json.dumps(d, indent=2),
        "compact": lambda d: json.dumps(d, separators=(",", ":")),
        "spaced": lambda d: json.dumps(d),
    }.get(layout, lambda d: json.dumps(d, indent=1))(doc)
    data = text.encode()
    path = str(tmp_path / "t.json")
    ref = _reference(path, data)
    for size in (64, 200, 1000, 10_000):
        assert_same_trace(ref, _sliced(path, data, size))


def test_bad_input_same_error_when_sliced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input read through the slicer falls back to the whole-file decode: the same one-line error."""
    b = _tricky()
    text = json.dumps(b.to_dict(), indent=1)
    cases = {
        "truncated": text[: len(text) // 2],
        "badtype": text.replace('"ts": 5,', '"ts": "soon",', 1),
        "badargs": text.replace('"args": {"nested"', '"args": 7, "x": {"nested"', 1),
        "nokey": text.replace('"traceEvents"', '"events"', 1),
    }
    for name, body in cases.items():
        p = tmp_path / f"{name}.json"
        p.write_text(body)
        monkeypatch.delenv("PERFLINT_CHUNK_BYTES", raising=False)
        try:
            kineto.read_kineto(str(p), p.read_bytes())
            want = None
        except InputError as exc:
            want = exc.line()
        monkeypatch.setenv("PERFLINT_CHUNK_BYTES", "128")
        try:
            kineto.read_kineto(str(p), p.read_bytes())
            got = None
        except InputError as exc:
            got = exc.line()
        assert got == want, name


def test_gzip_sliced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = _tricky()
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps(b.to_dict(), indent=1).encode()))
    ref = kineto.read_kineto(str(p), read_bytes(str(p)))
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", "256")
    assert_same_trace(ref, kineto.read_kineto(str(p)))
