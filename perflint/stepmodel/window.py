"""The analysis window: the steps a check, a summary and a snapshot analyse, defined once.

A step's window starts at its CPU start, or at the end of the previous step's window when the GPU
was still running that step's work (the CPU ran ahead of a saturated GPU), and ends when the step's
CPU span ends or the last GPU work it launched ends, whichever is later (a step is not done until
its kernels are); its end is cut to the last event the trace recorded (a step marker can outlast
the events). That is the TensorBoard profiler plugin's device-side step time, which keeps time
shares under 100% when the GPU runs far behind the CPU. The first (warm-up) and the last step are
left out, as HTA does, unless the trace has two steps or fewer. Where the op and kernel events
cover fewer steps than the step markers (MindSpore's step trace outlives its op timeline), the
analysed steps are those they cover, and step time is measured over every marker's window.

Steps come from what each format records as its iteration marker: PyTorch's ProfilerStep#N
annotations, NVTX ranges of that name in Nsight Systems and nvprof databases, and MindSpore's step
trace (the readers make each a ProfilerStep#N annotation). Without any, the window is the whole
trace from the first to the last recorded activity (CPU or GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.metrics.intervals import reduce_at
from perflint.metrics.steps import analysis_steps, clipped, launch_ts, recorded_span, step_of, timed_steps
from perflint.model import GPU_SYNC, NONE, Step, Trace
from perflint.units import fmt_duration, plural

_SLICE = 1 << 18

# Where a format's steps come from, in words.
STEP_SOURCES = {
    "kineto": "ProfilerStep#N annotations",
    "nsys": "ProfilerStep#N NVTX ranges",
    "nvprof": "ProfilerStep#N NVTX ranges",
    "mindspore": "the MindSpore step trace",
}
WHOLE_SOURCE = "no step markers: the whole trace, first to last recorded activity"
QUEUED_SOURCE = (
    "no step markers: the whole trace to its last recorded activity, from the first GPU activity (it started "
    "{delay} after its launch: the GPU was still running work launched before the trace began)"
)
# A trace's first GPU activity that starts this long after its launch call was queued behind work
# the profiler did not record (a profile started while the GPU was busy): the GPU's state before
# it is unknown, not idle.
QUEUED_HEAD_US = 1000.0


@dataclass(frozen=True)
class StepWindow:
    """One analysed step: its number (None for the whole trace), window [lo, hi], the CPU span of
    its marker and the thread the marker is on (NONE for the whole trace)."""

    number: int | None
    lo: float
    hi: float
    cpu_ts: float
    cpu_dur: float
    thread: int

    @property
    def us(self) -> float:
        return self.hi - self.lo


@dataclass(frozen=True)
class Window:
    """The analysis window: `kind` 'steps' or 'whole', where the steps come from, the analysed
    steps (the whole trace is one), and how many steps the trace recorded in all."""

    kind: str
    source: str
    steps: tuple[StepWindow, ...]
    recorded_steps: int
    edges_excluded: bool
    markers: tuple[Step, ...] = ()  # the analysed steps' markers ('steps' only)
    # Every step marker's window (edges left out as for `steps`) where the op and kernel events
    # cover fewer steps than the markers: step time uses these. Empty: the same as `steps`.
    timed: tuple[StepWindow, ...] = ()
    covered: tuple[int, int] | None = None  # first and last step the op events cover, when fewer

    @property
    def start_us(self) -> float | None:
        return self.steps[0].lo if self.steps else None

    @property
    def end_us(self) -> float | None:
        return self.steps[-1].hi if self.steps else None

    @property
    def us(self) -> float:
        """Analysed time: the steps' windows added up."""
        return float(sum(s.us for s in self.steps))

    @property
    def has_steps(self) -> bool:
        return self.kind == "steps"

    @property
    def timed_steps(self) -> tuple[StepWindow, ...]:
        """The steps step time is measured over: every step marker's (less the edges)."""
        return self.timed or self.steps

    @property
    def timed_us(self) -> float:
        """Those steps' windows added up: the time step-level numbers cover (`us` where the same)."""
        return float(sum(s.us for s in self.timed)) if self.timed else self.us

    def describe(self) -> str:
        if not self.steps:
            return "nothing recorded"
        if not self.has_steps:
            return self.source
        edges = ", first and last left out" if self.edges_excluded else ""
        cover = f"; the op timeline covers steps {self.covered[0]}-{self.covered[1]}" if self.covered else ""
        return f"{len(self.steps)} of {plural(self.recorded_steps, 'step')} ({self.source}{cover}{edges})"


def device_work(t: Trace) -> np.ndarray:
    """GPU work rows (not device-side sync records) on the trace's primary device."""
    g = t.gpu
    work: np.ndarray = g.kind != GPU_SYNC
    dev = t.primary_device
    if dev is not None and _several_devices(g.device, work):
        work &= g.device == dev.id
    return work


def _several_devices(device: np.ndarray, rows: np.ndarray) -> bool:
    """Whether the rows of the mask `rows` name more than one device, a slice at a time."""
    first = None
    for i in range(0, len(device), _SLICE):
        d = device[i : i + _SLICE][rows[i : i + _SLICE]]
        if len(d):
            first = d[0] if first is None else first
            if (d != first).any():
                return True
    return False


def analysis_window(t: Trace, include_edges: bool = False) -> Window:
    steps = analysis_steps(t, include_edges)
    if not steps:
        return _whole(t)
    timed = timed_steps(t, include_edges)
    if len(timed) == len(steps):
        timed = []
    g = t.gpu
    every = t.steps
    # The end of the GPU work each recorded step launched (on any device: the step waits for all).
    owner = step_of(t, every, launch_ts(t))
    dev_end = np.full(len(every), -np.inf)
    sel = (g.kind != GPU_SYNC) & (owner >= 0)
    if sel.any():
        reduce_at(np.maximum, dev_end, owner[sel], (g.ts + g.dur)[sel])
    wanted = {id(s) for s in steps}
    also = {id(s) for s in timed}
    out: list[StepWindow] = []
    out_timed: list[StepWindow] = []
    prev = every[0].ts
    for i, s in enumerate(every):
        lo = max(prev, s.ts)
        hi = max(s.end, float(dev_end[i]), lo)
        prev = hi
        if id(s) in wanted or id(s) in also:
            lo, hi = clipped(t, lo, hi)
            w = StepWindow(s.number, lo, hi, s.ts, s.dur, int(t.ops.thread[s.op]) if s.op != NONE else NONE)
            if id(s) in wanted:
                out.append(w)
            if id(s) in also:
                out_timed.append(w)
    source = STEP_SOURCES.get(t.format, "step markers")
    cover = t.meta.get("op_steps") if timed else None
    covered = (int(cover[0]), int(cover[1])) if cover is not None and len(cover) == 2 else None
    return Window("steps", source, tuple(out), len(every), len(steps) != len(every), tuple(steps), tuple(out_timed), covered)


def _whole(t: Trace) -> Window:
    span = recorded_span(t)
    if span is None:
        return Window("whole", WHOLE_SOURCE, (), 0, False)
    lo, hi = span
    source = WHOLE_SOURCE
    queued = _queued_head(t)
    if queued is not None and lo < queued[0] < hi:
        lo = queued[0]
        source = QUEUED_SOURCE.format(delay=fmt_duration(queued[1]))
    return Window("whole", source, (StepWindow(None, lo, hi, lo, hi - lo, NONE),), 0, False)


def _queued_head(t: Trace) -> tuple[float, float] | None:
    """(start, delay after its launch) of the trace's first GPU activity when it was queued behind
    unrecorded work, else None."""
    g = t.gpu
    work = np.flatnonzero(g.kind != GPU_SYNC)
    if not len(work):
        return None
    first = int(work[np.argmin(g.ts[work])])
    r = int(g.launch[first])
    if r == NONE:
        return None
    delay = float(g.ts[first]) - float(t.runtime.ts[r] + t.runtime.dur[r])
    return (float(g.ts[first]), delay) if delay > QUEUED_HEAD_US else None


def step_at(t: Trace, w: Window, when: np.ndarray) -> np.ndarray:
    """Per CPU time: the index of the analysed step whose CPU span holds it (every time belongs to
    the whole-trace window), NONE outside the analysed steps. GPU work belongs to the step its
    launch call ran in (`step_at(t, w, launch_ts(t))`)."""
    if not w.steps:
        return np.full(len(when), NONE, dtype=np.int32)
    if not w.has_steps:
        return np.zeros(len(when), dtype=np.int32)
    return step_of(t, list(w.markers), when)
