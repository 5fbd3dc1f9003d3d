"""What every read path does once a trace's tables exist (finish_trace): validate the times, drop
untimed records, range-check the columns, apply the metadata, attach CUPTI counter ranges, find
the rank, and refuse a trace with nothing perflint understands."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from perflint.errors import InputError, NotATrace
from perflint.model import CounterRange, Trace
from perflint.readers.kineto.metadata import apply_metadata
from perflint.readers.kineto.ranges import INT32_MAX, check_columns, check_times, finite_time, meta_int
from perflint.readers.kineto.recording import RECORDING
from perflint.readers.kineto.schema import TraceFile

MAX_DUR_US = 7 * 24 * 3600 * 1e6  # HTA drops events longer than 7 days as corrupt
_RANK_RE = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


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
        apply_metadata(trace, doc)
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



__all__ = ["MAX_DUR_US", "finish_trace"]
