"""Reader for PyTorch profiler / Kineto Chrome-trace JSON (every vintage in the corpus).

One pass over the decoded events into per-class column lists, then numpy arrays.
Category names changed across Kineto versions; all spellings map here.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from perflint.errors import InputError, NotATrace
from perflint.model import (
    GPU_SYNC,
    KERNEL,
    MEMCPY,
    MEMSET,
    NONE,
    OP_ANNOTATION,
    OP_CPU,
    CounterRange,
    Device,
    GpuTable,
    MemoryTable,
    OpTable,
    PyFnTable,
    RuntimeTable,
    Trace,
)
from perflint.readers import budget
from perflint.readers.kineto.chunked import Fallback, after, chunk_bytes, decode_range, last_slice, plan_iter, read_sliced
from perflint.readers.kineto.codes import (  # noqa: F401 (re-exported: the reader's public constants)
    C_ANN,
    C_CPR,
    C_KERNEL,
    C_MEMCPY,
    C_MEMSET,
    C_OP,
    C_PYFN,
    C_RT,
    C_SYNC,
    CATEGORY_CODES,
)
from perflint.readers.kineto.codes import (
    MEM_CODE as _MEM,
)
from perflint.readers.kineto.codes import (
    TRACE_CODE as _TRACE,
)
from perflint.readers.kineto.codes import (
    code_of as _code_of,
)
from perflint.readers.kineto.codes import (
    int_or as _int_or,
)
from perflint.readers.kineto.codes import (
    stream_of as _stream_of,
)
from perflint.readers.kineto.fast_add import StrictMiss, add_strict
from perflint.readers.kineto.native_scan import NativeSlice, Parts, add_native
from perflint.readers.kineto.ranges import INT32_MAX, INT64_MAX, check_columns, check_times, finite_time, meta_int, span_of
from perflint.readers.kineto.recording import RECORDING
from perflint.readers.kineto.schema import DECODER, DEFAULT_ARGS, STRICT_DECODER, Args, Event, StrictSlice, TraceFile
from perflint.readers.protocol import ReadOptions
from perflint.readers.source import GzipStream, PendingRead, Unavailable, open_source, read_bytes

MAX_DUR_US = 7 * 24 * 3600 * 1e6  # HTA drops events longer than 7 days as corrupt
_RANK_RE = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def _num_or_nan(x: Any) -> float:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        try:
            return float(x)
        except OverflowError:  # an int beyond float64: unknown, as no number is
            pass
    return float("nan")


def _dim3(x: Any) -> tuple[int, int, int]:
    if isinstance(x, list) and len(x) == 3 and all(isinstance(v, int) for v in x):
        return (x[0], x[1], x[2])
    return (0, 0, 0)


def decode(path: str, data: bytes) -> tuple[list[Event], TraceFile | None]:
    try:
        doc = DECODER.decode(data)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        if "traceEvents" in msg and "missing required field" in msg:
            raise InputError(path, "not a Chrome/Kineto trace: JSON object has no 'traceEvents'") from None
        if msg.startswith("Expected `object`"):
            raise InputError(path, f"not a Chrome/Kineto trace: {msg}") from None
        raise InputError(path, f"unexpected value in trace: {msg}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"invalid JSON: not UTF-8 text (byte {exc.start})") from None
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "truncated" in msg.lower():
            raise InputError(path, f"invalid JSON: input is truncated ({msg})") from None
        raise InputError(path, f"invalid JSON: {msg}") from None
    if isinstance(doc, list):
        return doc, None
    return doc.traceEvents, doc


# cudaDeviceProp / hipDeviceProp_t hold these as C ints (totalGlobalMem as size_t, taken as int64
# here): a value beyond, or one that cannot be (no SMs, a negative count), is unknown.
_COUNT_MAX = {"totalGlobalMem": INT64_MAX}
# A warp (wavefront) is 32 or 64 threads on every GPU; any power of two up to a block's 1024 is
# taken, anything else is unknown (the default).
_WARP_SIZES = frozenset(1 << k for k in range(11))


def parse_devices(props: Any, notes: list[str] | None = None) -> dict[int, Device]:
    """Devices of deviceProperties; each value out of range is dropped as unknown and named in `notes`."""
    devices: dict[int, Device] = {}
    if not isinstance(props, list):
        return devices
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        dropped: list[str] = []

        def ranged(key: str, v: Any, lo: int, hi: int) -> int | None:
            r = meta_int(v, lo, hi)
            if r is None and v.__class__ is int:
                dropped.append(key)
            return r

        raw_id = _int_or(p.get("id"), 0)
        dev_id = ranged("id", raw_id, 0, INT32_MAX)
        if dev_id is None:
            dev_id = 0
        raw_name = p.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        major = ranged("computeMajor", p.get("computeMajor", p.get("major")), 0, INT32_MAX)
        minor = ranged("computeMinor", p.get("computeMinor", p.get("minor")), 0, INT32_MAX)
        warp = _int_or(p.get("warpSize"), 32)
        if warp not in _WARP_SIZES:
            dropped.append("warpSize")
            warp = 32
        lname = name.lower()
        if warp == 64 or "amd" in lname or "instinct" in lname or "radeon" in lname:
            vendor = "amd"
        elif name or isinstance(major, int):
            vendor = "nvidia"
        else:
            vendor = "unknown"

        def opt(*keys: str) -> int | None:
            """The first of `keys` in range; 0 is how Kineto writes a property it could not query."""
            bad = None
            for k in keys:
                v = p.get(k)
                if v.__class__ is int:
                    r = meta_int(v, 1, _COUNT_MAX.get(k, INT32_MAX))
                    if r is not None:
                        return r
                    if v != 0 and bad is None:
                        bad = k
            if bad is not None:
                dropped.append(bad)
            return None

        cc = (major, minor) if major is not None and minor is not None else None
        sm_count = opt("numSms", "multiProcessorCount")
        max_threads = opt("maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor")
        if max_threads is not None and max_threads < warp:  # a multiprocessor holds at least one warp
            dropped.append("maxThreadsPerMultiprocessor")
            max_threads = None
        regs_sm, regs_block = opt("regsPerMultiprocessor"), opt("regsPerBlock")
        smem_sm = opt("sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor")
        smem_block = opt("sharedMemPerBlockOptin", "sharedMemPerBlock")
        max_blocks = opt("maxBlocksPerMultiProcessor", "maxBlocksPerMultiprocessor")
        total = opt("totalGlobalMem")
        if dropped and notes is not None:
            notes.append(f"deviceProperties[{i}]: out-of-range {', '.join(dropped)} ignored")
        devices[dev_id] = Device(
            id=dev_id,
            name=name,
            vendor=vendor,
            sm_count=sm_count,
            compute_capability=cc,
            max_threads_per_sm=max_threads,
            regs_per_sm=regs_sm,
            regs_per_block=regs_block,
            shared_mem_per_sm=smem_sm,
            shared_mem_per_block=smem_block,
            max_blocks_per_sm=max_blocks,
            warp_size=warp,
            total_memory=total,
        )
    return devices


class _Interner:
    __slots__ = ("strings", "ids")

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.ids: dict[Any, int] = {}

    def __call__(self, s: Any) -> int:
        sid = self.ids.get(s)
        if sid is None:
            sid = len(self.strings)
            self.ids[s] = sid
            self.strings.append(s if isinstance(s, str) else s.decode("utf-8", "replace"))
        return sid


def _arr(path: str, what: str, values: list[Any], dtype: Any, ndim: int = 1) -> np.ndarray:
    """A column of `values`; one that is a list (numpy would make the column two-dimensional)
    or no number is bad input."""
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-numeric or out-of-range value in {what}") from None
    if values and arr.ndim != ndim:
        raise InputError(path, f"non-numeric or out-of-range value in {what}")
    return arr


def build_trace_reference(path: str, events: list[Event], doc: TraceFile | None, data: bytes | None = None) -> Trace:
    """Columns from decoded events, one event at a time: the reference the fast builder must equal.

    `data` is only used for the rare CUPTI counter mode."""
    intern = _Interner()
    thread_ids: dict[tuple[Any, Any], int] = {}
    threads: list[tuple[str, str]] = []

    def thread(pid: Any, tid: Any) -> int:
        key = (pid, tid)
        try:
            t = thread_ids.get(key)
        except TypeError:  # a list/object pid or tid (damaged trace): key by its text
            key = (str(pid), str(tid))
            t = thread_ids.get(key)
        if t is None:
            t = len(threads)
            thread_ids[key] = t
            threads.append((str(pid), str(tid)))
        return t

    # ops
    o_kind: list[int] = []
    o_name: list[int] = []
    o_thr: list[int] = []
    o_ts: list[Any] = []
    o_dur: list[Any] = []
    o_ext: list[int] = []
    o_seq: list[int] = []
    o_fwd: list[int] = []
    o_dims: list[int] = []
    o_types: list[int] = []
    o_stack: list[int] = []
    o_conc: list[int] = []
    # runtime
    r_name: list[int] = []
    r_thr: list[int] = []
    r_ts: list[Any] = []
    r_dur: list[Any] = []
    r_corr: list[int] = []
    r_ext: list[int] = []
    # gpu
    g_kind: list[int] = []
    g_name: list[int] = []
    g_dev: list[int] = []
    g_stream: list[int] = []
    g_ts: list[Any] = []
    g_dur: list[Any] = []
    g_corr: list[int] = []
    g_ext: list[int] = []
    g_grid: list[tuple[int, int, int]] = []
    g_block: list[tuple[int, int, int]] = []
    g_regs: list[int] = []
    g_shmem: list[int] = []
    g_bps: list[float] = []
    g_wps: list[float] = []
    g_occ: list[float] = []
    g_bytes: list[int] = []
    g_coll: list[int] = []
    # python functions
    p_name: list[int] = []
    p_thr: list[int] = []
    p_ts: list[Any] = []
    p_dur: list[Any] = []
    # memory
    m_thr: list[int] = []
    m_ts: list[Any] = []
    m_bytes: list[int] = []
    m_alloc: list[int] = []
    m_res: list[int] = []
    m_dtype: list[int] = []
    m_did: list[int] = []
    cpr: list[tuple[int, Any, Any]] = []

    codes = CATEGORY_CODES
    profiler_span: tuple[float, float] | None = None
    for e in events:
        ph = e.ph
        if ph == "X":
            cat = e.cat
            if cat.__class__ is not str:  # None, or a list/object in a damaged trace (unhashable)
                continue
            code = codes.get(cat)
            if code is None:
                code = codes.get(cat.lower())
                if code is None:
                    if cat == "Trace" and isinstance(e.name, str) and e.name.startswith("PyTorch Profiler"):
                        # The profiler's own span: the TB plugin's counter series cover exactly it.
                        profiler_span = span_of(e.ts, e.dur) or profiler_span
                    continue
            a = e.args
            name = e.name if isinstance(e.name, str) else str(e.name)
            if code <= C_ANN:
                o_kind.append(OP_CPU if code == C_OP else OP_ANNOTATION)
                o_name.append(intern(name))
                o_thr.append(thread(e.pid, e.tid))
                o_ts.append(e.ts)
                o_dur.append(e.dur)
                if a is None:
                    o_ext.append(NONE)
                    o_seq.append(NONE)
                    o_fwd.append(NONE)
                    o_dims.append(NONE)
                    o_types.append(NONE)
                    o_stack.append(NONE)
                    o_conc.append(NONE)
                else:
                    x = a.ext if a.ext is not None else a.ext_lc
                    o_ext.append(x if type(x) is int else _int_or(x))
                    o_seq.append(_int_or(a.seq))
                    o_fwd.append(_int_or(a.fwd_tid))
                    o_dims.append(intern(bytes(a.dims)) if a.dims else NONE)
                    o_types.append(intern(bytes(a.types)) if a.types else NONE)
                    o_stack.append(intern(a.stack) if isinstance(a.stack, str) and a.stack else NONE)
                    o_conc.append(intern(bytes(a.concrete)) if a.concrete else NONE)
            elif code == C_PYFN:
                p_name.append(intern(name))
                p_thr.append(thread(e.pid, e.tid))
                p_ts.append(e.ts)
                p_dur.append(e.dur)
            elif code == C_RT:
                r_name.append(intern(name))
                r_thr.append(thread(e.pid, e.tid))
                r_ts.append(e.ts)
                r_dur.append(e.dur)
                if a is None:
                    r_corr.append(NONE)
                    r_ext.append(NONE)
                else:
                    r_corr.append(_int_or(a.correlation))
                    x = a.ext if a.ext is not None else a.ext_lc
                    r_ext.append(_int_or(x))
            elif code == C_CPR:
                cpr.append((intern(name), e.ts, e.dur))
            else:
                g_kind.append(
                    KERNEL if code == C_KERNEL else MEMCPY if code == C_MEMCPY else MEMSET if code == C_MEMSET else GPU_SYNC
                )
                g_name.append(intern(name))
                g_ts.append(e.ts)
                g_dur.append(e.dur)
                if a is None:
                    g_dev.append(_int_or(e.pid, 0))
                    g_stream.append(NONE)
                    g_corr.append(NONE)
                    g_ext.append(NONE)
                    g_grid.append((0, 0, 0))
                    g_block.append((0, 0, 0))
                    g_regs.append(NONE)
                    g_shmem.append(NONE)
                    g_bps.append(float("nan"))
                    g_wps.append(float("nan"))
                    g_occ.append(float("nan"))
                    g_bytes.append(NONE)
                    g_coll.append(NONE)
                else:
                    g_dev.append(_int_or(a.device, _int_or(e.pid, 0)))
                    g_stream.append(_stream_of(a.stream))
                    g_corr.append(_int_or(a.correlation))
                    x = a.ext if a.ext is not None else a.ext_lc
                    g_ext.append(_int_or(x))
                    g_grid.append(_dim3(a.grid))
                    g_block.append(_dim3(a.block))
                    g_regs.append(_int_or(a.regs))
                    g_shmem.append(_int_or(a.shmem))
                    g_bps.append(_num_or_nan(a.blocks_per_sm))
                    g_wps.append(_num_or_nan(a.warps_per_sm))
                    g_occ.append(_num_or_nan(a.occupancy))
                    g_bytes.append(_int_or(a.nbytes))
                    g_coll.append(intern(a.collective) if isinstance(a.collective, str) else NONE)
        elif (ph == "i" or ph == "I") and e.name == "[memory]":
            a = e.args
            if a is None:
                continue
            m_thr.append(thread(e.pid, e.tid))
            m_ts.append(e.ts)
            m_bytes.append(_int_or(a.mem_bytes, 0))
            m_alloc.append(_int_or(a.total_allocated))
            m_res.append(_int_or(a.total_reserved))
            m_dtype.append(_int_or(a.device_type))
            m_did.append(_int_or(a.device_id))

    f64, i64, i32 = np.float64, np.int64, np.int32
    ops = OpTable(
        kind=_arr(path, "op kind", o_kind, np.int8),
        name=_arr(path, "op name", o_name, i32),
        thread=_arr(path, "op thread", o_thr, i32),
        ts=_arr(path, "cpu_op ts", o_ts, f64),
        dur=_arr(path, "cpu_op dur", o_dur, f64),
        ext_id=_arr(path, "cpu_op External id", o_ext, i64),
        seq=_arr(path, "Sequence number", o_seq, i64),
        fwd_tid=_arr(path, "Fwd thread id", o_fwd, i64),
        dims=_arr(path, "Input Dims", o_dims, i32),
        types=_arr(path, "Input type", o_types, i32),
        concrete=_arr(path, "Concrete Inputs", o_conc, i32),
        stack=_arr(path, "Call stack", o_stack, i32),
        pycall=np.full(len(o_name), NONE, dtype=i32),
        parent=np.full(len(o_name), NONE, dtype=i32),
        depth=np.zeros(len(o_name), dtype=np.int16),
        source=np.full(len(o_name), NONE, dtype=i32),
        fwd_op=np.full(len(o_name), NONE, dtype=i32),
    )
    runtime = RuntimeTable(
        name=_arr(path, "runtime name", r_name, i32),
        thread=_arr(path, "runtime thread", r_thr, i32),
        ts=_arr(path, "runtime ts", r_ts, f64),
        dur=_arr(path, "runtime dur", r_dur, f64),
        correlation=_arr(path, "runtime correlation", r_corr, i64),
        ext_id=_arr(path, "runtime External id", r_ext, i64),
        op=np.full(len(r_name), NONE, dtype=i32),
    )
    ng = len(g_name)
    gpu = GpuTable(
        kind=_arr(path, "gpu kind", g_kind, np.int8),
        name=_arr(path, "kernel name", g_name, i32),
        device=_arr(path, "kernel device", g_dev, i32),
        stream=_arr(path, "kernel stream", g_stream, i64),
        ts=_arr(path, "kernel ts", g_ts, f64),
        dur=_arr(path, "kernel dur", g_dur, f64),
        correlation=_arr(path, "kernel correlation", g_corr, i64),
        ext_id=_arr(path, "kernel External id", g_ext, i64),
        grid=_arr(path, "kernel grid", g_grid, i64, 2).reshape(ng, 3),
        block=_arr(path, "kernel block", g_block, i64, 2).reshape(ng, 3),
        regs=_arr(path, "registers per thread", g_regs, i32),
        shmem=_arr(path, "shared memory", g_shmem, i64),
        blocks_per_sm=_arr(path, "blocks per SM", g_bps, f64),
        warps_per_sm=_arr(path, "warps per SM", g_wps, f64),
        occupancy=_arr(path, "est. achieved occupancy %", g_occ, f64),
        nbytes=_arr(path, "bytes", g_bytes, i64),
        collective=_arr(path, "Collective name", g_coll, i32),
        launch=np.full(ng, NONE, dtype=i32),
    )
    pyfn = PyFnTable(
        name=_arr(path, "python_function name", p_name, i32),
        thread=_arr(path, "python_function thread", p_thr, i32),
        ts=_arr(path, "python_function ts", p_ts, f64),
        dur=_arr(path, "python_function dur", p_dur, f64),
    )
    memory = MemoryTable(
        thread=_arr(path, "[memory] thread", m_thr, i32),
        ts=_arr(path, "[memory] ts", m_ts, f64),
        nbytes=_arr(path, "[memory] Bytes", m_bytes, i64),
        total_allocated=_arr(path, "Total Allocated", m_alloc, i64),
        total_reserved=_arr(path, "Total Reserved", m_res, i64),
        device_type=_arr(path, "Device Type", m_dtype, np.int16),
        device_id=_arr(path, "Device Id", m_did, np.int16),
    )
    return finish_trace(
        path,
        Trace(
            path=path,
            format="kineto",
            strings=intern.strings,
            threads=threads,
            ops=ops,
            runtime=runtime,
            gpu=gpu,
            pyfn=pyfn,
            memory=memory,
        ),
        doc,
        profiler_span,
        cpr,
        lambda: data,
        had_events=bool(events),
    )


def finish_trace(
    path: str,
    trace: Trace,
    doc: TraceFile | None,
    profiler_span: tuple[float, float] | None,
    cpr: list[tuple[int, Any, Any]],
    counter_data: Any,
    had_events: bool,
) -> Trace:
    """What every read path does once the tables exist: validate times, apply metadata, attach
    CUPTI counter ranges (`counter_data()` gives the raw bytes, only needed then), find the rank,
    and refuse a trace with nothing perflint understands."""
    trace.recording = dict(RECORDING)
    _validate_times(trace)
    check_times(trace)
    _drop_untimed(trace)
    check_columns(trace)
    if doc is not None:
        _apply_metadata(trace, doc)
    if profiler_span is not None:
        trace.meta["profiler_range"] = profiler_span
    if cpr:
        trace.counter_ranges = _counter_ranges(path, cpr, counter_data() if counter_data else None)
    if trace.rank is None:
        m = _RANK_RE.search(path.rsplit("/", 1)[-1])
        if m:
            trace.rank = meta_int(int(m.group(1)), 0, INT32_MAX)
    t = trace
    n_events = len(t.ops) + len(t.runtime) + len(t.gpu) + len(t.pyfn) + len(t.memory) + len(t.counter_ranges)
    if n_events == 0:
        if not had_events:
            raise InputError(path, "trace has no events")
        raise NotATrace(path, "no PyTorch profiler events (cpu_op, kernel, cuda_runtime, ...) in this Chrome trace")
    return trace


# --------------------------------------------------------------------------- columnar builder
# The reference loop above appends event by event; this builder does the same work one field at
# a time over the events of one class (list comprehensions and numpy), slice by slice, and gives
# identical tables: string and thread ids are renumbered at the end into the reference loop's
# first-encounter order. Slices decoded with the strict schema (a StrictSlice) go to
# fast_add.add_strict, which gives the same tables from values already in their final types.

_NAN = float("nan")
_Z3 = (0, 0, 0)


def _ints(vals: list[Any], default: int = NONE) -> list[Any]:
    return [v if v.__class__ is int else default if v is None else _int_or(v, default) for v in vals]


def _floats(vals: list[Any]) -> list[float]:
    try:
        return [float(v) if v.__class__ is float or v.__class__ is int else _NAN for v in vals]
    except OverflowError:  # an int beyond float64 (rare): unknown, as a value of another type is
        return [_num_or_nan(v) for v in vals]


def _dims3(vals: list[Any]) -> list[Any]:
    return [
        g
        if g.__class__ is list and len(g) == 3 and g[0].__class__ is int and g[1].__class__ is int and g[2].__class__ is int
        else _Z3 if g is None else _dim3(g)
        for g in vals
    ]


def _take(events: list[Event], idx: np.ndarray) -> list[Event]:
    return [events[i] for i in idx.tolist()]


def _ext(args: list[Args]) -> list[Any]:
    return _ints([a.ext if a.ext is not None else a.ext_lc for a in args])


class _Table:
    """Per-slice numpy columns of one table, plus each row's event position (for id renumbering)."""

    def __init__(self) -> None:
        self.cols: dict[str, list[np.ndarray]] = {}
        self.pos: list[np.ndarray] = []

    def add(self, pos: np.ndarray, **cols: np.ndarray) -> None:
        self.pos.append(pos)
        for k, v in cols.items():
            self.cols.setdefault(k, []).append(v)

    def col(self, name: str, dtype: Any, width: int = 0) -> np.ndarray:
        parts = self.cols.get(name)
        if not parts:
            return np.zeros((0, width) if width else 0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def compact(self) -> tuple[dict[str, list[np.ndarray]], list[np.ndarray]]:
        """The parts joined (one array per column: fewer, bigger objects to pickle)."""
        if len(self.pos) > 1:
            self.cols = {k: [np.concatenate(v)] for k, v in self.cols.items()}
            self.pos = [np.concatenate(self.pos)]
        return self.cols, self.pos

    def positions(self) -> np.ndarray:
        if not self.pos:
            return np.zeros(0, dtype=np.int64)
        return self.pos[0] if len(self.pos) == 1 else np.concatenate(self.pos)


class _StringIds(dict):  # type: ignore[type-arg]
    """String id by key (str, or bytes of raw JSON); a new key gets the next id. None and b""
    (no value, an absent Input Dims) are seeded as NONE for the strict builder's lookups."""

    def __init__(self, strings: list[str]) -> None:
        super().__init__({None: NONE, b"": NONE})
        self.strings = strings

    def __missing__(self, k: Any) -> int:
        sid = self[k] = len(self.strings)
        self.strings.append(k if k.__class__ is str else k.decode("utf-8", "replace"))
        return sid


class _ThreadIds(dict):  # type: ignore[type-arg]
    """Thread id by (pid, tid); a new key gets the next id and its text."""

    def __init__(self, threads: list[tuple[str, str]]) -> None:
        super().__init__()
        self.threads = threads

    def __missing__(self, k: Any) -> int:
        t = self[k] = len(self.threads)
        self.threads.append((str(k[0]), str(k[1])))
        return t


class ColumnBuilder:
    """Accumulates the tables of one trace from slices of its events (`add`), then `finish`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.strings: list[str] = []
        self.ids: dict[Any, int] = _StringIds(self.strings)
        self.threads: list[tuple[str, str]] = []
        self.thread_ids: dict[Any, int] = _ThreadIds(self.threads)
        self.memo: dict[Any, int] = {}
        self.n_events = 0
        self.ops, self.rt, self.gpu, self.pyfn, self.mem = _Table(), _Table(), _Table(), _Table(), _Table()
        self.cpr: list[tuple[int, Any, Any]] = []
        self.cpr_pos: list[int] = []
        self.profiler_span: tuple[float, float] | None = None

    # -- interning -------------------------------------------------------------------------
    def _intern(self, keys: list[Any]) -> np.ndarray:
        """ids of `keys` (None = missing -> NONE); str and bytes keys, as the reference interner."""
        ids, strings = self.ids, self.strings
        for k in dict.fromkeys(keys):
            if k is not None and k not in ids:
                ids[k] = len(strings)
                strings.append(k if isinstance(k, str) else k.decode("utf-8", "replace"))
        return np.fromiter(map(ids.get, keys, [NONE] * len(keys)), dtype=np.int32, count=len(keys))

    def _names(self, evs: list[Event]) -> np.ndarray:
        names = [e.name for e in evs]
        try:
            types = set(map(type, names))
        except TypeError:  # pragma: no cover - type() never fails
            types = {object}
        if types - {str}:
            names = [n if isinstance(n, str) else str(n) for n in names]
        return self._intern(names)

    def _thread(self, evs: Sequence[Event]) -> np.ndarray:
        keys = [(e.pid, e.tid) for e in evs]
        tids, threads = self.thread_ids, self.threads
        try:
            new = [k for k in dict.fromkeys(keys) if k not in tids]
        except TypeError:  # a list/object pid or tid (damaged trace): key by its text
            fixed = []
            for k in keys:
                try:
                    hash(k)
                except TypeError:
                    k = (str(k[0]), str(k[1]))
                fixed.append(k)
            keys = fixed
            new = [k for k in dict.fromkeys(keys) if k not in tids]
        for k in new:
            tids[k] = len(threads)
            threads.append((str(k[0]), str(k[1])))
        return np.fromiter(map(tids.__getitem__, keys), dtype=np.int32, count=len(keys))

    def _arr(self, what: str, values: list[Any], dtype: Any, ndim: int = 1) -> np.ndarray:
        return _arr(self.path, what, values, dtype, ndim)

    # -- one slice -------------------------------------------------------------------------
    def add(self, events: list[Event] | StrictSlice | NativeSlice | Parts) -> None:
        if isinstance(events, NativeSlice):
            add_native(self, events)
            return
        if isinstance(events, Parts):
            for part in events:
                self.add(part)
            return
        if isinstance(events, StrictSlice):
            try:
                add_strict(self, events.events)
                return
            except StrictMiss:
                events = events.redo()
        base = self.n_events
        n = len(events)
        self.n_events += n
        if n == 0:
            return
        memo = self.memo
        try:
            keys = [(e.ph, e.cat) for e in events]
            for k in dict.fromkeys(keys):
                if k not in memo:
                    memo[k] = _code_of(*k)
            codes = np.fromiter(map(memo.__getitem__, keys), dtype=np.int8, count=n)
        except TypeError:  # an unhashable ph or cat
            codes = np.fromiter((_code_of(e.ph, e.cat) for e in events), dtype=np.int8, count=n)
        del keys
        present = np.bincount(codes, minlength=_MEM + 1)
        if present[C_OP] or present[C_ANN]:
            idx = np.flatnonzero((codes == C_OP) | (codes == C_ANN))
            self._ops(_take(events, idx), idx + base, codes[idx])
        if present[C_RT]:
            idx = np.flatnonzero(codes == C_RT)
            self._runtime(_take(events, idx), idx + base)
        if present[C_KERNEL] or present[C_MEMCPY] or present[C_MEMSET] or present[C_SYNC]:
            idx = np.flatnonzero((codes >= C_KERNEL) & (codes <= C_SYNC))
            self._gpu(_take(events, idx), idx + base, codes[idx])
        if present[C_PYFN]:
            idx = np.flatnonzero(codes == C_PYFN)
            evs = _take(events, idx)
            self.pyfn.add(
                idx + base,
                name=self._names(evs),
                thread=self._thread(evs),
                ts=self._arr("python_function ts", [e.ts for e in evs], np.float64),
                dur=self._arr("python_function dur", [e.dur for e in evs], np.float64),
            )
        if present[C_CPR]:
            idx = np.flatnonzero(codes == C_CPR)
            evs = _take(events, idx)
            names = self._names(evs).tolist()
            for i, e, nm in zip(idx.tolist(), evs, names):
                self.cpr.append((nm, e.ts, e.dur))
                self.cpr_pos.append(i + base)
        if present[_TRACE]:
            for e in _take(events, np.flatnonzero(codes == _TRACE)):
                if isinstance(e.name, str) and e.name.startswith("PyTorch Profiler"):
                    # The profiler's own span: the TB plugin's counter series cover exactly it.
                    self.profiler_span = span_of(e.ts, e.dur) or self.profiler_span
        if present[_MEM]:
            keep = [i for i in np.flatnonzero(codes == _MEM).tolist() if events[i].name == "[memory]" and events[i].args is not None]
            if keep:
                self._memory(_take(events, np.asarray(keep)), np.asarray(keep, dtype=np.int64) + base)

    def _ops(self, evs: list[Event], pos: np.ndarray, codes: np.ndarray) -> None:
        A = [a if a is not None else DEFAULT_ARGS for a in [e.args for e in evs]]
        i64, f64 = np.int64, np.float64
        self.ops.add(
            pos,
            kind=np.where(codes == C_OP, OP_CPU, OP_ANNOTATION).astype(np.int8),
            name=self._names(evs),
            thread=self._thread(evs),
            ts=self._arr("cpu_op ts", [e.ts for e in evs], f64),
            dur=self._arr("cpu_op dur", [e.dur for e in evs], f64),
            ext_id=self._arr("cpu_op External id", _ext(A), i64),
            seq=self._arr("Sequence number", _ints([a.seq for a in A]), i64),
            fwd_tid=self._arr("Fwd thread id", _ints([a.fwd_tid for a in A]), i64),
            dims=self._intern([bytes(r) if r else None for r in [a.dims for a in A]]),
            types=self._intern([bytes(r) if r else None for r in [a.types for a in A]]),
            stack=self._intern([s if s.__class__ is str and s else None for s in [a.stack for a in A]]),
            concrete=self._intern([bytes(r) if r else None for r in [a.concrete for a in A]]),
        )

    def _runtime(self, evs: list[Event], pos: np.ndarray) -> None:
        A = [a if a is not None else DEFAULT_ARGS for a in [e.args for e in evs]]
        self.rt.add(
            pos,
            name=self._names(evs),
            thread=self._thread(evs),
            ts=self._arr("runtime ts", [e.ts for e in evs], np.float64),
            dur=self._arr("runtime dur", [e.dur for e in evs], np.float64),
            correlation=self._arr("runtime correlation", _ints([a.correlation for a in A]), np.int64),
            ext_id=self._arr("runtime External id", _ext(A), np.int64),
        )

    def _gpu(self, evs: list[Event], pos: np.ndarray, codes: np.ndarray) -> None:
        A = [a if a is not None else DEFAULT_ARGS for a in [e.args for e in evs]]
        i64, f64 = np.int64, np.float64
        kind_of = np.zeros(C_SYNC + 1, dtype=np.int8)
        kind_of[C_KERNEL], kind_of[C_MEMCPY], kind_of[C_MEMSET], kind_of[C_SYNC] = KERNEL, MEMCPY, MEMSET, GPU_SYNC
        n = len(evs)
        self.gpu.add(
            pos,
            kind=kind_of[codes],
            name=self._names(evs),
            device=self._arr(
                "kernel device",
                [d if d.__class__ is int else _int_or(d, _int_or(e.pid, 0)) for d, e in zip([a.device for a in A], evs)],
                np.int32,
            ),
            stream=self._arr("kernel stream", [s if s.__class__ is int else _stream_of(s) for s in [a.stream for a in A]], i64),
            ts=self._arr("kernel ts", [e.ts for e in evs], f64),
            dur=self._arr("kernel dur", [e.dur for e in evs], f64),
            correlation=self._arr("kernel correlation", _ints([a.correlation for a in A]), i64),
            ext_id=self._arr("kernel External id", _ext(A), i64),
            grid=self._arr("kernel grid", _dims3([a.grid for a in A]), i64, 2).reshape(n, 3),
            block=self._arr("kernel block", _dims3([a.block for a in A]), i64, 2).reshape(n, 3),
            regs=self._arr("registers per thread", _ints([a.regs for a in A]), np.int32),
            shmem=self._arr("shared memory", _ints([a.shmem for a in A]), i64),
            blocks_per_sm=np.asarray(_floats([a.blocks_per_sm for a in A]), dtype=f64),
            warps_per_sm=np.asarray(_floats([a.warps_per_sm for a in A]), dtype=f64),
            occupancy=np.asarray(_floats([a.occupancy for a in A]), dtype=f64),
            nbytes=self._arr("bytes", _ints([a.nbytes for a in A]), i64),
            collective=self._intern([c if c.__class__ is str else None for c in [a.collective for a in A]]),
        )

    def _memory(self, evs: Sequence[Event], pos: np.ndarray) -> None:
        A = [a if a is not None else DEFAULT_ARGS for a in [e.args for e in evs]]  # callers pass events with args
        self.mem.add(
            pos,
            thread=self._thread(evs),
            ts=self._arr("[memory] ts", [e.ts for e in evs], np.float64),
            nbytes=self._arr("[memory] Bytes", _ints([a.mem_bytes for a in A], 0), np.int64),
            total_allocated=self._arr("Total Allocated", _ints([a.total_allocated for a in A]), np.int64),
            total_reserved=self._arr("Total Reserved", _ints([a.total_reserved for a in A]), np.int64),
            device_type=self._arr("Device Type", _ints([a.device_type for a in A]), np.int16),
            device_id=self._arr("Device Id", _ints([a.device_id for a in A]), np.int16),
        )

    # -- slices built in other processes -----------------------------------------------------
    _STRING_COLS = {"ops": ("name", "dims", "types", "stack", "concrete"), "rt": ("name",), "gpu": ("name", "collective"), "pyfn": ("name",)}

    def export(self) -> dict[str, Any]:
        """Picklable state of a builder that saw one slice (local string and thread ids)."""
        keys: list[Any] = [None] * len(self.strings)
        for k, v in self.ids.items():
            if v >= 0:  # not the seeded "missing" keys
                keys[v] = k
        tkeys: list[Any] = [None] * len(self.threads)
        for k, v in self.thread_ids.items():
            tkeys[v] = k
        tables = {t: getattr(self, t).compact() for t in ("ops", "rt", "gpu", "pyfn", "mem")}
        return {
            "keys": keys, "strings": self.strings, "tkeys": tkeys, "threads": self.threads, "tables": tables,
            "cpr": self.cpr, "cpr_pos": self.cpr_pos, "span": self.profiler_span, "n": self.n_events,
        }  # fmt: skip

    def merge(self, st: dict[str, Any]) -> None:
        """Append an exported slice after the events seen so far (ids mapped into this builder's)."""
        base = self.n_events
        lut = np.empty(len(st["keys"]) + 1, dtype=np.int32)
        lut[-1] = NONE
        for i, (k, text) in enumerate(zip(st["keys"], st["strings"])):
            g = self.ids.get(k)
            if g is None:
                g = self.ids[k] = len(self.strings)
                self.strings.append(text)
            lut[i] = g
        tlut = np.empty(len(st["tkeys"]) + 1, dtype=np.int32)
        for i, (k, t) in enumerate(zip(st["tkeys"], st["threads"])):
            g = self.thread_ids.get(k)
            if g is None:
                g = self.thread_ids[k] = len(self.threads)
                self.threads.append(t)
            tlut[i] = g
        for name, (cols, pos) in st["tables"].items():
            tbl: _Table = getattr(self, name)
            strings = self._STRING_COLS.get(name, ())
            for p in pos:
                tbl.pos.append(p + base)
            for c, parts in cols.items():
                if c in strings:
                    parts = [lut[x] for x in parts]
                elif c == "thread":
                    parts = [tlut[x] for x in parts]
                tbl.cols.setdefault(c, []).extend(parts)
        for (nm, ts, dur), p in zip(st["cpr"], st["cpr_pos"]):
            self.cpr.append((int(lut[nm]), ts, dur))
            self.cpr_pos.append(p + base)
        if st["span"] is not None:
            self.profiler_span = st["span"]
        self.n_events += st["n"]

    # -- the trace -------------------------------------------------------------------------
    def _renumber(self, cols: list[tuple[np.ndarray, np.ndarray, int]], n: int) -> np.ndarray | None:
        """Map old id -> id in first-encounter order over (event position, field rank < 8); None if unchanged."""
        if n == 0:
            return None
        # One slot more: the NONE (-1) ids land in it, and it is dropped.
        first = np.full(n + 1, np.iinfo(np.int64).max, dtype=np.int64)
        for ids, pos, rank in cols:
            if len(ids):
                np.minimum.at(first, ids, pos * 8 + rank)
        order = np.argsort(first[:n], kind="stable")
        if (order == np.arange(n)).all():
            return None
        lut = np.empty(n + 1, dtype=np.int32)
        lut[order] = np.arange(n, dtype=np.int32)
        lut[n] = NONE  # index -1 (NONE) lands here
        return lut

    def finish(self, doc: TraceFile | None, counter_data: Callable[[], bytes] | None = None) -> Trace:
        path = self.path
        O, R, G, P, M = self.ops, self.rt, self.gpu, self.pyfn, self.mem
        i32, i64, f64 = np.int32, np.int64, np.float64
        o_pos, r_pos, g_pos, p_pos, m_pos = O.positions(), R.positions(), G.positions(), P.positions(), M.positions()
        ops = OpTable(
            kind=O.col("kind", np.int8),
            name=O.col("name", i32),
            thread=O.col("thread", i32),
            ts=O.col("ts", f64),
            dur=O.col("dur", f64),
            ext_id=O.col("ext_id", i64),
            seq=O.col("seq", i64),
            fwd_tid=O.col("fwd_tid", i64),
            dims=O.col("dims", i32),
            types=O.col("types", i32),
            concrete=O.col("concrete", i32),
            stack=O.col("stack", i32),
            pycall=np.full(len(o_pos), NONE, dtype=i32),
            parent=np.full(len(o_pos), NONE, dtype=i32),
            depth=np.zeros(len(o_pos), dtype=np.int16),
            source=np.full(len(o_pos), NONE, dtype=i32),
            fwd_op=np.full(len(o_pos), NONE, dtype=i32),
        )
        runtime = RuntimeTable(
            name=R.col("name", i32),
            thread=R.col("thread", i32),
            ts=R.col("ts", f64),
            dur=R.col("dur", f64),
            correlation=R.col("correlation", i64),
            ext_id=R.col("ext_id", i64),
            op=np.full(len(r_pos), NONE, dtype=i32),
        )
        gpu = GpuTable(
            kind=G.col("kind", np.int8),
            name=G.col("name", i32),
            device=G.col("device", i32),
            stream=G.col("stream", i64),
            ts=G.col("ts", f64),
            dur=G.col("dur", f64),
            correlation=G.col("correlation", i64),
            ext_id=G.col("ext_id", i64),
            grid=G.col("grid", i64, 3),
            block=G.col("block", i64, 3),
            regs=G.col("regs", i32),
            shmem=G.col("shmem", i64),
            blocks_per_sm=G.col("blocks_per_sm", f64),
            warps_per_sm=G.col("warps_per_sm", f64),
            occupancy=G.col("occupancy", f64),
            nbytes=G.col("nbytes", i64),
            collective=G.col("collective", i32),
            launch=np.full(len(g_pos), NONE, dtype=i32),
        )
        pyfn = PyFnTable(name=P.col("name", i32), thread=P.col("thread", i32), ts=P.col("ts", f64), dur=P.col("dur", f64))
        memory = MemoryTable(
            thread=M.col("thread", i32),
            ts=M.col("ts", f64),
            nbytes=M.col("nbytes", i64),
            total_allocated=M.col("total_allocated", i64),
            total_reserved=M.col("total_reserved", i64),
            device_type=M.col("device_type", np.int16),
            device_id=M.col("device_id", np.int16),
        )
        cpr_ids = np.asarray([c[0] for c in self.cpr], dtype=i32)
        cpr_pos = np.asarray(self.cpr_pos, dtype=i64)
        strings = self.strings
        lut = self._renumber(
            [
                (ops.name, o_pos, 0), (ops.dims, o_pos, 1), (ops.types, o_pos, 2), (ops.stack, o_pos, 3),
                (ops.concrete, o_pos, 4),
                (runtime.name, r_pos, 0), (gpu.name, g_pos, 0), (gpu.collective, g_pos, 1),
                (pyfn.name, p_pos, 0), (cpr_ids, cpr_pos, 0),
            ],
            len(strings),
        )  # fmt: skip
        cpr = self.cpr
        if lut is not None:
            for tbl, cols in ((ops, ("name", "dims", "types", "stack", "concrete")), (runtime, ("name",)), (gpu, ("name", "collective")), (pyfn, ("name",))):
                for c in cols:
                    setattr(tbl, c, lut[getattr(tbl, c)])
            new = [""] * len(strings)
            for old, s in enumerate(strings):
                new[lut[old]] = s
            strings = new
            cpr = [(int(lut[c[0]]), c[1], c[2]) for c in cpr]
        threads = self.threads
        tlut = self._renumber(
            [(ops.thread, o_pos, 0), (runtime.thread, r_pos, 0), (pyfn.thread, p_pos, 0), (memory.thread, m_pos, 0)],
            len(threads),
        )
        if tlut is not None:
            for ttbl in (ops, runtime, pyfn, memory):
                ttbl.thread = tlut[ttbl.thread]
            newt: list[tuple[str, str]] = [("", "")] * len(threads)
            for old, t in enumerate(threads):
                newt[tlut[old]] = t
            threads = newt
        trace = Trace(
            path=path,
            format="kineto",
            strings=strings,
            threads=threads,
            ops=ops,
            runtime=runtime,
            gpu=gpu,
            pyfn=pyfn,
            memory=memory,
        )
        return finish_trace(path, trace, doc, self.profiler_span, cpr, counter_data, had_events=bool(self.n_events))


def _validate_times(trace: Trace) -> None:
    for label, tbl in (("cpu op", trace.ops), ("runtime", trace.runtime), ("GPU", trace.gpu), ("python", trace.pyfn)):
        if len(tbl) == 0:
            continue
        ts, dur = tbl.ts, tbl.dur
        if np.isnan(ts).any():
            i = int(np.flatnonzero(np.isnan(ts))[0])
            raise InputError(trace.path, f"{label} event '{trace.s(int(tbl.name[i]))}' has no 'ts'")
        bad_dur = np.isnan(dur)
        if bad_dur.any():
            i = int(np.flatnonzero(bad_dur)[0])
            raise InputError(trace.path, f"{label} event '{trace.s(int(tbl.name[i]))}' has no 'dur'")
        neg = dur < 0
        if neg.any():
            i = int(np.flatnonzero(neg)[0])
            raise InputError(
                trace.path,
                f"{int(neg.sum())} {label} event(s) with negative duration "
                f"(first: '{trace.s(int(tbl.name[i]))}' dur={dur[i]:g} us)",
            )
        huge = dur > MAX_DUR_US
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            raise InputError(
                trace.path,
                f"{int(huge.sum())} {label} event(s) with absurd duration over 7 days "
                f"(first: '{trace.s(int(tbl.name[i]))}' dur={dur[i]:g} us)",
            )
        if not np.isfinite(ts).all():
            raise InputError(trace.path, f"{label} event with non-finite timestamp")


def _drop_untimed(trace: Trace) -> None:
    """Drop runtime calls and GPU activities with ts = 0 and dur = 0 from a trace whose other events
    carry real timestamps. Kineto writes such records when it could not time an activity (seen
    on an H100 when CUPTI metrics were asked for: the warm-up step's kernels, fixtures/gpu/
    cupti_metrics); kept, they would stretch the trace span from 0 to the epoch time and make
    every whole-trace ratio read as idle."""
    for label, tbl in (("runtime call", trace.runtime), ("GPU activity", trace.gpu)):
        if len(tbl) == 0:
            continue
        untimed = (tbl.ts == 0) & (tbl.dur == 0)
        n = int(np.count_nonzero(untimed))
        if n == 0 or n == len(tbl):
            continue
        keep = ~untimed
        for f in dataclasses.fields(tbl):
            setattr(tbl, f.name, getattr(tbl, f.name)[keep])
        trace.warnings.append(f"{n} {label}(s) without timestamps (ts = 0, dur = 0) ignored")


def _apply_metadata(trace: Trace, doc: TraceFile) -> None:
    props = doc.deviceProperties if doc.deviceProperties is not None else doc.computeProperties
    notes: list[str] = []
    trace.devices = parse_devices(props, notes)
    info = doc.distributedInfo
    if isinstance(info, dict):
        # torch.distributed ranks and world sizes are C ints; one beyond (or negative) is
        # unknown, as when the trace has no distributedInfo (the file name may still say the rank).
        rank = info.get("rank")
        trace.rank = meta_int(rank, 0, INT32_MAX)
        if trace.rank is None and rank.__class__ is int:
            notes.append("distributedInfo: out-of-range rank ignored")
        ws = info.get("world_size")
        trace.world_size = meta_int(ws, 1, INT32_MAX)
        if trace.world_size is None and ws.__class__ is int:
            notes.append("distributedInfo: out-of-range world_size ignored")
    for key in (
        "schemaVersion",
        "displayTimeUnit",
        "traceName",
        "cuda_runtime_version",
        "cuda_driver_version",
        "hip_runtime_version",
        "cupti_version",
    ):
        v = getattr(doc, key)
        if v.__class__ is int and meta_int(v, -INT64_MAX - 1, INT64_MAX) is None:
            notes.append(f"out-of-range {key} ignored")  # the reports write ints as int64
        elif isinstance(v, (str, int, float)):
            trace.meta[key] = v
    trace.warnings.extend(notes)


def _range_time(path: str, x: Any) -> float:
    """A range's time; a missing one, or one that is no number (a damaged trace), is 0; a number
    out of range is bad input, as for any other event's time."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return 0.0
    t = finite_time(x)
    if t is None:
        raise InputError(path, "cuda_profiler_range event with a non-finite or absurd time (beyond 2^64 us)")
    return t


def _counter_ranges(path: str, cpr: list[tuple[int, Any, Any]], data: bytes | None) -> list[CounterRange]:
    """CUPTI profiler-mode ranges carry arbitrary counter names as args: a second, generic decode.

    Only counter-mode traces (small by nature: CUPTI serializes kernels) pay for it.
    """
    counters: list[dict[str, float]] = []
    if data is not None:
        import orjson

        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:  # what the first decode skipped unread (a key not UTF-8)
            raise InputError(path, f"invalid JSON: {exc}") from None
        evs = raw["traceEvents"] if isinstance(raw, dict) else raw
        for ev in evs:
            if isinstance(ev, dict) and ev.get("cat") == "cuda_profiler_range" and ev.get("ph") == "X":
                args = ev.get("args") or {}
                counters.append({k: float(v) for k, v in args.items() if isinstance(v, (int, float))})
    out = []
    for i, (name, ts, dur) in enumerate(cpr):
        c = counters[i] if i < len(counters) else {}
        out.append(CounterRange(name=name, ts=_range_time(path, ts), dur=_range_time(path, dur), counters=c))
    return out


def build_trace(path: str, events: list[Event], doc: TraceFile | None, data: bytes | None = None) -> Trace:
    """Columns from decoded events (the fast builder). `data` is only used for the rare CUPTI counter mode."""
    builder = ColumnBuilder(path)
    builder.add(events)
    return builder.finish(doc, (lambda: data) if data is not None else None)


_WORK_BUF: Any = None  # the parent's mapped file, inherited by the forked workers
# Slices per worker: equal slices handed out in turn, so the workers finish close together.
RANGES_PER_WORKER = 6
# A streamed .gz: smaller slices, so that its ring (a few slices per worker) stays small.
STREAM_RANGES_PER_WORKER = 12
# Files above this go through the slicer even when one slice would hold them: small slices
# decode and build faster (their objects stay in the CPU cache; see chunked.SUB_BYTES).
SLICED_MIN_BYTES = 1 << 20


def _read_workers(n_slices: int, want: int = 0) -> int:
    """Processes for `n_slices` slices: `want` (ReadOptions.workers; 0: all cores), unless
    PERFLINT_READ_WORKERS says otherwise."""
    import multiprocessing

    raw = os.environ.get("PERFLINT_READ_WORKERS")
    want = int(raw) if raw and raw.isdigit() else want
    if want <= 0:
        want = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if multiprocessing.parent_process() is not None or "fork" not in multiprocessing.get_all_start_methods():
        return 1  # already a worker (--jobs over many files, dask): no nested pools
    return max(1, min(want, n_slices))


def _in_worker() -> bool:
    import multiprocessing

    return multiprocessing.parent_process() is not None


def _slice_worker(args: tuple[str, int, int]) -> Any:
    path, lo, hi = args
    gc.disable()
    builder = ColumnBuilder(path)
    try:
        if not decode_range(_WORK_BUF, lo, hi, builder.add):
            return None
    except InputError as exc:  # PerflintError does not pickle: send its parts
        return ("error", exc.source, exc.problem)
    return builder.export()


class _ParallelRead:
    """A parallel read under way: slices decoded and turned into columns in forked workers,
    merged in file order by `finish`.

    For a plain buffer every slice is submitted by `_start_parallel`, so the workers decode while
    the caller does other work (loading the rules) before it calls `finish`. A GzipStream is
    decompressed as its slices are handed out, into a ring that holds a few slices per worker (a
    slice is merged before its bytes are reused); `begin` has a thread do that while the caller
    loads its rules (the decompressor releases the GIL), else `finish` does it."""

    def __init__(
        self, path: str, data: Any, n: int, start: int, cuts: Any, pool: Any, progress: Callable[[int, int], None] | None = None
    ) -> None:
        self.path, self.data, self.n, self.start, self.cuts, self.pool = path, data, n, start, cuts, pool
        self.progress = progress
        self.stream = data if isinstance(data, GzipStream) else None
        self.builder = ColumnBuilder(path)
        self.pending: list[tuple[int, int, Any]] = []
        self.next_pos = start + 1  # where the slice being cut (or the last one) begins
        self.work_buf = _WORK_BUF  # restored when the read ends (a read may run inside another's window)
        self.thread: threading.Thread | None = None
        self.outcome: tuple[Trace | None, BaseException | None] = (None, None)  # the thread's
        self.stop = False  # set by `cancel`: the thread hands out no more slices
        self.gc_was_enabled = False

    def begin(self) -> None:
        """A stream's read carried on by a thread from now on. Its first slice is submitted here:
        the workers are forked by the caller's thread, never while another thread may hold an
        import lock."""
        stream = self.stream
        assert stream is not None
        self.gc_was_enabled = gc.isenabled()
        gc.disable()  # for the whole read: `_read` enables it again
        stream.floor, stream.make_room = self.next_pos, self._make_room
        first = next(self.cuts, None)
        if first is not None:
            self.submit(*first)
        self.thread = threading.Thread(target=self._background, name="perflint-gunzip", daemon=True)
        self.thread.start()

    def _background(self) -> None:
        try:
            self.outcome = (_finished(self), None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread by `finish`
            self.outcome = (None, exc)

    def cancel(self) -> None:
        if self.thread is not None:
            self.stop = True
            self.thread.join()
        self.close()

    def submit(self, lo: int, hi: int) -> None:
        global _WORK_BUF
        _WORK_BUF = self.data  # the workers are forked at the first submit and see it
        self.pending.append((lo, hi, self.pool.submit(_slice_worker, (self.path, lo, hi))))
        self.next_pos = after(self.data, hi)

    def _merge_first(self) -> None:
        """Merge the oldest slice (waiting for it); Fallback if its cut was false."""
        lo, hi, fut = self.pending.pop(0)
        st = fut.result()
        if st is None:
            raise Fallback
        if isinstance(st, tuple):
            raise InputError(st[1], st[2])
        self.builder.merge(st)
        del st
        if self.stream is not None:
            self.stream.floor = self.pending[0][0] if self.pending else self.next_pos
        if self.progress is not None:
            self.progress(hi, self.n)

    def _make_room(self, floor: int) -> bool:
        """The ring needs the bytes below `floor`: merge the slices that live there."""
        stream = self.stream
        try:
            while stream is not None and stream.floor < floor and self.pending:
                self._merge_first()
        except Fallback:
            return False
        return stream is not None and stream.floor >= floor

    def finish(self) -> Trace | None:
        """The trace; None when the slicing failed (the caller reads the file another way)."""
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            trace, exc = self.outcome
            if exc is not None:
                raise exc
            return trace
        stream, data = self.stream, self.data
        if stream is not None and thread is None:
            stream.floor, stream.make_room = self.next_pos, self._make_room
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            try:
                for lo, hi in self.cuts:
                    if self.stop:
                        raise Fallback
                    self.submit(lo, hi)
                    while self.pending and self.pending[0][2].done():
                        self._merge_first()
                if stream is not None and not stream.finish():
                    raise Fallback
                # Meanwhile, here: the last slice and the metadata around the array.
                last = last_slice(data, self.start, self.next_pos, self.n)
                if last is None:
                    raise Fallback
                while self.pending:
                    self._merge_first()
            except (Fallback, Unavailable):
                return None
            finally:
                self.close()
            events, doc = last
            self.builder.add(events)
            del events
            if stream is not None:
                return self.builder.finish(doc, lambda: read_bytes(self.path))  # the ring holds only the end
            return self.builder.finish(doc, lambda: bytes(data))
        finally:
            if was_enabled:
                gc.enable()

    def close(self) -> None:
        """Stop the workers (slices not started are dropped; running ones end with the pool)."""
        global _WORK_BUF
        for _, _, f in self.pending:
            f.cancel()
        self.pending = []
        self.pool.shutdown(wait=True)
        _WORK_BUF = self.work_buf
        if self.stream is not None:
            self.stream.make_room = None


def _start_parallel(
    path: str, data: Any, size: int, workers: int = 0, progress: Callable[[int, int], None] | None = None
) -> _ParallelRead | None:
    """A parallel read of `data` (see _ParallelRead), its slices already submitted when `data`
    is a plain buffer; None when it cannot be done (then the sequential slicer runs)."""
    stream = data if isinstance(data, GzipStream) else None
    n = stream.size if stream is not None else len(data)
    workers = workers or _read_workers(max(1, n // size))
    if workers < 2 and (stream is None or _in_worker()):
        return None  # one worker: for a plain file the in-process slicer does the same
    parts = (RANGES_PER_WORKER if stream is None else STREAM_RANGES_PER_WORKER) * workers
    if stream is not None and not stream.use_ring((2 * workers + 2) * min(size, n // parts + 1)):
        return None
    planned = plan_iter(data, size, parts, n, stream.fill if stream is not None else None)
    if planned is None:
        return None
    start, cuts = planned
    ranges: list[tuple[int, int]] = []
    if stream is None:  # a plain buffer: all cuts first (fewer than two: the slicer does better)
        try:
            ranges = list(cuts)
        except Fallback:
            return None
        if len(ranges) < 2:
            return None
        cuts = iter(())
    from perflint.readers.kineto.procs import slice_pool

    try:
        pool = slice_pool(workers)
        job = _ParallelRead(path, data, n, start, cuts, pool, progress)
        try:
            for lo, hi in ranges:
                job.submit(lo, hi)
        except BaseException:
            job.close()
            raise
    except (OSError, RuntimeError, AssertionError):  # no processes here (sandbox, daemonic parent)
        return None
    return job


def _read_parallel(
    path: str, data: Any, size: int, workers: int = 0, progress: Callable[[int, int], None] | None = None
) -> Trace | None:
    """Slices decoded and turned into columns in forked workers, merged in file order here.
    None when it cannot be done (then the sequential slicer runs)."""
    job = _start_parallel(path, data, size, workers, progress)
    return None if job is None else _finished(job)


def _finished(job: _ParallelRead) -> Trace | None:
    try:
        return job.finish()
    except (OSError, RuntimeError, AssertionError):  # a worker died (BrokenProcessPool is a RuntimeError)
        return None


def _read_whole(path: str, data: bytes) -> Trace:
    """The whole document in one decode: strictly typed when the strict schema takes it."""
    try:
        doc: Any = STRICT_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        events, doc = decode(path, data)  # the lenient decode words any error
        return build_trace(path, events, doc, data)
    if isinstance(doc, list):
        events, doc = doc, None
    else:
        events = doc.traceEvents
        doc.traceEvents = []
    builder = ColumnBuilder(path)
    builder.add(StrictSlice(events, lambda: decode(path, data)[0]))
    del events
    return builder.finish(doc, lambda: data)


def _reference() -> bool:
    return os.environ.get("PERFLINT_READER") == "reference"


def read_kineto(path: str, data: Any = None, options: ReadOptions | None = None) -> Trace:
    """`data`: the file's bytes, an mmap of a big plain file or a GzipStream of a big .gz (see
    `source.open_source`).

    Big files are decoded in forked workers, files above SLICED_MIN_BYTES slice by slice
    (readers/chunked.py), the rest in one go; PERFLINT_READER=reference selects the whole-file
    decode and the event-by-event reference builder.
    """
    return start_kineto(path, data, options).result()  # type: ignore[no-any-return]


def start_kineto(path: str, data: Any = None, options: ReadOptions | None = None) -> PendingRead:
    """`read_kineto` begun: a big plain file's slices go to the worker processes now, so that the
    caller can do other work (import and load the rules) while they decode. `.result()` ends the
    read and raises its errors; `.cancel()` abandons it."""
    opts = options or ReadOptions()
    if data is None:
        data = open_source(path)
    stream = data if isinstance(data, GzipStream) else None
    size = chunk_bytes()
    n = stream.size if stream is not None else len(data)
    workers = _read_workers(max(1, n // size), opts.workers)
    plan = budget.plan(n, workers, size, gz=stream is not None, memory_budget=opts.memory_budget)
    size = plan.slice_bytes
    job = None
    # Tiny forced slices (a small budget) read sequentially.
    if stream is None and not _reference() and n > 2 * size and size >= 1 << 20 and plan.workers > 1:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            job = _start_parallel(path, data, size, plan.workers, opts.progress)
        finally:
            if was_enabled:
                gc.enable()
    elif stream is not None and not _reference():
        job = _begin_stream(path, stream, size, plan.workers, opts.progress)
    return PendingRead(lambda: _read(path, data, plan, job, opts.progress), job.cancel if job is not None else None)


def _begin_stream(
    path: str, stream: GzipStream, size: int, workers: int, progress: Callable[[int, int], None] | None = None
) -> _ParallelRead | None:
    """A big .gz: its decompression and the decoding of its slices under way in the background
    (see _ParallelRead.begin); None: `_read` reads it in the caller's time."""
    was_enabled = gc.isenabled()
    job = None
    try:
        job = _start_parallel(path, stream, size, workers, progress)
        if job is not None:
            job.begin()
    except (Fallback, Unavailable, OSError, RuntimeError, AssertionError):
        if job is not None:
            job.cancel()
        if was_enabled:
            gc.enable()
        return None
    return job


def _read(
    path: str, data: Any, plan: budget.Plan, job: _ParallelRead | None, progress: Callable[[int, int], None] | None = None
) -> Trace:
    stream = data if isinstance(data, GzipStream) else None
    size = plan.slice_bytes
    # The cyclic GC would rescan millions of freshly allocated objects.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        trace = None
        if stream is not None:  # a big .gz: slices decoded while the rest is decompressed
            if job is not None:
                was_enabled = was_enabled or job.gc_was_enabled  # `begin` turned it off
                trace = _finished(job)
            elif not _reference():
                trace = _read_parallel(path, stream, size, plan.workers, progress)
            if trace is not None:
                return _noted(trace, plan.note)
            data = stream.complete()
            job = None
        if _reference():
            whole = data if isinstance(data, bytes) else bytes(data)
            events, doc = decode(path, whole)
            return build_trace_reference(path, events, doc, whole if b"cuda_profiler_range" in whole else None)
        if job is not None:
            trace = _finished(job)
        elif stream is not None and len(data) > 2 * size and size >= 1 << 20 and plan.workers > 1:
            trace = _read_parallel(path, data, size, plan.workers, progress)  # the .gz, now whole in memory
        if trace is None and len(data) > min(size, SLICED_MIN_BYTES):
            builder = ColumnBuilder(path)
            ok, doc = read_sliced(data, builder.add, size, progress)
            if ok:
                trace = builder.finish(doc, lambda: bytes(data))
            del builder
        if trace is None:
            whole = data if isinstance(data, bytes) else bytes(data)
            trace = _read_whole(path, whole)
    finally:
        if was_enabled:
            gc.enable()
        if stream is not None:
            stream.close()
    return _noted(trace, plan.note)


def _noted(trace: Trace, note: str | None) -> Trace:
    if note:
        trace.warnings.append(note)
    return trace
