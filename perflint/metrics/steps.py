"""Steps and the assignment of GPU work to steps (by the time of its CPU launch)."""

from __future__ import annotations

import numpy as np

from perflint.memo import once
from perflint.metrics.intervals import extent
from perflint.model import NONE, Step, Trace


def analysis_steps(trace: Trace, include_edges: bool = False) -> list[Step]:
    """The steps rules and summaries use: warm-up (first) and last step dropped, as HTA does.
    Where the trace's op and kernel events cover only some of its steps (`meta["op_steps"]`: the
    first and last step they cover; MindSpore's step trace outlives its op timeline), those
    steps: a step the timeline missed is not an idle one. Step time and its phases use
    `timed_steps`.

    With two steps or fewer nothing would be left, so all are kept.
    """
    steps = trace.steps
    covered = trace.meta.get("op_steps")
    if covered is not None:
        steps = [s for s in steps if len(covered) == 2 and covered[0] <= s.number <= covered[1]]
    return _without_edges(steps, include_edges)


def timed_steps(trace: Trace, include_edges: bool = False) -> list[Step]:
    """The steps step time and its phases use: every step marker (less the edges), also where
    the op and kernel events cover fewer (`analysis_steps`)."""
    return _without_edges(trace.steps, include_edges)


def _without_edges(steps: list[Step], include_edges: bool) -> list[Step]:
    if include_edges or len(steps) <= 2:
        return list(steps)
    return list(steps[1:-1])


@once
def launch_ts(trace: Trace) -> np.ndarray:
    """CPU time at which each GPU activity was launched (its own start when unlinked)."""
    g = trace.gpu
    out: np.ndarray = g.ts.copy()
    linked = g.launch != NONE
    out[linked] = trace.runtime.ts[g.launch[linked]]
    return out


def step_of(trace: Trace, steps: list[Step], when: np.ndarray) -> np.ndarray:
    """Index into `steps` of the step whose CPU span contains each time, or NONE."""
    out = np.full(len(when), NONE, dtype=np.int32)
    if not steps:
        return out
    starts = np.array([s.ts for s in steps])
    ends = np.array([s.end for s in steps])
    k = np.searchsorted(starts, when, side="right") - 1
    ok = k >= 0
    kk = np.maximum(k, 0)
    ok &= when <= ends[kk]
    out[ok] = k[ok]
    return out


@once
def recorded_span(trace: Trace) -> tuple[float, float] | None:
    """First start and last end of what the trace recorded besides its step markers (ops,
    runtime calls, GPU work, Python functions). A ProfilerStep marker can outlast the recorded events (the profiler
    stopped, or the file was trimmed): time past them is not known to be idle."""
    markers = np.zeros(len(trace.ops), dtype=bool)
    for s in trace.steps:
        markers[s.op] = True
    lo, hi = np.inf, -np.inf
    for ts, dur, keep in (
        (trace.ops.ts, trace.ops.dur, ~markers),
        (trace.runtime.ts, trace.runtime.dur, None),
        (trace.gpu.ts, trace.gpu.dur, None),
        (trace.pyfn.ts, trace.pyfn.dur, None),
    ):
        got = extent(ts, dur, keep, skip_nan=True)
        if got is not None:
            lo, hi = min(lo, got[0]), max(hi, got[1])
    return (lo, hi) if hi >= lo else None


def clipped(trace: Trace, lo: float, hi: float) -> tuple[float, float]:
    """[lo, hi] with its end cut to the last recorded event (unchanged when the trace recorded
    nothing else). The start stays: a step marker's start is itself a recorded time, and a step
    can begin with host work the profiler did not record as events."""
    span = recorded_span(trace)
    if span is None:
        return lo, hi
    return lo, max(lo, min(hi, span[1]))
