"""The analysed steps' graph, replayed with the measured durations.

The steps are replayed as one run: a thread's work in one step follows its work in the step
before, so a wait at the end of a step that holds back the next step's CPU work is part of the
replay. A trace with many steps has a contiguous run of at most MAX_STEPS of them replayed (the
middle ones), and what a fix saves there is taken as what it saves per step in all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from perflint.kernelnames.parse import short_name
from perflint.metrics.steps import launch_ts
from perflint.model import GPU_SYNC, NONE, Trace
from perflint.stepmodel.build import build_block
from perflint.stepmodel.graph import E_LAUNCH, GPU, StepGraph, StepSpec, TraceFacts, trace_facts
from perflint.stepmodel.replay import Replayed, longest_path
from perflint.stepmodel.window import Window, step_at
from perflint.units import fmt_duration

MAX_STEPS = 32  # steps replayed in one run (a contiguous block in the middle of the analysed ones)
ANCHORED_MAX = 0.5  # a step whose GPU work mostly has no launch call is not a replay of the step
# Calls and GPU activities replayed at once: the graph takes about 300 bytes per event while it is
# built, so this bounds the replay near 0.6 GB. A run of steps over it replays fewer steps.
MAX_EVENTS = 2_000_000


@dataclass(frozen=True)
class BlockReplay:
    """The replayed run of steps: `first` is the index of its first step among the analysed ones."""

    graph: StepGraph
    replayed: Replayed
    first: int

    @cached_property
    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """Each replayed step's (start, end)."""
        return self.graph.replayed_windows(self.replayed.start)

    def replayed_us(self, i: int) -> float:
        """Replayed length of the block's i-th step."""
        lo, hi = self.windows
        return float(hi[i] - lo[i])

    def measured_us(self, i: int) -> float:
        return float(self.graph.step_hi[i] - self.graph.step_lo[i])

    def error_pct(self, i: int) -> float:
        m = self.measured_us(i)
        return 100.0 * abs(self.replayed_us(i) - m) / m if m > 0 else 0.0

    @property
    def steps(self) -> int:
        return len(self.graph.step_end)

    @cached_property
    def anchored(self) -> np.ndarray:
        """Per step: the share of its GPU activities without a launch call (they keep their
        measured start)."""
        g = self.graph
        gpu = np.flatnonzero(g.kind == GPU)
        out = np.zeros(self.steps)
        if not len(gpu):
            return out
        dst = np.repeat(np.arange(len(g.dur)), np.diff(g.indptr))
        launched = np.isin(gpu, dst[g.etype == E_LAUNCH])
        # A GPU node's step: the END node it reaches first is not known here; its start decides.
        step = np.searchsorted(g.step_hi, g.m_start[gpu], side="left").clip(0, self.steps - 1)
        for i in range(self.steps):
            mine = step == i
            if mine.any():
                out[i] = 1.0 - float(launched[mine].mean())
        return out


def block_of(w: Window, events: np.ndarray | None = None) -> range:
    """The analysed steps replayed: all of them, or MAX_STEPS in the middle, and fewer (down to
    the middle one) while their events (`events`: calls and GPU activities per step) exceed
    MAX_EVENTS."""
    n = len(w.steps)
    k = min(n, MAX_STEPS)
    while True:
        first = (n - k) // 2
        if events is None or k == 1 or int(events[first : first + k].sum()) <= MAX_EVENTS:
            return range(first, first + k)
        k = max(1, k // 2)


def too_big(t: Trace, w: Window, events: np.ndarray | None = None) -> str | None:
    """Why the analysed steps cannot be replayed for their size (one step over MAX_EVENTS events),
    None where they can; `events`: `step_events(t, w)` where already counted."""
    ev = step_events(t, w) if events is None else events
    if not len(ev):
        return None
    r = block_of(w, ev)
    got = int(ev[r.start : r.stop].sum())
    if got <= MAX_EVENTS:
        return None
    what = "the trace has no step markers and its window" if not w.has_steps else "one step"
    return (
        f"no replay: {what} holds {got:,} calls and GPU activities, more than the {MAX_EVENTS:,} the replay takes at "
        "once; step markers (ProfilerStep#N annotations or NVTX ranges) cut it into steps the model replays"
    )


def step_events(t: Trace, w: Window) -> np.ndarray:
    """Calls and GPU activities per analysed step, by the step their launch (or start) falls in
    (counted without the graphs' per-event facts: a window too big to replay never builds them)."""
    if not w.steps:
        return np.zeros(0, dtype=np.int64)
    work = t.gpu.kind != GPU_SYNC
    if not w.has_steps:
        return np.asarray([len(t.runtime) + int(work.sum())], dtype=np.int64)
    n = len(w.steps)
    cs = step_at(t, w, t.runtime.ts)
    gs = step_at(t, w, launch_ts(t)[work])
    return np.bincount(cs[cs >= 0], minlength=n)[:n] + np.bincount(gs[gs >= 0], minlength=n)[:n]


def block_graph(t: Trace, w: Window) -> tuple[StepGraph, int] | None:
    """The graph of the replayed run of steps and the index of its first step; None without steps
    or where one step is more than the replay takes at once (`too_big` says so)."""
    if not w.steps:
        return None
    events = step_events(t, w)
    if too_big(t, w, events) is not None:
        return None
    tf: TraceFacts = trace_facts(t)
    rows = block_of(w, events)
    call_step = step_at(t, w, t.runtime.ts)
    gpu_step = np.full(len(t.gpu), -1, dtype=np.int32)
    gpu_step[tf.work] = step_at(t, w, tf.lts[tf.work])
    specs = []
    for i in rows:
        s = w.steps[i]
        # The marker's end is cut where the window was cut (a marker can outlast the recorded events).
        marker = (int(tf.canon[s.thread]), s.cpu_ts, min(s.cpu_ts + s.cpu_dur, s.hi)) if w.has_steps and s.thread != NONE else None
        specs.append(StepSpec(s.lo, s.hi, np.flatnonzero(call_step == i), np.flatnonzero(gpu_step == i), marker))
    return build_block(t, tf, specs), rows.start


def replay_graph(g: StepGraph, dur: np.ndarray | None = None) -> Replayed:
    return longest_path(g.indptr, g.pred, g.delay, g.from_start, g.release, g.dur if dur is None else dur)


def anchored_note(t: Trace, share: float) -> str:
    return f"{100 * share:.0f}% of the step's GPU work has no launch call in the trace ({t.format}): it keeps its measured start"


def why_off(t: Trace, r: BlockReplay, i: int) -> str:
    """The replay's largest departure from the measured step i, in words: which edge is missing."""
    g, rp = r.graph, r.replayed
    late = g.m_start - rp.start  # > 0: the activity started later than the recorded edges allow
    lo, hi = g.step_lo[i], g.step_hi[i]
    gpu = np.flatnonzero((g.kind == GPU) & (g.m_start >= lo) & (g.m_start < hi))
    if r.replayed_us(i) < r.measured_us(i) and len(gpu):
        v = int(gpu[np.argmax(late[gpu])])
        name = t.s(int(t.gpu.name[int(g.ref[v])]))
        return (
            f"GPU work started up to {fmt_duration(float(late[v]))} later than its launch, its stream and the recorded "
            f"cross-stream waits allow ({short_name(name)} on stream {int(t.gpu.stream[int(g.ref[v])])}): it waited for work "
            f"or events the trace does not record"
        )
    inside = np.flatnonzero((g.m_start >= lo) & (g.m_start < hi))
    v = int(inside[np.argmin(late[inside])]) if len(inside) else int(np.argmin(late))
    k, ref = int(g.kind[v]), int(g.ref[v])
    what = t.s(int(t.gpu.name[ref])) if k == GPU else t.s(int(t.runtime.name[ref])) if k in (0, 1) else "the step's end"
    return f"the replay holds {short_name(what)} back {fmt_duration(float(-late[v]))} longer than the trace shows: a recorded wait did not hold it that long"
