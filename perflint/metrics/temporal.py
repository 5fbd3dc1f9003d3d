"""HTA's temporal breakdown (idle / compute / non-compute), as `get_temporal_breakdown` of
HolisticTraceAnalysis 0.5.0 defines it (spec: docs/metrics.md, "temporal").

Everything here follows HTA's own rules, not perflint's analysis steps:
* window: when the trace names at least two distinct ProfilerStep strings, CPU events starting at or
  after the start of the last ProfilerStep are dropped, and device activities are kept only when a
  kept CPU event carries their correlation id (a launch-time rule: launches before the first step
  stay). Otherwise nothing is dropped.
* device work: every kept activity with a stream (kernels, memcpy, memset and stream-bearing
  cuda_sync records); `kernel_time` is the span of that work, idle the gaps in its union.
* compute: union of the activities HTA's name regexes call COMPUTATION (HTA's own classification,
  deliberately not perflint's kernel categories).
Difference: HTA rounds fractional timestamps (start up, end down); perflint keeps exact times, so on
fractional traces it can show less idle than HTA. Integer-µs traces agree exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from perflint.metrics.intervals import merge
from perflint.model import NONE, Trace

# HTA's kernel types (hta/utils/utils.py get_kernel_type), applied with re.match (anchored at start).
_COMM = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
# HTA's "not computation" alternation, kept with its precedence as written: ^nccl.*Kernel OR .*Memcpy
# OR ^Memset OR .*Sync. So "Stream Sync" is OTHER while "Stream Wait Event" is COMPUTATION.
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
HTA_TYPES = ("COMMUNICATION", "MEMORY", "COMPUTATION", "OTHER")
# Device-side sync records HTA treats as GPU rows even without stream/correlation.
_SYNC_NAMES = ("Event Sync", "Context Sync")


def hta_kernel_type(name: str) -> str:
    if _COMM.match(name):
        return "COMMUNICATION"
    if _MEMORY.match(name):
        return "MEMORY"
    if not _NOT_COMPUTE.match(name):
        return "COMPUTATION"
    return "OTHER"


@dataclass(frozen=True)
class TemporalBreakdown:
    idle_us: float
    compute_us: float
    non_compute_us: float
    kernel_time_us: float
    step_filter: bool  # whether HTA's last-step filter applied
    device_events: int  # activities in the union (HTA's rows with stream != -1)

    def pct(self, us: float) -> float | None:
        return 100.0 * us / self.kernel_time_us if self.kernel_time_us > 0 else None


def _names_with(trace: Trace, ids: np.ndarray, needle: str) -> np.ndarray:
    """String ids (among `ids`) whose text contains `needle`; one regex-free test per distinct id."""
    uniq = np.unique(ids[ids >= 0])
    return np.array([i for i in uniq.tolist() if needle in trace.strings[i]], dtype=np.int64)


def hta_device_mask(trace: Trace) -> tuple[np.ndarray, bool]:
    """GPU-table rows HTA's temporal breakdown unions, and whether the last-step filter applied."""
    g = trace.gpu
    on_stream = g.stream != -1
    step_ids = np.unique(
        np.concatenate(
            [_names_with(trace, col, "ProfilerStep") for col in (trace.ops.name, trace.pyfn.name, trace.runtime.name)]
        )
    )
    if len(step_ids) <= 1:  # no step, or a single step name: HTA filters nothing
        return on_stream, False
    starts = [tbl.ts[np.isin(tbl.name, step_ids)] for tbl in (trace.ops, trace.pyfn, trace.runtime)]
    last_start = float(np.concatenate(starts).max())

    sync_ids = np.array([i for i in np.unique(g.name).tolist() if trace.s(i) in _SYNC_NAMES], dtype=np.int64)
    gpu_row = ((g.stream >= 0) & (g.correlation >= 0)) | np.isin(g.name, sync_ids)
    # Correlation ids of the kept CPU-side rows: runtime calls, plus activities HTA does not count as
    # GPU rows (no stream or no correlation); CPU ops carry none, which HTA reads as -1.
    kept_rt = trace.runtime.correlation[trace.runtime.ts < last_start]
    kept_cpu_gpu_table = ~gpu_row & (g.ts < last_start)
    corrs = [kept_rt, g.correlation[kept_cpu_gpu_table]]
    if (trace.ops.ts < last_start).any() or (trace.pyfn.ts < last_start).any():
        corrs.append(np.array([NONE], dtype=np.int64))
    kept_corr = np.unique(np.concatenate(corrs))
    kept = np.where(gpu_row, np.isin(g.correlation, kept_corr), kept_cpu_gpu_table)
    return kept & on_stream, True


def hta_temporal(trace: Trace) -> TemporalBreakdown | None:
    """HTA's temporal breakdown in µs; None when there is no device activity (HTA raises there)."""
    cached = trace.cache.get("hta_temporal", False)
    if cached is not False:
        return cached  # type: ignore[no-any-return]
    g = trace.gpu
    mask, filtered = hta_device_mask(trace)
    out: TemporalBreakdown | None = None
    if mask.any():
        ts, end = g.ts[mask], g.ts[mask] + g.dur[mask]
        ms, me = merge(ts, end)
        kernel_time = float(me[-1] - ms[0])
        busy = float((me - ms).sum())
        idle = kernel_time - busy
        names = g.name[mask]
        uniq, inv = np.unique(names, return_inverse=True)
        is_compute = np.array([hta_kernel_type(trace.s(int(n))) == "COMPUTATION" for n in uniq.tolist()], dtype=bool)
        c = is_compute[inv] if len(uniq) else np.zeros(0, dtype=bool)
        cs, ce = merge(ts[c], end[c])
        compute = float((ce - cs).sum())
        out = TemporalBreakdown(
            idle_us=idle,
            compute_us=compute,
            non_compute_us=kernel_time - compute - idle,
            kernel_time_us=kernel_time,
            step_filter=filtered,
            device_events=int(mask.sum()),
        )
    trace.cache["hta_temporal"] = out
    return out


def temporal_breakdown(trace: Trace) -> dict[str, float | None]:
    """The `temporal.*` percentages of `perflint summary` (None when the trace has no device work)."""
    tb = hta_temporal(trace)
    if tb is None or tb.kernel_time_us <= 0:
        return {"idle_pct": None, "compute_pct": None, "non_compute_pct": None}
    return {
        "idle_pct": tb.pct(tb.idle_us),
        "compute_pct": tb.pct(tb.compute_us),
        "non_compute_pct": tb.pct(tb.non_compute_us),
    }
