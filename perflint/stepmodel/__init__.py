"""The step model: one per trace, computed once. It holds the analysis window and its steps, what
the GPU did in each (busy, idle, copies, time per kernel category), and every number derived from
those; the summary, the fact sources, snapshots, diffs and reports read it and compute none of it
on their own."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from perflint.metrics.kernels import CATEGORIES
from perflint.metrics.stats import np_median
from perflint.model import Trace
from perflint.stepmodel.critical import BOUND, Segment, attribution, critical_path, recorded_attribution
from perflint.stepmodel.simulate import ANCHORED_MAX, StepReplay, anchored_note, replay, step_graphs, why_off
from perflint.stepmodel.usage import DeviceSpans, StepUsage, device_spans, step_usage
from perflint.stepmodel.whatif import CHANGES, Fix, Savings, savings
from perflint.stepmodel.window import StepWindow, Window, analysis_window, device_work, step_at

REPLAY_OK_PCT = 3.0  # a replay further off than this says which edge the trace could not give

__all__ = [
    "CHANGES", "DeviceSpans", "Fix", "Savings", "StepModel", "StepUsage", "StepWindow", "Window", "device_work", "step_at", "step_model",
]  # fmt: skip


@dataclass(frozen=True)
class StepModel:
    trace: Trace
    window: Window
    spans: DeviceSpans
    usage: tuple[StepUsage, ...]

    @property
    def steps(self) -> tuple[StepWindow, ...]:
        return self.window.steps

    @property
    def window_us(self) -> float:
        return self.window.us

    @property
    def busy_us(self) -> float:
        return float(sum(u.busy_us for u in self.usage))

    @property
    def compute_us(self) -> float:
        return float(sum(u.compute_us for u in self.usage))

    @property
    def active_us(self) -> float:
        return float(sum(u.active_us for u in self.usage))

    @property
    def idle_us(self) -> float:
        """Window time without any GPU work."""
        return float(sum(u.idle_us for u in self.usage))

    @property
    def busy_pct(self) -> float | None:
        """GPU busy % over the analysed steps together: kernel time (merged) / window time."""
        win = self.window_us
        return 100.0 * self.busy_us / win if win > 0 and self.has_gpu else None

    @property
    def has_gpu(self) -> bool:
        return bool(len(self.spans.work[0]))

    def temporal(self) -> dict[str, float | None]:
        """Idle, compute and non-compute (communication and copies that no compute kernel
        overlaps) as % of the window: they add up to 100."""
        win = self.window_us
        if win <= 0 or not self.has_gpu:
            return {"idle_pct": None, "compute_pct": None, "non_compute_pct": None}
        return {
            "idle_pct": 100.0 * self.idle_us / win,
            "compute_pct": 100.0 * self.compute_us / win,
            "non_compute_pct": 100.0 * max(0.0, self.active_us - self.compute_us) / win,
        }

    def step_busy_pcts(self) -> np.ndarray:
        return np.array([u.busy_pct for u in self.usage if u.busy_pct is not None], dtype=np.float64)

    @property
    def median_step_us(self) -> float | None:
        durs = [s.us for s in self.steps]
        return float(np_median(durs)) if durs and self.window.has_steps else None

    @cached_property
    def replays(self) -> tuple[StepReplay, ...]:
        """Each analysed step's graph replayed with the measured durations."""
        return tuple(StepReplay(g, replay(g)) for g in step_graphs(self.trace, self.window))

    def _replayed(self, i: int) -> StepReplay | None:
        """Step i's replay where it is one (most of its GPU work has a launch call)."""
        r = self.replays[i]
        return r if r.anchored <= ANCHORED_MAX else None

    @property
    def replay_error_pct(self) -> float | None:
        """Median over the analysed steps of |replayed - measured| / measured, %."""
        errs = [r.error_pct for i, r in enumerate(self.replays) if self._replayed(i) is not None]
        return float(np_median(errs)) if errs else None

    @cached_property
    def replay_notes(self) -> tuple[str, ...]:
        """What the replay could not derive, in the median step's words: GPU work without a launch
        call, and where the replay is more than REPLAY_OK_PCT off, which edge is missing."""
        if not self.steps:
            return ()
        r = self.replays[self.median_index]
        if r.anchored > ANCHORED_MAX:
            return (f"no replay: {anchored_note(self.trace, r)}",)
        notes = [anchored_note(self.trace, r)] if r.anchored > 0 else []
        err = self.replay_error_pct
        if err is not None and err > REPLAY_OK_PCT:
            notes.append(f"the replay is {err:.1f}% off the measured steps: {why_off(self.trace, r)}")
        return tuple(notes)

    @property
    def median_index(self) -> int:
        """The analysed step of median duration (the lower of the two middle ones)."""
        durs = [s.us for s in self.steps]
        return int(np.argsort(durs, kind="stable")[(len(durs) - 1) // 2])

    def critical_path(self) -> list[Segment]:
        """The median step's critical path (replayed times); empty where it is not a replay."""
        r = self._replayed(self.median_index) if self.steps else None
        return [] if r is None else critical_path(self.trace, r.graph, r.replayed)

    def bound_by(self) -> list[tuple[str, float]]:
        """What bounds the median step: time per category along its critical path, and the
        measured time the replay does not explain ("other"), adding up to the measured step.
        A step that cannot be replayed is shared out by what the trace recorded."""
        if not self.steps:
            return []
        r = self._replayed(self.median_index)
        if r is None:
            s = self.steps[self.median_index]
            got = recorded_attribution(self.trace, s.lo, s.hi)
            return sorted(((k, v) for k, v in got.items() if v > 0), key=lambda kv: (-kv[1], BOUND.index(kv[0])))
        got = attribution(critical_path(self.trace, r.graph, r.replayed))
        scale = 1.0
        rest = r.graph.measured_us - r.replayed_us
        if rest > 0:
            got["other"] = got.get("other", 0.0) + rest
        elif r.replayed_us > 0:  # the replay ran long: its pieces, scaled to the measured step
            scale = r.graph.measured_us / r.replayed_us
        return sorted(((k, v * scale) for k, v in got.items() if v > 0), key=lambda kv: (-kv[1], BOUND.index(kv[0])))

    def what_if(self, fixes: list[Fix]) -> Savings | None:
        """The analysed steps' time each fix saves alone, and all of them together, from replays
        of the steps' graphs with the fixes applied (steps whose GPU work all lacks launch calls
        left out); None when no step can be replayed."""
        done = [(r.graph, r.replayed) for r in self.replays if r.anchored < 1.0]
        return savings(self.trace, done, fixes) if done else None

    def category_us(self) -> dict[str, float]:
        """GPU time per kernel category over the analysed steps."""
        tot = np.zeros(len(CATEGORIES))
        for u in self.usage:
            tot += np.asarray(u.category_us)
        return {c: float(tot[i]) for i, c in enumerate(CATEGORIES)}


def step_model(trace: Trace, include_edges: bool = False) -> StepModel:
    """The trace's step model (its analysis steps with or without the warm-up and last step),
    made once per trace."""
    return trace.memo.keyed(_build, trace, include_edges)


def _build(trace: Trace, include_edges: bool) -> StepModel:
    w = analysis_window(trace, include_edges)
    spans = trace.memo.get(device_spans, trace)
    return StepModel(trace, w, spans, tuple(step_usage(trace, w, spans)))
