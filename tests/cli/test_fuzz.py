"""Property test: mangled real traces never crash `perflint summary` or `perflint check`.

Whatever the damage (truncation, flipped bytes, deleted keys, values of the wrong type, huge or
negative numbers, shuffled events), `summary --format json` exits 0 with a summary, or 2 with
exactly one stderr line naming the file; `check --format json` writes its JSON report and exits
0, 1 or 2 with the same one line for an unreadable trace: never a traceback, never an
"internal error". Each example is read one of three ways: whole, or sliced through the C scanner
(when built) or the Python column builders.

The gating suite runs the deterministic "ci" hypothesis profile (tests/conftest.py); examples
that once failed are kept below with @example. To hunt for new ones:
    PERFLINT_FUZZ=explore PERFLINT_FUZZ_EXAMPLES=2000 python -m pytest tests/cli/test_fuzz.py
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import os
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from perflint.cli import main
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, TRACES

# max_examples, deadline and randomness come from the loaded profile (tests/conftest.py).
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# How an example is read: the whole document at once, or in small slices (the reader of big
# files) through the C scanner or the Python column builders.
WAYS: dict[str, dict[str, str]] = {
    "whole": {},
    "sliced-native": {"PERFLINT_CHUNK_BYTES": "512", "PERFLINT_NATIVE": "1"},
    "sliced-python": {"PERFLINT_CHUNK_BYTES": "512", "PERFLINT_NATIVE": "0"},
}

# Small real traces: recorded CPU fixtures (always present) and small GPU traces of the corpus.
FIXTURE_SEEDS = ["cpu/sync_item.pt.trace.json.gz", "cpu/bf16_linear.pt.trace.json.gz"]
CORPUS_SEEDS = [
    "hta/trace_compare/base/base.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/trace_file_list/inference_rank_1.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/test/gpu_metrics_input.json",
    "tracelens/traces/torch_compile_triton/trace.json.gz",
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
]


def _synthetic() -> dict[str, Any]:
    b = TraceBuilder(rank=3)
    b.step(1, ts=0, dur=1000)
    b.step(2, ts=1000, dur=1000)
    b.op("aten::linear", ts=1010, dur=300, dims=[[8, 16], [4, 16], [4]], types=["float"] * 3, stack="train.py(10): f")
    b.op("aten::addmm", ts=1020, dur=200, dims=[[4], [8, 16], [16, 4], [], []], types=["float"] * 3 + ["Scalar"] * 2,
         seq=3, fwd_tid=0)
    b.kernel("ampere_sgemm_32x32_nn", ts=1300, dur=40, launch_ts=1030)
    b.op("autograd::engine::evaluate_function: AddmmBackward0", ts=1400, dur=200, seq=3, fwd_tid=1)
    b.kernel("ampere_sgemm_32x32_tn", ts=1650, dur=30, launch_ts=1410)
    b.memcpy(ts=1700, dur=5, nbytes=1024, launch_ts=1650)
    b.memset(ts=1710, dur=2, nbytes=64, launch_ts=1660)
    b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", ts=1720, dur=100, launch_ts=1670, stream=20,
             collective={"Collective name": "allreduce", "In msg nelems": 1024, "Group size": 2})
    b.pyfn("train.py(10): f", ts=1005, dur=400)
    b.memory(ts=1015, nbytes=4096, total_allocated=8192, total_reserved=1 << 20)
    return b.to_dict()


@functools.lru_cache(maxsize=None)
def seed_doc(name: str) -> Any:
    if name == "synthetic":
        return _synthetic()
    path = FIXTURES / name[len("fixtures/"):] if name.startswith("fixtures/") else TRACES / name
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def seed_names() -> list[str]:
    names = ["synthetic"] + [f"fixtures/{n}" for n in FIXTURE_SEEDS]
    if TRACES.exists():
        names += [n for n in CORPUS_SEEDS if (TRACES / n).exists()]
    return names


WEIRD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([-1, -1e18, 1e300, -1e300, 2**63, 2**64 + 7, -(2**70), 0, 0.5, 7 * 24 * 3600 * 10**6 + 1,
                     2**31, 2**53 + 1, 2**62, -(2**63), 10**30, 10**400, 1.7e308]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["X", "i", "kernel", "cpu_op", "cuda_runtime", "[memory]", "ProfilerStep#x", "stream 7", ""]),
    st.lists(st.integers(min_value=-(2**40), max_value=2**40), max_size=4),
    # fresh objects each time: a shared one (st.just) is mutated by later actions, and can end
    # up inside itself (an args dict set to the args dict), which json.dumps refuses
    st.builds(dict),
    st.builds(lambda: [[1, 2], "a", None]),
)
EVENT_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp", "s"]
ARG_KEYS = [
    "External id", "external id", "correlation", "Sequence number", "Fwd thread id", "Input Dims", "Input type",
    "Concrete Inputs", "Call stack", "grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
    "est. achieved occupancy %", "stream", "device", "bytes", "Collective name", "Bytes", "Total Allocated",
    "Total Reserved", "Device Type", "Device Id",
]
TOP_KEYS = ["deviceProperties", "computeProperties", "distributedInfo", "displayTimeUnit", "schemaVersion", "traceName",
            "cuda_runtime_version"]
DEVICE_KEYS = ["id", "name", "numSms", "computeMajor", "computeMinor", "major", "warpSize", "multiProcessorCount",
               "maxThreadsPerMultiprocessor", "regsPerMultiprocessor", "regsPerBlock", "sharedMemPerMultiprocessor",
               "sharedMemPerBlockOptin", "maxBlocksPerMultiProcessor", "totalGlobalMem"]


@st.composite
def mangled_doc(draw: st.DrawFn) -> Any:
    """A structurally damaged copy of a seed trace (still serializable JSON)."""
    doc = copy.deepcopy(seed_doc(draw(st.sampled_from(seed_names()))))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    n_mut = draw(st.integers(min_value=1, max_value=6))
    for _ in range(n_mut):
        action = draw(st.sampled_from(["del_key", "del_arg", "set_key", "set_arg", "set_top", "set_device", "shuffle",
                                       "drop", "dup", "replace_event", "wrap_args"]))
        if not events:
            break
        i = draw(st.integers(min_value=0, max_value=len(events) - 1))
        ev = events[i]
        if action == "del_key" and isinstance(ev, dict) and ev:
            ev.pop(draw(st.sampled_from(sorted(ev))), None)
        elif action == "del_arg" and isinstance(ev, dict) and isinstance(ev.get("args"), dict) and ev["args"]:
            ev["args"].pop(draw(st.sampled_from(sorted(ev["args"]))), None)
        elif action == "set_key" and isinstance(ev, dict):
            ev[draw(st.sampled_from(EVENT_KEYS))] = draw(WEIRD_VALUES)
        elif action == "set_arg" and isinstance(ev, dict):
            if not isinstance(ev.get("args"), dict):
                ev["args"] = {}
            ev["args"][draw(st.sampled_from(ARG_KEYS))] = draw(WEIRD_VALUES)
        elif action == "set_top" and isinstance(doc, dict):
            key = draw(st.sampled_from(TOP_KEYS))
            if key in ("deviceProperties", "computeProperties") and draw(st.booleans()):
                doc[key] = [{draw(st.sampled_from(DEVICE_KEYS)): draw(WEIRD_VALUES)}]
            elif key == "distributedInfo" and draw(st.booleans()):
                doc[key] = {draw(st.sampled_from(["rank", "world_size"])): draw(WEIRD_VALUES)}
            else:
                doc[key] = draw(WEIRD_VALUES)
        elif action == "set_device" and isinstance(doc, dict) and isinstance(doc.get("deviceProperties"), list):
            for dev in doc["deviceProperties"][:1]:  # one property of a real device, the others kept
                if isinstance(dev, dict):
                    dev[draw(st.sampled_from(DEVICE_KEYS))] = draw(WEIRD_VALUES)
        elif action == "shuffle":
            draw(st.randoms(use_true_random=False)).shuffle(events)
        elif action == "drop":
            del events[i]
        elif action == "dup":
            events.insert(i, copy.deepcopy(ev))
        elif action == "replace_event":
            events[i] = draw(WEIRD_VALUES)
        elif action == "wrap_args" and isinstance(ev, dict):
            ev["args"] = draw(WEIRD_VALUES)
    return doc


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse only; a reader must never exit
        pytest.fail(f"SystemExit({exc.code}) for {argv}")
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "internal error" not in err, err
    return code, out, err


def _one_error_line(path: str, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("perflint: error:")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"perflint: error: {path}: "), lines[0]
    return lines[0]


def _check(path: str, capsys: pytest.CaptureFixture[str], way: str = "whole") -> int:
    """`summary` and `check`, both as JSON, on `path` read the given way: the summary's exit code."""
    saved = {k: os.environ.get(k) for k in WAYS[way]}
    os.environ.update(WAYS[way])
    try:
        code, out, err = _run(["summary", path, "--format", "json", "-j", "1"], capsys)
        assert code in (0, 2), (code, err)
        if code == 0:
            assert err == ""
            assert len(json.loads(out)["traces"]) == 1
        else:
            assert len(err.splitlines()) == 1, err
            line = _one_error_line(path, err)
        ccode, cout, cerr = _run(["check", path, "--format", "json", "-j", "1"], capsys)
        assert ccode in (0, 1, 2), (ccode, cerr)
        report = json.loads(cout)
        if code == 0:
            assert ccode in (0, 1), cerr
            assert len(report["traces"]) == 1
        else:  # the same one line as the summary's
            assert ccode == 2
            assert _one_error_line(path, cerr) == line
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code


def _write(data: bytes, suffix: str) -> str:
    fd, path = tempfile.mkstemp(suffix=suffix, prefix="perflint-fuzz-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _edited(device: dict[str, Any] | None = None, kernel_args: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """The synthetic seed with top-level keys replaced, and properties of its device or args of
    its first kernel set (an example to keep checking)."""
    doc = {**_synthetic(), **top}
    doc["deviceProperties"][0].update(device or {})
    next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["args"].update(kernel_args or {})
    return doc


READ_WAYS = st.sampled_from(sorted(WAYS))


@SETTINGS
@given(doc=mangled_doc(), gz=st.booleans(), way=READ_WAYS)
# Examples found by this test (or by the explore profile), kept so that every run checks them.
@example(doc=_edited(distributedInfo={"rank": 18446744073709551623}), gz=False, way="whole")  # orjson.dumps died
@example(doc=_edited(device={"warpSize": 2**62}), gz=False, way="sliced-native")  # ZeroDivisionError in check
@example(doc=_edited(device={"maxThreadsPerMultiprocessor": 1}), gz=True, way="whole")  # ZeroDivisionError in check
@example(doc=_edited(device={"computeMajor": 2**62}), gz=False, way="sliced-python")  # orjson.dumps died in check
@example(doc=_edited(kernel_args={"blocks per SM": 10**400}), gz=False, way="whole")  # OverflowError
def test_structurally_mangled_traces_never_crash(capsys: pytest.CaptureFixture[str], doc: Any, gz: bool, way: str) -> None:
    data = json.dumps(doc).encode()
    path = _write(gzip.compress(data, mtime=0) if gz else data, ".json.gz" if gz else ".json")
    try:
        _check(path, capsys, way)
    finally:
        os.unlink(path)


@st.composite
def mangled_bytes(draw: st.DrawFn) -> tuple[bytes, str]:
    name = draw(st.sampled_from(seed_names()))
    raw = json.dumps(seed_doc(name)).encode()
    gz = draw(st.booleans())
    data = gzip.compress(raw, mtime=0) if gz else raw
    kind = draw(st.sampled_from(["truncate", "flip", "replace", "both"]))
    if kind in ("flip", "replace", "both"):
        buf = bytearray(data)
        for _ in range(draw(st.integers(min_value=1, max_value=8))):
            pos = draw(st.integers(min_value=0, max_value=len(buf) - 1))
            if kind == "flip":
                buf[pos] ^= 1 << draw(st.integers(min_value=0, max_value=7))
            else:
                buf[pos] = draw(st.sampled_from(list(b'{}[]",:0-.eE \x00\xff\x1f\x8b9')))
        data = bytes(buf)
    if kind in ("truncate", "both"):
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    return data, ".json.gz" if gz else ".json"


@SETTINGS
@given(mangled=mangled_bytes(), way=READ_WAYS)
def test_byte_mangled_traces_never_crash(capsys: pytest.CaptureFixture[str], mangled: tuple[bytes, str], way: str) -> None:
    data, suffix = mangled
    path = _write(data, suffix)
    try:
        _check(path, capsys, way)
    finally:
        os.unlink(path)


def test_seeds_are_valid_traces(capsys: pytest.CaptureFixture[str]) -> None:
    """The unmangled seeds all summarize cleanly, every way (so failures above come from the damage)."""
    for name in seed_names():
        path = _write(json.dumps(seed_doc(name)).encode(), ".json")
        try:
            for way in WAYS:
                assert _check(path, capsys, way) == 0, (name, way)
        finally:
            os.unlink(path)
