"""Reader for PyTorch profiler / Kineto Chrome-trace JSON (every vintage in the corpus).

One pass over the decoded events into per-class column lists, then numpy arrays.
Category names changed across Kineto versions (DESIGN §3); all spellings map here.
"""

from __future__ import annotations

import gc
import re
from typing import Any

import msgspec
import numpy as np

from perflint.errors import InputError
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
from perflint.readers.kineto_schema import DECODER, Event, TraceFile
from perflint.readers.source import read_bytes

C_OP, C_ANN, C_PYFN, C_RT, C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC, C_CPR = range(1, 10)

_CATS = {
    "cpu_op": C_OP,
    "operator": C_OP,
    "user_annotation": C_ANN,
    "python_function": C_PYFN,
    "cuda_runtime": C_RT,
    "runtime": C_RT,
    "cuda_driver": C_RT,
    "mtia_runtime": C_RT,
    "hip_runtime": C_RT,
    "kernel": C_KERNEL,
    "mtia_ccp_events": C_KERNEL,
    "gpu_memcpy": C_MEMCPY,
    "memcpy": C_MEMCPY,
    "gpu_memset": C_MEMSET,
    "memset": C_MEMSET,
    "cuda_sync": C_SYNC,
    "cuda_profiler_range": C_CPR,
}
CATEGORY_CODES: dict[Any, int] = dict(_CATS)
for _k, _v in _CATS.items():
    CATEGORY_CODES[_k.capitalize()] = _v
    CATEGORY_CODES[_k.upper()] = _v

MAX_DUR_US = 7 * 24 * 3600 * 1e6  # HTA drops events longer than 7 days as corrupt
_STREAM_RE = re.compile(r"(\d+)")
_RANK_RE = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def _int_or(x: Any, default: int = NONE) -> int:
    if x is None or isinstance(x, bool):
        return default
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x == x:
        return int(x)
    if isinstance(x, str):
        m = _STREAM_RE.search(x)
        if m:
            return int(m.group(1))
    return default


def _num_or_nan(x: Any) -> float:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
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


def parse_devices(props: Any) -> dict[int, Device]:
    devices: dict[int, Device] = {}
    if not isinstance(props, list):
        return devices
    for p in props:
        if not isinstance(p, dict):
            continue
        dev_id = _int_or(p.get("id"), 0)
        name = p.get("name") if isinstance(p.get("name"), str) else ""
        major = p.get("computeMajor", p.get("major"))
        minor = p.get("computeMinor", p.get("minor"))
        warp = _int_or(p.get("warpSize"), 32)
        lname = name.lower()
        if warp == 64 or "amd" in lname or "instinct" in lname or "radeon" in lname:
            vendor = "amd"
        elif name or isinstance(major, int):
            vendor = "nvidia"
        else:
            vendor = "unknown"

        def opt(*keys: str) -> int | None:
            for k in keys:
                v = p.get(k)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    return v
            return None

        cc = (major, minor) if isinstance(major, int) and isinstance(minor, int) else None
        devices[dev_id] = Device(
            id=dev_id,
            name=name,
            vendor=vendor,
            sm_count=opt("numSms", "multiProcessorCount"),
            compute_capability=cc,
            max_threads_per_sm=opt("maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor"),
            regs_per_sm=opt("regsPerMultiprocessor"),
            regs_per_block=opt("regsPerBlock"),
            shared_mem_per_sm=opt("sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor"),
            shared_mem_per_block=opt("sharedMemPerBlockOptin", "sharedMemPerBlock"),
            max_blocks_per_sm=opt("maxBlocksPerMultiProcessor", "maxBlocksPerMultiprocessor"),
            warp_size=warp,
            total_memory=opt("totalGlobalMem"),
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


def _arr(path: str, what: str, values: list[Any], dtype: Any) -> np.ndarray:
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-numeric or out-of-range value in {what}") from None


def build_trace(path: str, events: list[Event], doc: TraceFile | None, data: bytes | None = None) -> Trace:
    """Columns from decoded events. `data` is only used for the rare CUPTI counter mode."""
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
                        if isinstance(e.ts, (int, float)) and isinstance(e.dur, (int, float)):
                            profiler_span = (float(e.ts), float(e.ts) + float(e.dur))
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
                else:
                    x = a.ext if a.ext is not None else a.ext_lc
                    o_ext.append(x if type(x) is int else _int_or(x))
                    o_seq.append(_int_or(a.seq))
                    o_fwd.append(_int_or(a.fwd_tid))
                    o_dims.append(intern(bytes(a.dims)) if a.dims else NONE)
                    o_types.append(intern(bytes(a.types)) if a.types else NONE)
                    o_stack.append(intern(a.stack) if isinstance(a.stack, str) and a.stack else NONE)
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
                    g_stream.append(_int_or(e.tid, 0))
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
                    g_stream.append(_int_or(a.stream, _int_or(e.tid, 0)))
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
        stack=_arr(path, "Call stack", o_stack, i32),
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
        grid=_arr(path, "kernel grid", g_grid, i64).reshape(ng, 3),
        block=_arr(path, "kernel block", g_block, i64).reshape(ng, 3),
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
    trace = Trace(
        path=path,
        format="kineto",
        strings=intern.strings,
        threads=threads,
        ops=ops,
        runtime=runtime,
        gpu=gpu,
        pyfn=pyfn,
        memory=memory,
    )
    _validate_times(trace)
    if doc is not None:
        _apply_metadata(trace, doc)
    if profiler_span is not None:
        trace.meta["profiler_range"] = profiler_span
    if cpr:
        trace.counter_ranges = _counter_ranges(path, cpr, data)
    if trace.rank is None:
        m = _RANK_RE.search(path.rsplit("/", 1)[-1])
        if m:
            trace.rank = int(m.group(1))
    n_events = len(ops) + len(runtime) + len(gpu) + len(pyfn) + len(memory) + len(trace.counter_ranges)
    if n_events == 0:
        if not events:
            raise InputError(path, "trace has no events")
        raise InputError(path, "no PyTorch profiler events (cpu_op, kernel, cuda_runtime, ...) in this Chrome trace")
    return trace


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


def _apply_metadata(trace: Trace, doc: TraceFile) -> None:
    props = doc.deviceProperties if doc.deviceProperties is not None else doc.computeProperties
    trace.devices = parse_devices(props)
    info = doc.distributedInfo
    if isinstance(info, dict):
        rank = info.get("rank")
        if isinstance(rank, int) and not isinstance(rank, bool):
            trace.rank = rank
        ws = info.get("world_size")
        if isinstance(ws, int) and not isinstance(ws, bool):
            trace.world_size = ws
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
        if isinstance(v, (str, int, float)):
            trace.meta[key] = v


def _counter_ranges(path: str, cpr: list[tuple[int, Any, Any]], data: bytes | None) -> list[CounterRange]:
    """CUPTI profiler-mode ranges carry arbitrary counter names as args: a second, generic decode.

    Only counter-mode traces (small by nature: CUPTI serializes kernels) pay for it.
    """
    counters: list[dict[str, float]] = []
    if data is not None:
        import orjson

        raw = orjson.loads(data)
        evs = raw["traceEvents"] if isinstance(raw, dict) else raw
        for ev in evs:
            if isinstance(ev, dict) and ev.get("cat") == "cuda_profiler_range" and ev.get("ph") == "X":
                args = ev.get("args") or {}
                counters.append({k: float(v) for k, v in args.items() if isinstance(v, (int, float))})
    out = []
    for i, (name, ts, dur) in enumerate(cpr):
        c = counters[i] if i < len(counters) else {}
        out.append(CounterRange(name=name, ts=float(ts or 0.0), dur=float(dur or 0.0), counters=c))
    return out


def read_kineto(path: str, data: bytes | None = None) -> Trace:
    if data is None:
        data = read_bytes(path)
    # The cyclic GC would rescan millions of freshly allocated event structs (DESIGN §9).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        events, doc = decode(path, data)
        trace = build_trace(path, events, doc, data if b"cuda_profiler_range" in data else None)
        del events, doc
    finally:
        if was_enabled:
            gc.enable()
    return trace
