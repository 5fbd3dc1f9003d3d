"""The optional C scanner (perflint/readers/kineto/_kscan.c) gives exactly the tables of the msgspec path.

Every test reads the same bytes twice, scanner on and off (PERFLINT_NATIVE), and compares the
whole trace (tables, strings, threads, metadata) or the one-line error. Skipped where the
extension is not built (no compiler at install time): the msgspec path is then the only one.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflint.errors import InputError
from perflint.model import Trace
from perflint.readers import detect_format
from perflint.readers.kineto import chunked, native_scan
from perflint.readers.kineto import reader as kineto
from perflint.readers.kineto.columns import FIELDS, TABLES
from perflint.readers.source import read_bytes
from tests.conftest import FIXTURES, TRACES
from tests.readers.test_perf_equivalence import assert_same_trace

pytestmark = pytest.mark.skipif(not native_scan.built(), reason="C scanner not built (perflint/readers/kineto/_kscan.c)")


def _read(path: str, data: bytes, native: bool, monkeypatch: pytest.MonkeyPatch, chunk: int) -> Trace | str:
    """The sliced reader (the one the scanner serves) over `data`; an error as its one line."""
    with monkeypatch.context() as m:
        m.setenv("PERFLINT_NATIVE", "1" if native else "0")
        m.setenv("PERFLINT_CHUNK_BYTES", str(chunk))
        try:
            return kineto.read_kineto(path, data)
        except InputError as exc:
            return exc.line()


def _same(path: str, data: bytes, monkeypatch: pytest.MonkeyPatch, chunk: int) -> Trace | str:
    want = _read(path, data, False, monkeypatch, chunk)
    got = _read(path, data, True, monkeypatch, chunk)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        assert_same_trace(want, got)
        assert got.warnings == want.warnings
    return got


# --------------------------------------------------------------------------- real traces


def _kineto_traces() -> list[str]:
    found = []
    for root in (TRACES, FIXTURES):
        for p in sorted(root.rglob("*.json*")) if root.exists() else []:
            if p.suffix in (".json", ".gz") and p.stat().st_size < 8 << 20:
                found.append(str(p))
    return found


def _data(path: str) -> bytes:
    return read_bytes(path)


@pytest.mark.parametrize("path", _kineto_traces(), ids=lambda p: Path(p).name)
def test_real_traces_identical(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _data(path)
    if detect_format(path, data) != "kineto":
        pytest.skip("not a Kineto trace")
    for chunk in (1 << 22, 20_000):
        _same(path, data, monkeypatch, chunk)


def test_scanner_takes_the_common_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """A usual trace (with [memory] records) is read by the scanner, not handed back to msgspec
    whole (else the speed-up would be lost silently); the profiler's span goes to msgspec alone."""
    path = str(FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz")
    data = gzip.decompress(Path(path).read_bytes())
    kinds: list[str] = []
    decode = chunked._decode_events

    def spy(buf: Any, lo: int, hi: int) -> Any:
        got = decode(buf, lo, hi)
        kinds.append(type(got).__name__)
        return got

    with monkeypatch.context() as m:
        m.setattr(chunked, "_decode_events", spy)
        got = _read(path, data, True, monkeypatch, 100_000)
    assert not isinstance(got, str) and len(got.gpu.ts) > 0 and len(got.memory.ts) > 0
    assert len(kinds) > 2 and set(kinds) <= {"NativeSlice", "Parts"}, kinds


def test_too_many_odd_events_go_to_msgspec_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # [memory] records with a string size: the Python builder's conversion, one event at a time
    events = [{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": i, "args": {"Bytes": "8"}} for i in range(40)]
    events += [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 100 + i, "dur": 1} for i in range(5)]
    data = json.dumps({"traceEvents": events}).encode()
    body = data[data.index(b"[") + 1 : data.rindex(b"]")]
    wrapped = b"[" + body + b"]"
    assert native_scan.scan(wrapped, 1, len(wrapped) - 1, lambda a, b: []) is None
    _same("t.json", data, monkeypatch, 1 << 22)


# --------------------------------------------------------------------------- generated traces

CATS = ["cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset", "user_annotation", "python_function",
        "cuda_driver", "Kernel", "CUDA_RUNTIME", "Trace", "cuda_profiler_range", "ac2g", "", "cuda_sync"]  # fmt: skip
# Every arg key the tables read (the column specification's), and one they do not.
ARG_KEYS = [*(k for f in FIELDS if not f.event for k in f.keys), "other"]
# The keys of the comms table's columns (read from events with a Collective name).
COMMS_KEYS = sorted({k for c in TABLES["comms"] if not c.field.event for k in c.field.keys} - {"Collective name"})
ints = st.one_of(st.integers(-3, 3), st.integers(0, 2**31), st.integers(-(2**63), 2**63 - 1), st.integers(2**63, 2**70))
floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.one_of(st.sampled_from(["aten::mm", "None", "", "0x0", "stream 7", "nccl:all_reduce"]), st.text(max_size=12))
scalars = st.one_of(ints, floats, texts, st.none(), st.booleans())
values = st.one_of(scalars, st.lists(scalars, max_size=4), st.lists(st.lists(ints, max_size=3), max_size=3), st.dictionaries(texts, scalars, max_size=2))
dims3 = st.one_of(st.lists(st.integers(0, 2**20), min_size=3, max_size=3), st.lists(ints, max_size=4), values)


# A well-formed value per field (what real traces hold), and odd ones swapped in now and then.
WELL_FORMED: dict[str, st.SearchStrategy[Any]] = {
    "ph": st.sampled_from(["X", "X", "X", "X", "f", "s", "M", "i"]),
    "cat": st.sampled_from(CATS),
    "name": st.one_of(texts, st.just("[memory]")),
    "pid": st.one_of(st.integers(0, 5000), st.sampled_from(["Spans", "0"])),
    "tid": st.one_of(st.integers(0, 5000), st.just("stream 7")),
    "ts": st.one_of(st.integers(0, 2**53), floats),
    "dur": st.one_of(st.integers(0, 10**6), floats),
}
ARG_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "grid": dims3, "block": dims3, "Input Dims": st.lists(st.lists(st.integers(0, 99), max_size=3), max_size=3),
    "Input type": st.lists(st.sampled_from(["float", "c10::Half", ""]), max_size=3), "Call stack": texts,
    "Concrete Inputs": st.lists(st.sampled_from(["", "[2, 2]", "[1, 1]", "False", "1"]), max_size=4),
    "Collective name": texts, "blocks per SM": floats, "warps per SM": floats, "est. achieved occupancy %": st.integers(0, 100),
}  # fmt: skip


@st.composite
def events(draw: Callable[..., Any]) -> dict[str, Any]:
    ev: dict[str, Any] = {}
    for key, strategy in WELL_FORMED.items():
        if draw(st.integers(0, 9)):  # a key is missing one time in ten
            ev[key] = draw(strategy)
    args: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(ARG_KEYS), max_size=8, unique=True)):
        args[key] = draw(ARG_VALUES.get(key, st.integers(-1, 2**40)))
    if not draw(st.integers(0, 3)):  # a collective's record: its metadata is read only then
        args["Collective name"] = draw(texts)
        for key in draw(st.lists(st.sampled_from(COMMS_KEYS), max_size=6, unique=True)):
            args[key] = draw(st.one_of(ints, texts) if draw(st.booleans()) else values)
    if draw(st.integers(0, 9)):
        ev["args"] = args
    for _ in range(draw(st.integers(0, 2))):  # odd values: a field or an arg of another type
        if draw(st.booleans()) or not args:
            ev[draw(st.sampled_from([*WELL_FORMED, "args"]))] = draw(values)
        else:
            args[draw(st.sampled_from(sorted(args)))] = draw(values)
    return ev


def _number(x: float | int, style: int) -> str:
    if isinstance(x, bool) or not isinstance(x, float):
        return json.dumps(x)
    if style == 1 and math.isfinite(x):
        return f"{x:.17e}"
    if style == 2 and math.isfinite(x):
        return f"{x:.6E}"
    return repr(x)


def _dump(v: Any, style: int, ascii_only: bool, sep: str) -> str:
    """JSON text with the number spellings and spacing varied (json.dumps has one of each)."""
    if isinstance(v, dict):
        return "{" + sep.join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {_dump(x, style, ascii_only, sep)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + sep.join(_dump(x, style, ascii_only, sep) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=ascii_only)
    return _number(v, style)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    evs=st.lists(events(), min_size=1, max_size=25),
    style=st.integers(0, 2),
    ascii_only=st.booleans(),
    sep=st.sampled_from([",", ", ", ",\n  ", " ,\t"]),
    chunk=st.sampled_from([64, 300, 1 << 22]),
)
def test_generated_traces_identical(evs: list[dict[str, Any]], style: int, ascii_only: bool, sep: str, chunk: int,
                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    data = ('{"schemaVersion": 1, "traceEvents": ' + _dump(evs, style, ascii_only, sep) + "}").encode()
    _same("gen.json", data, monkeypatch, chunk)


BROKEN = {
    "truncated": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "cat": "cpu_op", "na',
    "trailing_comma": b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,}]}',
    "bad_escape": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\\q", "ts": 1, "dur": 2}]}',
    "lone_surrogate": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\\ud800", "ts": 1, "dur": 2}]}',
    "bad_utf8": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\xff", "ts": 1, "dur": 2}]}',
    "bad_utf8_skipped": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2, "x": "\xc0\xaf"}]}',
    "control_char": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\x01", "ts": 1, "dur": 2}]}',
    "leading_zero": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 01, "dur": 2}]}',
    "bare_dot": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1., "dur": 2}]}',
    "escaped_key": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "na\\u006de": "a", "ts": 1, "dur": 2}]}',
    "duplicate_key": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "ts": 3, "dur": 2}]}',
    "overflow_float": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1e999, "dur": 2}]}',
    "garbage_between": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2} x {"ph": "X"}]}',
    "deep": b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2, "args": {"x": ' + b"[" * 300 + b"]" * 300 + b"}}]}",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
@pytest.mark.parametrize("chunk", [40, 1 << 22])
def test_broken_or_odd_json_same_outcome(name: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _same("b.json", BROKEN[name] + b" " * 2000, monkeypatch, chunk)


def test_scanner_refuses_what_it_does_not_check() -> None:
    """The scanner's own answer: a refusal stops the columns at that event (offsets say where)."""
    good = b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1.5e1, "dur": 2}'
    odd = b'{"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 3, "args": {"Bytes": 2.5}}'
    buf = good + b" , " + odd + b",\n" + good
    n, f64, _, _, _, offs, strs, raws, pairs, *_, nxt = native_scan._kscan.scan(buf, 0, len(buf))
    assert n == 1
    assert list(memoryview(offs).cast("q")) == [0, len(good) + 3]
    assert nxt == len(good) + 3 + len(odd) + 2
    assert (strs, pairs) == (["cpu_op", "a"], [(1, 2)])
    assert tuple(memoryview(f64).cast("d")[:2]) == (15.0, 2.0)  # ts, dur
    # no ph, then not a comma: nothing taken, and the rest is msgspec's (next -1)
    got = native_scan._kscan.scan(b"{} x", 0, 4)
    assert (got[0], got[-1]) == (0, -1)


# --------------------------------------------------------------------------- strings, byte by byte

# The scanner finds a string's end 16 (SSE2) or 8 bytes at a time: a special byte at every offset
# of such a block, in a name (read), an arg value (skipped) and a key, must give what msgspec gives.
VALID_SPECIALS = ['\\"', "\\\\", "\\n", "\\u00e9", "\\u4e2d", "é", "中", "😀", "x"]
INVALID_SPECIALS = [b"\x01", b"\xff", b"\xc0\xaf", b"\\q", b"\xe4\xb8"]


def _special_event(k: int, special: str) -> str:
    text = "a" * k + special + "b" * (40 - k)
    key = "key" if "\\" in special else text  # an escaped key is refused by design
    return (f'{{"ph": "X", "cat": "cpu_op", "name": "{text}", "pid": 1, "tid": 2, "ts": {k}, "dur": 1, '
            f'"args": {{"Call stack": "{text}", "{key}": 1, "note": "{text}"}}}}')  # fmt: skip


def test_special_bytes_at_every_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    evs = [_special_event(k, sp) for sp in VALID_SPECIALS for k in range(41)]
    for ev in evs:  # alone, its last string ends at the buffer's end: the scan's tail, byte by byte
        alone = ev.encode()
        assert native_scan._kscan.scan(alone, 0, len(alone))[0] == 1, ev
    body = ", ".join(evs).encode()
    n, *_, nxt = native_scan._kscan.scan(body, 0, len(body))
    assert (n, nxt) == (len(evs), len(body))  # the scanner reads every one itself
    data = b'{"traceEvents": [' + body + b"]}"
    got = _same("s.json", data, monkeypatch, 1 << 22)
    assert not isinstance(got, str)
    assert len(got.ops.name) == len(evs)
    assert "a" * 7 + "中" + "b" * 33 in got.strings


@pytest.mark.parametrize("special", INVALID_SPECIALS, ids=lambda b: b.hex())
def test_invalid_bytes_at_every_offset(special: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in range(0, 41, 3):
        for where in range(2):  # in the name (read), in a skipped arg value
            text = b"a" * k + special + b"b" * (40 - k)
            good = b"c" * 41
            name, note = (text, good) if where == 0 else (good, text)
            ev = b'{"ph": "X", "cat": "cpu_op", "name": "' + name + b'", "ts": 1, "dur": 1, "args": {"note": "' + note + b'"}}'
            got = _same("i.json", b'{"traceEvents": [' + ev + b"]}" + b" " * 64, monkeypatch, 1 << 22)
            if where == 0:  # a name is decoded: an error (msgspec does not check skipped strings' UTF-8)
                assert isinstance(got, str), k
    for k in range(41):  # the text ending at the buffer's end: every offset of the scan's tail
        last = b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "name": "' + b"a" * k + special + b"b" * (40 - k) + b'"}'
        assert native_scan._kscan.scan(last, 0, len(last))[0] == 0, k
