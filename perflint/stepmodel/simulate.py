"""Each analysed step's graph, replayed with the measured durations."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from perflint.metrics.kernel_names import short_name
from perflint.model import NONE, Trace
from perflint.stepmodel.graph import E_LAUNCH, GPU, StepGraph, TraceFacts, build_step, trace_facts
from perflint.stepmodel.replay import Replayed, longest_path
from perflint.stepmodel.window import Window, step_at
from perflint.units import fmt_duration


@dataclass(frozen=True)
class StepReplay:
    graph: StepGraph
    replayed: Replayed

    @property
    def replayed_us(self) -> float:
        return float(self.replayed.start[self.graph.end]) - self.graph.lo

    @property
    def anchored(self) -> float:
        """Share of the step's GPU activities without a launch call (kept at their measured start)."""
        g = self.graph
        gpu = np.flatnonzero(g.kind == GPU)
        if not len(gpu):
            return 0.0
        dst = np.repeat(np.arange(len(g.dur)), np.diff(g.indptr))
        launched = np.isin(gpu, dst[g.etype == E_LAUNCH])
        return float(1.0 - launched.mean())

    @property
    def error_pct(self) -> float:
        m = self.graph.measured_us
        return 100.0 * abs(self.replayed_us - m) / m if m > 0 else 0.0


def step_graphs(t: Trace, w: Window) -> Iterator[StepGraph]:
    tf: TraceFacts = trace_facts(t)
    call_step = step_at(t, w, t.runtime.ts)
    gpu_step = np.full(len(t.gpu), -1, dtype=np.int32)
    gpu_step[tf.work] = step_at(t, w, tf.lts[tf.work])
    for i, s in enumerate(w.steps):
        calls = np.flatnonzero(call_step == i)
        gpu = np.flatnonzero(gpu_step == i)
        # The marker's end, cut where the window was cut (a marker can outlast the recorded events).
        marker = (s.thread, min(s.cpu_ts + s.cpu_dur, s.hi)) if w.has_steps else None
        yield build_step(t, tf, calls, gpu, s.lo, s.hi, marker)


def replay(g: StepGraph, dur: np.ndarray | None = None) -> Replayed:
    return longest_path(g.indptr, g.pred, g.delay, g.from_start, g.release, g.dur if dur is None else dur)


ANCHORED_MAX = 0.5  # a step whose GPU work mostly has no launch call is not a replay of the step


def anchored_note(t: Trace, r: StepReplay) -> str:
    return (
        f"{100 * r.anchored:.0f}% of the step's GPU work has no launch call in the trace ({t.format}): "
        "it keeps its measured start"
    )


def why_off(t: Trace, r: StepReplay) -> str:
    """The replay's largest departure from the measured step, in words: which edge is missing."""
    g, rp = r.graph, r.replayed
    late = g.m_start - rp.start  # > 0: the activity started later than the recorded edges allow
    gpu = np.flatnonzero(g.kind == GPU)
    if r.replayed_us < g.measured_us and len(gpu):
        v = int(gpu[np.argmax(late[gpu])])
        name = t.s(int(t.gpu.name[int(g.ref[v])]))
        return (
            f"GPU work started up to {fmt_duration(float(late[v]))} later than its launch, its stream and the recorded "
            f"cross-stream waits allow ({short_name(name)} on stream {int(t.gpu.stream[int(g.ref[v])])}): it waited for work "
            f"or events the trace does not record"
        )
    v = int(np.argmin(late))
    k, ref = int(g.kind[v]), int(g.ref[v])
    what = t.s(int(t.gpu.name[ref])) if k == GPU else t.s(int(t.runtime.name[ref])) if ref != NONE else "the step's end"
    return f"the replay holds {short_name(what)} back {fmt_duration(float(-late[v]))} longer than the trace shows: a recorded wait did not hold it that long"
