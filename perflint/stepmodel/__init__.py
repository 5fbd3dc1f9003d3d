"""The step model: one per trace, computed once. It holds the analysis window and its steps, what
the GPU did in each (busy, idle, copies, time per kernel category), and every number derived from
those; the summary, the fact sources, snapshots, diffs and reports read it and compute none of it
on their own."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from perflint.metrics.kernel_classes import CATEGORIES, classify
from perflint.metrics.stats import np_median
from perflint.model import GPU_SYNC, KERNEL, Trace
from perflint.stepmodel.critical import BOUND, Pieces, attribution, critical_path, lane_activity, recorded_attribution
from perflint.stepmodel.simulate import ANCHORED_MAX, BlockReplay, anchored_note, block_graph, replay_graph, too_big, why_off
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
        """Whether the trace records what the device did: some GPU work besides communication. A
        step trace's collective spans without the op timeline (MindSpore) leave the device's busy
        time unknown, not idle."""
        return bool(len(self.spans.work[0])) and self.records_compute

    @cached_property
    def records_compute(self) -> bool:
        """Whether the trace has GPU work besides communication kernels (compute, copies)."""
        g = self.trace.gpu
        comm = classify(self.trace).category == CATEGORIES.index("communication")
        return bool(((g.kind != GPU_SYNC) & ~((g.kind == KERNEL) & comm)).any())

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
        """Median step time over every step marker (also where the op events cover fewer)."""
        durs = [s.us for s in self.window.timed_steps]
        return float(np_median(durs)) if durs and self.window.has_steps else None

    @cached_property
    def block(self) -> BlockReplay | None:
        """The analysed steps' graph (a run of at most MAX_STEPS of them) replayed with the
        measured durations."""
        got = block_graph(self.trace, self.window)
        if got is None:
            return None
        g, first = got
        return BlockReplay(g, replay_graph(g), first)

    def _replayable(self, j: int) -> bool:
        """Whether the block's step j is a replay (most of its GPU work has a launch call)."""
        return self.block is not None and float(self.block.anchored[j]) <= ANCHORED_MAX

    @property
    def replay_error_pct(self) -> float | None:
        """Median over the replayed steps of |replayed - measured| / measured, %."""
        r = self.block
        errs = [r.error_pct(j) for j in range(r.steps) if self._replayable(j)] if r is not None else []
        return float(np_median(errs)) if errs else None

    @property
    def median_step(self) -> int | None:
        """The replayed step of median measured duration (the lower of the two middle ones), as
        an index into the block."""
        r = self.block
        if r is None:
            return None
        durs = [r.measured_us(j) for j in range(r.steps)]
        return int(np.argsort(durs, kind="stable")[(len(durs) - 1) // 2])

    @property
    def median_index(self) -> int:
        """The median step's index among the analysed steps (of the replayed ones where there is
        a replay: a long run replays the middle steps)."""
        r, j = self.block, self.median_step
        if r is None or j is None:
            durs = [st.us for st in self.steps]
            return int(np.argsort(durs, kind="stable")[(len(durs) - 1) // 2]) if durs else 0
        return r.first + j

    @cached_property
    def replay_notes(self) -> tuple[str, ...]:
        """What the replay could not derive, in the median step's words: GPU work without a launch
        call, and where the replay is more than REPLAY_OK_PCT off, which edge is missing."""
        r, j = self.block, self.median_step
        if r is None or j is None:
            why = too_big(self.trace, self.window)
            return (why,) if why else ()
        share = float(r.anchored[j])
        if share > ANCHORED_MAX:
            return (f"no replay: {anchored_note(self.trace, share)}",)
        notes = [anchored_note(self.trace, share)] if share > 0 else []
        err = self.replay_error_pct
        if err is not None and err > REPLAY_OK_PCT:
            notes.append(f"the replay is {err:.1f}% off the measured steps: {why_off(self.trace, r, j)}")
        if len(self.steps) > r.steps:
            notes.append(f"{r.steps} of the {len(self.steps)} analysed steps replayed (the middle ones); fixes save per step what they save there")
        return tuple(notes)

    @cached_property
    def _path(self) -> Pieces | None:
        r, j = self.block, self.median_step
        if r is None or j is None:
            return None
        return critical_path(self.trace, r.graph, r.replayed, j)

    def critical_path(self) -> Pieces | None:
        """The median step's critical path (replayed times); None where it is not a replay."""
        j = self.median_step
        return self._path if j is not None and self._replayable(j) else None

    def lanes(self) -> list[tuple[str, list[tuple[float, float]]]]:
        """What ran on each CPU thread and GPU stream during the median step's replay (merged busy
        intervals, replayed times: the critical path's clock); empty where it is not a replay."""
        r, j = self.block, self.median_step
        if r is None or j is None or not self._replayable(j):
            return []
        return lane_activity(self.trace, r.graph, r.replayed, j)

    def bound_by(self) -> list[tuple[str, float]]:
        """What bounds the median step: time per category along its critical path, and the
        measured time the replay does not explain ("other"), adding up to the measured step.
        A step that cannot be replayed is shared out by what the trace recorded."""
        r, j = self.block, self.median_step
        if not self.steps:
            return []
        if r is None or j is None or not self._replayable(j):
            s = self.steps[self.median_index]
            got = recorded_attribution(self.trace, s.lo, s.hi)
            return sorted(((k, v) for k, v in got.items() if v > 0), key=lambda kv: (-kv[1], BOUND.index(kv[0])))
        path = self._path
        assert path is not None
        got = attribution(path)
        scale = 1.0
        rest = r.measured_us(j) - r.replayed_us(j)
        if rest > 0:
            got["other"] = got.get("other", 0.0) + rest
        elif r.replayed_us(j) > 0:  # the replay ran long: its pieces, scaled to the measured step
            scale = r.measured_us(j) / r.replayed_us(j)
        return sorted(((k, v * scale) for k, v in got.items() if v > 0), key=lambda kv: (-kv[1], BOUND.index(kv[0])))

    def what_if(self, fixes: list[Fix]) -> Savings | None:
        """The analysed steps' time each fix saves alone, and all of them together, from replays
        of the steps' graph with the fixes applied; None when the steps cannot be replayed."""
        r = self.block
        if r is None or float(np.mean(r.anchored)) > ANCHORED_MAX:
            return None
        return savings(self.trace, r.graph, r.replayed, fixes, len(self.steps))

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
