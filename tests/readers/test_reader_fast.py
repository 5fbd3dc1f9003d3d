"""The strictly typed fast path of the Kineto reader and the streamed .json.gz (issue 6).

The strict schema (schema.StrictEvent) decodes the usual shape of a trace straight into
column-ready values; anything else must take the lenient path and give exactly what it gives.
Each odd-but-valid variant below is read the reference way and every fast way (whole file,
tiny slices, forked workers), and the test also checks which path it took: the strict one, a
strict decode that refused (ValidationError), or strict columns that refused (StrictMiss).
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from perflint.errors import InputError
from perflint.model import Trace
from perflint.readers import read_trace, source
from perflint.readers.kineto import chunked
from perflint.readers.kineto import reader as kineto
from perflint.readers.kineto.builder import ColumnBuilder
from perflint.readers.kineto.reference import build_trace_reference
from perflint.readers.kineto.schema import STRICT_DECODER
from perflint.readers.kineto.strict import StrictMiss, add_strict
from perflint.readers.source import read_bytes
from tests.builder import TraceBuilder
from tests.conftest import shared_trace
from tests.readers.test_perf_equivalence import CORPUS, assert_same_trace


def _base() -> TraceBuilder:
    b = TraceBuilder(rank=1)
    b.step(1, 0, 5000)
    for i in range(12):
        t = 10 + i * 300
        b.op("aten::mm", t, 200, dims=[[4, 8], [8, 2]], types=["float", "float"], seq=i, fwd_tid=7, stack="a.py(1);b.py(2)" if i % 3 else "")
        b.annotation("## forward ##", t, 250)
        b.kernel("sm80_gemm", t + 50, 40, launch_ts=t + 5, blocks_per_sm=0.5 if i % 2 else 2, occupancy=25 if i % 2 else 12.5)
        b.memcpy(t + 100, 10, nbytes=4096, launch_ts=t + 20)
        b.memset(t + 120, 2, nbytes=64, launch_ts=t + 30)
        b.pyfn(f"model.py({i}): forward", t, 210)
        b.memory(t + 1, 512, 1024, 2048)
    b.kernel("ncclKernel_AllReduce", 4000, 30, collective={"Collective name": "allreduce"})
    b.runtime("cudaDeviceSynchronize", 4100, 20)
    b.events.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 5000})
    b.events.append({"ph": "M", "name": "process_name", "pid": 1000, "tid": 0, "args": {"name": "python"}})
    b.events.append({"ph": "C", "name": "counter", "pid": 1000, "ts": 5, "args": {"v": 1}})
    return b


def _events(b: TraceBuilder, cat: str) -> list[dict[str, Any]]:
    return [e for e in b.events if e.get("cat") == cat]


def _first(b: TraceBuilder, cat: str) -> dict[str, Any]:
    return _events(b, cat)[0]


def _args(b: TraceBuilder, cat: str) -> dict[str, Any]:
    return _first(b, cat).setdefault("args", {})


def _set(cat: str, key: str, value: Any, *, every: bool = False) -> Callable[[TraceBuilder], None]:
    def edit(b: TraceBuilder) -> None:
        for e in _events(b, cat) if every else [_first(b, cat)]:
            e.setdefault("args", {})[key] = value

    return edit


def _event(cat: str, key: str, value: Any) -> Callable[[TraceBuilder], None]:
    def edit(b: TraceBuilder) -> None:
        _first(b, cat)[key] = value

    return edit


def _drop(cat: str, key: str, args: bool = False) -> Callable[[TraceBuilder], None]:
    def edit(b: TraceBuilder) -> None:
        e = _first(b, cat)
        (e["args"] if args else e).pop(key, None)

    return edit


def _append(ev: dict[str, Any]) -> Callable[[TraceBuilder], None]:
    def edit(b: TraceBuilder) -> None:
        b.events.append(ev)

    return edit


def _old_ext(b: TraceBuilder) -> None:
    for e in b.events:
        a = e.get("args") or {}
        if "External id" in a:
            a["external id"] = a.pop("External id")


def _both_ext(b: TraceBuilder) -> None:
    _args(b, "cpu_op").update({"External id": -1, "external id": 55})
    _args(b, "cuda_runtime").update({"External id": None, "external id": 56})


# name -> (edit, the path it must take: strict / lenient (strict decode refused) / miss (columns refused))
VARIANTS: dict[str, tuple[Callable[[TraceBuilder], None], str]] = {
    # Events whose times cannot be used are dropped (and counted in a warning) the same on every path.
    "ts_missing": (_drop("cuda_runtime", "ts"), "strict"),
    "dur_null": (_event("cpu_op", "dur", None), "lenient"),
    "dur_negative": (_event("python_function", "dur", -5), "strict"),
    "plain": (lambda b: None, "strict"),
    "ext_str": (_set("cpu_op", "External id", "12"), "lenient"),
    "ext_float": (_set("cuda_runtime", "External id", 12.0), "lenient"),
    "ext_bool": (_set("kernel", "External id", True), "lenient"),
    "ext_null": (_set("cpu_op", "External id", None), "strict"),
    "ext_old_spelling": (_old_ext, "strict"),
    "ext_both_spellings": (_both_ext, "strict"),
    "corr_str": (_set("cuda_runtime", "correlation", "1001"), "lenient"),
    "seq_float": (_set("cpu_op", "Sequence number", 3.7), "lenient"),
    "fwd_neg": (_set("cpu_op", "Fwd thread id", -1), "strict"),
    # seq / fwd_tid skip the conversion when every value is the default: one set, or all set
    "seq_on_one": (_set("cpu_op", "Sequence number", 7), "strict"),
    "seq_every": (_set("cpu_op", "Sequence number", 7, every=True), "strict"),
    "fwd_on_one": (_set("cpu_op", "Fwd thread id", 2**40), "strict"),
    # threads are keyed through zip(pids, tids): big ints, and an int pid next to a str one
    "pid_huge": (_event("cpu_op", "pid", 2**70), "strict"),
    "pid_str_and_int": (_event("cpu_op", "pid", "1000"), "strict"),
    "ts_int_huge": (_event("cpu_op", "ts", 2**64 + 1), "strict"),
    "ts_int_rounded": (_event("kernel", "ts", 2**53 + 1), "strict"),
    "ts_int_max": (_event("cuda_runtime", "ts", 2**63 - 1), "strict"),
    "ts_str": (_event("python_function", "ts", "15"), "lenient"),
    "ts_bool": (_event("cuda_runtime", "ts", True), "lenient"),
    "dur_missing_annotation": (_drop("Trace", "dur"), "strict"),
    "pid_float": (_event("cpu_op", "pid", 1000.0), "lenient"),
    "tid_str": (_event("cuda_runtime", "tid", "1000"), "strict"),
    "tid_null": (_event("python_function", "tid", None), "strict"),
    "pid_list": (_event("user_annotation", "pid", [1, 2]), "lenient"),
    "name_int": (_event("cpu_op", "name", 5), "lenient"),
    "name_missing": (_drop("cpu_op", "name"), "strict"),
    "name_null": (_event("kernel", "name", None), "lenient"),
    "name_empty": (_event("cuda_runtime", "name", ""), "strict"),
    "cat_upper": (_event("kernel", "cat", "Kernel"), "strict"),
    "cat_shout": (_event("cuda_runtime", "cat", "CUDA_RUNTIME"), "strict"),
    "cat_int": (_event("cpu_op", "cat", 3), "lenient"),
    "cat_missing": (_drop("cpu_op", "cat"), "strict"),
    "args_missing": (_drop("cpu_op", "args"), "strict"),
    "args_null": (_event("cuda_runtime", "args", None), "lenient"),
    "args_empty": (_event("kernel", "args", {}), "strict"),
    "dims_null": (_set("cpu_op", "Input Dims", None), "strict"),
    "dims_empty": (_set("cpu_op", "Input Dims", []), "strict"),
    "dims_spaced": (_set("cpu_op", "Input Dims", [[1, 2], []]), "strict"),
    "concrete_inputs": (_set("cpu_op", "Concrete Inputs", ["", "", "[2, 2]", "False", "1"], every=True), "strict"),
    "concrete_inputs_like_dims": (_set("cpu_op", "Concrete Inputs", [[4, 8], [8, 2]]), "strict"),
    "concrete_inputs_null": (_set("cpu_op", "Concrete Inputs", None), "strict"),
    "concrete_inputs_int": (_set("cpu_op", "Concrete Inputs", 3), "strict"),
    "stack_int": (_set("cpu_op", "Call stack", 5), "lenient"),
    "stack_empty_everywhere": (_set("cpu_op", "Call stack", "", every=True), "strict"),
    "collective_empty": (_set("kernel", "Collective name", ""), "strict"),
    "collective_int": (_set("kernel", "Collective name", 3), "strict"),
    "regs_str": (_set("kernel", "registers per thread", "32"), "strict"),
    "regs_bool": (_set("kernel", "registers per thread", True), "strict"),
    "shmem_float": (_set("kernel", "shared memory", 1024.0), "strict"),
    "occupancy_str": (_set("kernel", "est. achieved occupancy %", "50"), "strict"),
    "occupancy_null": (_set("kernel", "est. achieved occupancy %", None), "strict"),
    "bps_bool": (_set("kernel", "blocks per SM", False), "strict"),
    "stream_hex_on_runtime": (_set("cuda_runtime", "stream", "0x0", every=True), "strict"),
    "bytes_str_on_runtime": (_set("cuda_runtime", "bytes", "128", every=True), "strict"),
    "stream_str_on_kernel": (_set("kernel", "stream", "stream 9"), "strict"),
    "stream_null_on_kernel": (_set("kernel", "stream", None), "strict"),
    "stream_missing_on_kernel": (_drop("kernel", "stream", args=True), "strict"),
    "stream_hex_on_kernel": (_set("kernel", "stream", "0x1a"), "strict"),
    "stream_text_int_on_memcpy": (_set("gpu_memcpy", "stream", "9"), "strict"),
    "stream_float_on_memset": (_set("gpu_memset", "stream", 9.5), "strict"),
    "args_missing_on_kernel": (_drop("kernel", "args"), "strict"),
    "args_null_on_kernel": (_event("kernel", "args", None), "lenient"),
    "device_missing": (_drop("kernel", "device", args=True), "strict"),
    "device_float": (_set("gpu_memcpy", "device", 0.0), "strict"),
    "nbytes_str": (_set("gpu_memcpy", "bytes", "4096"), "strict"),
    "grid_short": (_set("kernel", "grid", [1, 2]), "lenient"),
    "grid_bool": (_set("kernel", "grid", [1, True, 1]), "lenient"),
    "grid_null": (_set("kernel", "grid", None), "lenient"),
    "ph_missing": (_drop("cuda_runtime", "ph"), "lenient"),
    "ph_unknown": (_append({"ph": "Z", "name": "x", "pid": 1, "tid": 1, "ts": 1}), "lenient"),
    # JSON with a repeated key (the last one counts): "ph" twice, written via a placeholder key
    "ph_twice": (_append({"ph": "s", "cat": "cpu_op", "name": "dup", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "PH2": "X"}), "lenient"),
    "ts_twice": (_append({"ph": "X", "cat": "cpu_op", "name": "dup", "pid": 1, "tid": 1, "ts": "x", "dur": 1, "TS2": 5}), "lenient"),
    "instant_upper": (_append({"ph": "I", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "args": {"Bytes": 5}}), "strict"),
    "instant_odd": (_append({"ph": "i", "name": "[memory]", "pid": [1], "tid": 1.5, "ts": "4", "args": {"Bytes": "5", "Device Id": True}}), "strict"),
    "flow_class_key_zero": (_append({"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "perflint: event class": 0}), "strict"),
    "flow_class_key_one": (_append({"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "perflint: event class": 1}), "lenient"),
    "profiler_span_int": (_event("Trace", "ts", 3), "strict"),
    "cupti_range": (_append({"ph": "X", "cat": "cuda_profiler_range", "name": "range", "pid": 0, "tid": 0, "ts": 10, "dur": 5,
                             "args": {"sm__inst_executed.sum": 100, "dram__bytes.sum": 2.5}}), "strict"),
    "cupti_range_ts_word": (_append({"ph": "X", "cat": "cuda_profiler_range", "name": "range", "pid": 0, "tid": 0, "ts": "x",
                                     "dur": [2], "args": {"sm__inst_executed.sum": 100}}), "lenient"),  # fmt: skip
    "cupti_range_no_ts": (_append({"ph": "X", "cat": "cuda_profiler_range", "name": "range", "pid": 0, "tid": 0,
                                   "args": {"sm__inst_executed.sum": 100}}), "strict"),
}

# Bad values: each way must give the same one-line error.
ERRORS: dict[str, tuple[Callable[[TraceBuilder], None], str]] = {
    "ext_beyond_int64": (_set("cpu_op", "External id", 2**63), "miss"),
    "seq_beyond_int64": (_set("cpu_op", "Sequence number", 2**63), "miss"),
    "corr_beyond_uint64": (_set("kernel", "correlation", 2**70), "miss"),
    "device_beyond_int32": (_set("kernel", "device", 2**40), "miss"),
    "regs_beyond_int32": (_set("kernel", "registers per thread", 2**33), "miss"),
    "grid_beyond_int64": (_set("kernel", "grid", [2**64, 1, 1]), "miss"),
    "ts_beyond_float": (_event("kernel", "ts", int("9" * 400)), "lenient"),
    "ts_word": (_event("cpu_op", "ts", "soon"), "lenient"),
    "ts_list": (_event("cpu_op", "ts", []), "lenient"),  # numpy made a 2-D column of it
    "dur_list": (_event("kernel", "dur", [1.5]), "lenient"),
    "flow_args_int": (_append({"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "args": 5}), "lenient"),
    "args_list": (_event("cuda_runtime", "args", [1]), "lenient"),
}


def _doc(edit: Callable[[TraceBuilder], None]) -> bytes:
    b = _base()
    b.events = copy.deepcopy(b.events)
    edit(b)
    text = json.dumps(b.to_dict(), indent=1)
    return text.replace('"PH2":', '"ph":').replace('"TS2":', '"ts":').encode()


def _taken(data: bytes) -> str:
    try:
        doc = STRICT_DECODER.decode(data)
    except msgspec.ValidationError:
        return "lenient"
    try:
        add_strict(ColumnBuilder("x"), doc.traceEvents)
    except StrictMiss:
        return "miss"
    return "strict"


def _reference(path: str, data: bytes) -> Trace:
    events, doc = kineto.decode(path, data)
    return build_trace_reference(path, events, doc, data if b"cuda_profiler_range" in data else None)


def _outcome(read: Callable[[], Trace]) -> Trace | str:
    try:
        return read()
    except InputError as exc:
        return exc.line()


def _fast_ways(path: str, data: bytes, monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], Trace]]:
    def sliced(size: str) -> Callable[[], Trace]:
        def read() -> Trace:
            with monkeypatch.context() as m:
                m.setenv("PERFLINT_CHUNK_BYTES", size)
                return kineto.read_kineto(path, data)

        return read

    def parallel() -> Trace:
        with monkeypatch.context() as m:
            m.setenv("PERFLINT_READ_WORKERS", "2")
            got = kineto._read_parallel(path, data, 1 << 12)
        assert got is not None
        return got

    return {
        "whole": lambda: kineto._read_whole(path, data),
        "read_kineto": lambda: kineto.read_kineto(path, data),
        "slices_256": sliced("256"),
        "slices_4096": sliced("4096"),
        "parallel": parallel,
    }


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_odd_but_valid_inputs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit, path_taken = VARIANTS[name]
    data = _doc(edit)
    assert _taken(data) == path_taken
    path = str(tmp_path / "t.json")
    ref = _reference(path, data)
    for way, read in _fast_ways(path, data, monkeypatch).items():
        got = _outcome(read)
        assert not isinstance(got, str), f"{way}: {got}"
        assert_same_trace(ref, got)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_values_same_error(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit, path_taken = ERRORS[name]
    data = _doc(edit)
    assert _taken(data) == path_taken
    path = str(tmp_path / "t.json")
    want = _outcome(lambda: _reference(path, data))
    assert isinstance(want, str)
    for way, read in _fast_ways(path, data, monkeypatch).items():
        if way == "parallel":
            continue  # a worker's error is the same InputError; its slice may hold other values first
        assert _outcome(read) == want, way


# A GPU row's "stream" argument -> the stream column, as HTA's parser reads it: int(value), -1 where
# that fails or the argument is missing (the row's tid never stands in).
STREAMS: list[tuple[dict[str, Any] | None, int]] = [
    ({"stream": 7}, 7),
    ({}, -1),
    ({"stream": None}, -1),
    ({"stream": "0x0"}, -1),
    ({"stream": "0x1a"}, -1),
    ({"stream": "stream 9"}, -1),
    ({"stream": "9"}, 9),
    ({"stream": 9.5}, 9),
    ({"stream": True}, -1),
    (None, -1),
]


@pytest.mark.parametrize("native", ["0", "1"])
def test_gpu_row_stream_argument(native: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read path gives a GPU row without a usable stream argument no stream (NONE), not its tid."""
    b = _base()  # big enough for the parallel reader's slices; its GPU rows carry stream 7
    for i, (args, _) in enumerate(STREAMS):
        b.events.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 13, "ts": 10 * i, "dur": 5, "args": args})
    data = json.dumps(b.to_dict(), indent=1).encode()
    path = str(tmp_path / "t.json")
    want = [v for _, v in STREAMS]

    def streams(t: Trace) -> list[int]:
        names = [t.s(int(n)) for n in t.gpu.name]
        return [int(t.gpu.stream[names.index(f"k{i}")]) for i in range(len(STREAMS))]

    assert streams(_reference(path, data)) == want
    monkeypatch.setenv("PERFLINT_NATIVE", native)
    for way, read in _fast_ways(path, data, monkeypatch).items():
        assert streams(read()) == want, way


def test_fast_path_on_corpus_like_trace() -> None:
    """The usual trace shape never leaves the strict path (else the speed-up is lost silently)."""
    assert _taken(_doc(lambda b: None)) == "strict"


@pytest.mark.parametrize("rel", [*CORPUS, "tracelens/traces/mi300/resnet_act_checkpoint.json.gz", "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_corpus_takes_the_strict_path(rel: str) -> None:
    """Real traces of every vintage (ROCm runtime calls with string "stream"/"bytes" args
    included) take the strict path, and give the reference tables."""
    path = shared_trace(rel)
    data = read_bytes(path)
    assert _taken(data) == "strict"
    assert_same_trace(_reference(path, data), kineto._read_whole(path, data))


# --------------------------------------------------------------------------- .json.gz streaming


def _big(n: int = 400) -> bytes:
    b = TraceBuilder(rank=0)
    b.step(1, 0, n * 100)
    for i in range(n):
        t = 10 + i * 100
        b.op("aten::add", t, 50, dims=[[i, 2]], types=["float"])
        b.kernel(f"kernel_{i % 7}", t + 20, 10, launch_ts=t + 2)
        b.pyfn("model.py(3): forward", t, 60)
    return json.dumps(b.to_dict(), indent=1).encode()


@pytest.fixture()
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream every .gz (not only big ones) and read its slices in two workers."""
    monkeypatch.setattr(source, "GZ_STREAM_MIN_BYTES", 1)
    monkeypatch.setattr(source, "GZ_STEP_BYTES", 4096)
    monkeypatch.setattr(source, "GZ_INPUT_BYTES", 512)  # the compressed input is read in many pieces
    # A ring smaller than the file (it wraps), after a small head holding the traceEvents key.
    monkeypatch.setattr(source, "GZ_HEAD_BYTES", 8192)
    monkeypatch.setattr(chunked, "_HEAD_SCAN", 4096)
    monkeypatch.setattr(chunked, "SUB_BYTES", 16384)
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "2")
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", "65536")


def _read_gz(path: Path) -> Trace | str:
    return _outcome(lambda: read_trace(str(path)))


def _read_ref(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trace | str:
    """The file read whole with gzip.decompress (read_bytes), then the same fast reader."""
    with monkeypatch.context() as m:
        m.setattr(source, "GZ_STREAM_MIN_BYTES", 1 << 62)
        return _outcome(lambda: read_trace(str(path)))


def test_gzip_streamed_in_parallel(tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _big()
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(data))
    opened = source.open_source(str(p))
    assert isinstance(opened, source.GzipStream)
    opened.close()
    results: list[Any] = []
    run = kineto._finished  # the parallel read's end, whether a thread or the caller drove it
    monkeypatch.setattr(kineto, "_finished", lambda *a: results.append(run(*a)) or results[-1])
    rings: list[int] = []
    use_ring = source.GzipStream.use_ring
    monkeypatch.setattr(source.GzipStream, "use_ring", lambda self, cap: use_ring(self, cap) and not rings.append(self.cap))
    got = _read_gz(p)
    assert results and results[0] is got  # streamed to the workers, no fallback
    assert rings and rings[0] < len(data) * 0.6  # the ring was reused
    assert not isinstance(got, str)
    assert_same_trace(_reference(str(p), data), got)


def test_gzip_stream_one_worker(tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "1")
    data = _big(50)
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(data))
    got = _read_gz(p)
    assert not isinstance(got, str)
    assert_same_trace(_reference(str(p), data), got)


def _gz_cases(data: bytes) -> dict[str, bytes]:
    gz = gzip.compress(data)
    half = len(data) // 2
    corrupt = bytearray(gz)
    for i in range(len(gz) // 2, min(len(gz) - 8, len(gz) // 2 + 64)):
        corrupt[i] ^= 0x5A
    wrong_size = bytearray(gz)
    wrong_size[-4:] = (len(data) + 1000).to_bytes(4, "little")
    wrong_crc = bytearray(gz)
    wrong_crc[-8] ^= 1
    return {
        "truncated": gz[: len(gz) * 2 // 3],
        "truncated_trailer": gz[:-3],
        "corrupt": bytes(corrupt),
        "two_members": gzip.compress(data[:half]) + gzip.compress(data[half:]),
        "trailing_zeros": gz + b"\0" * 16,
        "trailing_garbage": gz + b"garbage!",
        "size_too_big": bytes(wrong_size),
        "bad_crc": bytes(wrong_crc),
        "blank": gzip.compress(b" \n" * 200_000),
        "not_json": gzip.compress(b"x" * 300_000),
    }


@pytest.mark.parametrize("reader", ["native", "gzipfile"])
@pytest.mark.parametrize("case", sorted(_gz_cases(b"{}" * 64)))
def test_gzip_stream_bad_or_odd(
    case: str, reader: str, tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that is not what its trailer announced reads as gzip.decompress reads it: the
    same trace (two members) or the same one-line error; with python-isal's reader and with the
    GzipFile that stands in for it without isal."""
    if reader == "gzipfile":  # as without python-isal: its C reader absent, the standard gzip module
        monkeypatch.setattr(source, "_C_GZIP_READER", None)
        monkeypatch.setattr(source, "_gzip", gzip)
    data = _big()
    p = tmp_path / "t.json.gz"
    p.write_bytes(_gz_cases(data)[case])
    want, got = _read_ref(p, monkeypatch), _read_gz(p)
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str), got
        assert_same_trace(want, got)


@pytest.mark.parametrize("announced", [2**32 - 1, 3 << 30])
def test_gzip_trailer_beyond_deflate_is_not_streamed(announced: int, tmp_path: Path, streamed: None) -> None:
    """A damaged trailer announcing more than deflate can expand the file to (about 1032x) is
    not trusted: no stream (which would reserve the announced gigabytes), the one-line error."""
    gz = gzip.compress(_big())
    p = tmp_path / "t.json.gz"
    p.write_bytes(gz[:-4] + announced.to_bytes(4, "little"))
    got = _read_gz(p)
    assert isinstance(got, str) and "corrupt gzip data" in got, got
    ok = tmp_path / "ok.json.gz"
    ok.write_bytes(gz)
    stream = source.open_source(str(ok))
    assert isinstance(stream, source.GzipStream)  # the same file, its trailer intact, streams
    stream.close()
    with pytest.raises(InputError, match="corrupt gzip data"):
        source.open_source(str(p))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_gzip_private_buffer_costs_what_is_written(tmp_path: Path) -> None:
    """A truncated .gz has no trailer: its last four bytes are data, announcing any size up to
    4 GB (within deflate's 1032x, it is believed). Reading it whole must not zero that much
    memory before the data runs out."""
    announced = 512 << 20
    body = gzip.compress(os.urandom(1_000_000), 1)  # incompressible: 1032x its size exceeds `announced`
    p = tmp_path / "cut.json.gz"
    p.write_bytes(body[: len(body) * 3 // 4] + announced.to_bytes(4, "little"))
    stream = source.open_source(str(p))
    assert isinstance(stream, source.GzipStream) and stream.size == announced
    try:
        before = _rss()
        stream.fill(stream.cap + 1)  # past the head buffer: the whole-content buffer is made
        assert stream.cap == announced
        assert _rss() - before < announced // 4
        assert not stream.finish()  # and the data ends early
    finally:
        stream.close()
    with pytest.raises(InputError, match="truncated|corrupt"):
        source.read_bytes(str(p))


def test_gzip_ring_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Absolute offsets read back through the ring, across its wrap point."""
    monkeypatch.setattr(source, "GZ_STREAM_MIN_BYTES", 1)
    monkeypatch.setattr(source, "GZ_HEAD_BYTES", 4096)
    monkeypatch.setattr(source, "GZ_STEP_BYTES", 1000)
    data = bytes((i * 7919) % 251 for i in range(100_000)).replace(b"}", b"{")
    p = tmp_path / "r.gz"
    p.write_bytes(gzip.compress(data))
    s = source.open_source(str(p))
    assert isinstance(s, source.GzipStream) and s.use_ring(10_000)
    s.make_room = lambda floor: setattr(s, "floor", floor) or True  # nothing to wait for
    cap = s.cap
    for hi in range(cap, len(data), 3001):
        assert s.fill(hi)
        lo = max(s.filled - cap, hi - 5000)
        assert s[lo:hi] == data[lo:hi] and s[hi - 1] == data[hi - 1]
        out = bytearray(hi - lo)
        s.read_range(lo, hi, memoryview(out))
        assert out == data[lo:hi]
        for mark in (lo + 17, hi - 3, (lo + hi) // 2):
            probe = bytearray(data)
            probe[mark] = ord("}")
            s.buf[mark % cap] = ord("}")  # the byte as if decompressed there
            assert s.rfind(b"}", lo, hi) == bytes(probe).rfind(b"}", lo, hi)
            s.buf[mark % cap] = data[mark]
    assert s[:100] == data[:100]  # the head is kept
    s.close()


def test_gzip_stream_reference_reader(tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """PERFLINT_READER=reference reads a streamable .gz the reference way too."""
    data = _big(50)
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(data))
    monkeypatch.setenv("PERFLINT_READER", "reference")
    monkeypatch.setattr(kineto, "_read_parallel", lambda *a: pytest.fail("the fast path ran"))
    got = _read_gz(p)
    assert not isinstance(got, str)
    assert_same_trace(_reference(str(p), data), got)


def test_gzip_stream_uses_isal_c_reader(tmp_path: Path) -> None:
    """With python-isal, a big .gz is decompressed by its C reader (big input reads, no Python
    call per 512 KiB, so the GIL is free while the rules load), and closing the stream closes
    the file."""
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    p = tmp_path / "t.json.gz"
    data = _big()
    p.write_bytes(gzip.compress(data))
    stream = source.GzipStream(str(p), open(p, "rb"), len(data))
    assert isinstance(stream._rd, isal_zlib._GzipReader)
    assert stream.finish() and bytes(stream.buf[: stream.filled]) == data
    stream.close()
    assert stream.fh.closed
