"""Cross-stream waits on the `trace` row: how long streams' ready work was held by events on
other streams (cudaStreamWaitEvent / hipStreamWaitEvent, as Kineto's cuda_sync "Stream Wait
Event" records show them), in the analysis steps.

For each wait on stream S for the event recorded (by the call with the recorded correlation id)
on stream R: the event completes when the work R was given before the record call ends; S's
next work was ready at the later of its launch call's return and S's previous work's end; the
wait held it for the part of [ready, its start] before the event completed. Waiting where the
work was not ready yet costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Fields, Row, enricher, typed
from perflint.facts._common import in_steps
from perflint.kernelnames.parse import short_name
from perflint.model import GPU_SYNC, NONE, Trace

FIELDS: Fields = {
    "xstream_waits": typed("cross-stream waits in the analysis steps that held a stream's ready work", "integer"),
    "xstream_wait_us": "time those waits held ready work, per analysis step (µs; the whole trace without steps)",
    "xstream_wait_pct": "xstream_wait_us / the median step (the trace's span without steps), %",
    "xstream_waited_for": typed("what the longest hold waited for: '<kernel> on stream R' (null without holds)", "text"),
}


@dataclass
class _Stream:
    rows: np.ndarray  # GPU work rows of the stream, by start
    start: np.ndarray
    end: np.ndarray
    launched: np.ndarray  # each row's launch call start (nan when unlinked)
    ready: np.ndarray  # each row's launch call end (nan when unlinked)


def _streams(t: Trace) -> dict[int, _Stream]:
    g, rt = t.gpu, t.runtime
    work = g.kind != GPU_SYNC
    out: dict[int, _Stream] = {}
    for s in np.unique(g.stream[work]).tolist():
        rows = np.flatnonzero(work & (g.stream == s))
        rows = rows[np.argsort(g.ts[rows], kind="stable")]
        la = g.launch[rows]
        linked = la != NONE
        launched = np.full(len(rows), np.nan)
        ready = np.full(len(rows), np.nan)
        launched[linked] = rt.ts[la[linked]]
        ready[linked] = rt.ts[la[linked]] + rt.dur[la[linked]]
        out[int(s)] = _Stream(rows, g.ts[rows], g.ts[rows] + g.dur[rows], launched, ready)
    return out


def cross_stream_numbers(ctx: Context) -> Row:
    t = ctx.trace
    g, rt = t.gpu, t.runtime
    empty: Row = dict.fromkeys(FIELDS)
    waits = np.flatnonzero((g.kind == GPU_SYNC) & (g.wait_stream >= 0) & (g.wait_corr >= 0)) if len(g) else np.zeros(0, dtype=np.int64)
    if not len(waits) or not len(rt):
        return empty
    order = np.argsort(rt.correlation, kind="stable")
    corr = rt.correlation[order]
    streams = _streams(t)
    held_total, held_n, longest, what = 0.0, 0, 0.0, None
    for w in waits.tolist():
        s, r = streams.get(int(g.stream[w])), streams.get(int(g.wait_stream[w]))
        if s is None or r is None or s is r:
            continue
        k = int(np.searchsorted(corr, g.wait_corr[w]))
        if k >= len(corr) or corr[k] != g.wait_corr[w]:
            continue
        record_ts = float(rt.ts[order[k]])
        # The event completes with the last work R was given before the record call.
        given = np.flatnonzero(r.launched < record_ts)
        if not len(given):
            continue
        last = int(given[np.argmax(r.end[given])])
        done = float(r.end[last])
        # S's next work after the wait, and when it was ready to run.
        i = int(np.searchsorted(s.start, g.ts[w], side="left"))
        if i >= len(s.rows) or not np.isfinite(s.ready[i]):
            continue
        if not in_steps(ctx, np.asarray([s.launched[i]]))[0]:
            continue
        ready = max(float(s.ready[i]), float(s.end[i - 1]) if i > 0 else -np.inf, float(g.ts[w]))
        held = min(float(s.start[i]), done) - ready
        if held <= 0:
            continue
        held_total += held
        held_n += 1
        if held > longest:
            longest, what = held, f"{short_name(t.s(int(g.name[r.rows[last]])))} on stream {int(g.wait_stream[w])}"
    if not held_n:
        return {**empty, "xstream_waits": 0, "xstream_wait_us": 0.0, "xstream_wait_pct": 0.0}
    steps = ctx.steps
    per = held_total / len(steps) if steps else held_total
    base = float(np.median([s.dur for s in steps])) if steps else float(g.ts.max() + 0.0 - g.ts.min()) if len(g) else 0.0
    return {
        "xstream_waits": held_n,
        "xstream_wait_us": per,
        "xstream_wait_pct": 100.0 * per / base if base > 0 else None,
        "xstream_waited_for": what,
    }


@enricher("trace", fields=FIELDS)
def _enrich(ctx: Context, row: Row) -> Row:
    return cross_stream_numbers(ctx)
