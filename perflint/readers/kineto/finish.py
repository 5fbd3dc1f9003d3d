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
from perflint.readers.kineto.ranges import INT32_MAX, MAX_TS_US, check_columns, finite_time, meta_int
from perflint.readers.kineto.recording import RECORDING
from perflint.readers.kineto.schema import TraceFile
from perflint.units import plural

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
    """Events whose times cannot be used (no or a non-finite 'ts', no 'dur', a negative 'dur' or
    one over 7 days, a timestamp beyond 2^64 us) are dropped and counted in one warning: a few
    damaged events cost only themselves. A trace where most events are so is bad input."""
    tables = (("cpu op", trace.ops), ("runtime", trace.runtime), ("GPU", trace.gpu), ("python", trace.pyfn), ("[memory]", trace.memory))
    said: list[str] = []
    dropped = total = 0
    for label, tbl in tables:
        n = len(tbl)
        total += n
        if n == 0:
            continue
        ts = tbl.ts
        dur = getattr(tbl, "dur", None)
        names = getattr(tbl, "name", None) if label != "[memory]" else None
        checks = [(np.isnan(ts), "no 'ts'", "ts"), (~np.isnan(ts) & ~(np.abs(ts) <= MAX_TS_US), "absurd timestamp beyond 2^64 us", "ts")]
        if dur is not None:
            checks += [(np.isnan(dur), "no 'dur'", "dur"), (dur < 0, "negative duration", "dur"), (dur > MAX_DUR_US, "absurd duration over 7 days", "dur")]
        bad = np.zeros(n, dtype=bool)
        for mask, what, key in checks:
            mask &= ~bad  # each event counted once, by its first problem
            if mask.any():
                i = int(np.flatnonzero(mask)[0])
                which = f"'{trace.s(int(names[i]))}' " if names is not None else ""
                value = float(ts[i] if key == "ts" else dur[i])  # type: ignore[index]
                shown = "" if np.isnan(value) else f"{key}={value:g}{' us' if key == 'dur' else ''}"
                said.append(f"{plural(int(mask.sum()), label + ' event')} with {what} (first: {(which + shown).strip()})")
                bad |= mask
        k = int(bad.sum())
        if k:
            dropped += k
            keep = ~bad
            for f in dataclasses.fields(tbl):
                setattr(tbl, f.name, getattr(tbl, f.name)[keep])
    if not dropped:
        return
    if 2 * dropped > total:
        raise InputError(trace.path, f"most events have unusable times: {'; '.join(said)}")
    trace.warnings.append(f"{plural(dropped, 'event')} with unusable times dropped: {'; '.join(said)}")


def _drop_untimed(trace: Trace) -> None:
    """Drop runtime calls and GPU activities with ts = 0 and dur = 0 from a trace whose other events
    carry real timestamps. Kineto writes such records when it could not time an activity (seen
    on an H100 when CUPTI metrics were asked for: the warm-up step's kernels, fixtures/gpu/
    cupti_metrics); kept, they would stretch the trace span from 0 to the epoch time and make
    every whole-trace ratio read as idle."""
    for label, many, tbl in (("runtime call", "runtime calls", trace.runtime), ("GPU activity", "GPU activities", trace.gpu)):
        if len(tbl) == 0:
            continue
        untimed = (tbl.ts == 0) & (tbl.dur == 0)
        n = int(np.count_nonzero(untimed))
        if n == 0 or n == len(tbl):
            continue
        keep = ~untimed
        for f in dataclasses.fields(tbl):
            setattr(tbl, f.name, getattr(tbl, f.name)[keep])
        trace.warnings.append(f"{plural(n, label, many)} without timestamps (ts = 0, dur = 0) ignored")


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
