"""HTA's temporal breakdown (idle / compute / non-compute), as `get_temporal_breakdown` of
HolisticTraceAnalysis 0.5.0 defines it (spec: docs/metrics.md, "temporal").

Everything here follows HTA's own rules, not perflint's analysis steps:
* times: when any timestamp of the trace is fractional (ns resolution), HTA rounds every event to
  whole µs, start up and end down, before anything else; so does this module.
* window: when the trace names at least two distinct ProfilerStep strings, CPU events starting at or
  after the start of the last ProfilerStep are dropped, and device activities are kept only when a
  kept CPU event carries their correlation id (a launch-time rule: launches before the first step
  stay). Otherwise nothing is dropped.
* device work: every kept activity with a stream (kernels, memcpy, memset and stream-bearing
  cuda_sync records); `kernel_time` is the span of that work, idle the gaps in its union.
* compute: union of the activities HTA's name regexes call COMPUTATION (HTA's own classification,
  deliberately not perflint's kernel categories).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from perflint.graph.build import unique_correlation_launch
from perflint.ids import distinct
from perflint.memo import once
from perflint.metrics.intervals import merged_length
from perflint.model import NONE, GpuTable, OpTable, PyFnTable, RuntimeTable, Trace

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


def _string_mask(trace: Trace, test: Callable[[str], bool]) -> np.ndarray:
    """Boolean lookup table over string ids (one test per interned string, not per event)."""
    return np.fromiter((test(s) for s in trace.strings), dtype=bool, count=len(trace.strings))


def _name_hits(lut: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Rows of a string-id column whose id is set in `lut` (NONE and unknown ids: never)."""
    if len(col) == 0 or len(lut) == 0:
        return np.zeros(len(col), dtype=bool)
    ok = (col >= 0) & (col < len(lut))
    hits: np.ndarray = ok & lut[np.where(ok, col, 0)]
    return hits


def _isin_int(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """np.isin for integer arrays: a bitmap over the members' range when it is compact (correlation
    ids are), else a sort and a binary search (np.isin's hashing costs more on large inputs)."""
    if len(values) == 0 or len(members) == 0:
        return np.zeros(len(values), dtype=bool)
    lo, hi = int(members.min()), int(members.max())
    if hi - lo <= max(32 * (len(values) + len(members)), 1 << 24):
        table = np.zeros(hi - lo + 1, dtype=bool)
        table[members - lo] = True
        inside = (values >= lo) & (values <= hi)
        hits: np.ndarray = inside & table[np.where(inside, values - lo, 0)]
        return hits
    s = np.sort(members)
    pos = np.minimum(np.searchsorted(s, values), len(s) - 1)
    found: np.ndarray = s[pos] == values
    return found


def hta_rounds(trace: Trace) -> bool:
    """Whether HTA's parser rounds this trace's events to whole µs: it does when its timestamp
    column is fractional (a ns-resolution trace); on whole-µs traces rounding changes nothing."""
    return any(_has_fraction(ts) for ts in (trace.gpu.ts, trace.runtime.ts, trace.ops.ts, trace.pyfn.ts))


_CHUNK = 1 << 16
_SLICE = 1 << 18


def _has_fraction(ts: np.ndarray) -> bool:
    """Any non-whole value, a chunk at a time into one small buffer: a whole column's floor would
    fault in a column-sized array (a tenth of a second on 10M rows) to be read once."""
    buf = np.empty(min(len(ts), _CHUNK))
    for i in range(0, len(ts), _CHUNK):
        chunk = ts[i : i + _CHUNK]
        whole = buf[: len(chunk)]
        np.floor(chunk, out=whole)
        if not np.array_equal(whole, chunk):
            return True
    return False


def _before(ts: np.ndarray, last: float, rounded: bool) -> np.ndarray:
    """Rows that start before `last` as HTA compares them: on a rounded trace, ceil(ts) < ceil(last),
    that is ts <= ceil(last) - 1 (no rounded copy of the column)."""
    return ts <= math.ceil(last) - 1 if rounded else ts < last


def hta_device_mask(trace: Trace, rounded: bool = False) -> tuple[np.ndarray, bool]:
    """GPU-table rows HTA's temporal breakdown unions, and whether the last-step filter applied.
    `rounded`: the trace's times are rounded as HTA does (`hta_rounds`)."""
    g = trace.gpu
    on_stream = g.stream != -1
    tables: tuple[OpTable | PyFnTable | RuntimeTable, ...] = (trace.ops, trace.pyfn, trace.runtime)
    step_lut = _string_mask(trace, lambda s: "ProfilerStep" in s)
    used = np.zeros(len(step_lut), dtype=bool)
    step_starts: list[float] = []
    for tbl in tables:  # a slice at a time: the CPU tables are the longest, and most have no step
        for i in range(0, len(tbl), _SLICE):
            names = tbl.name[i : i + _SLICE]
            hit = _name_hits(step_lut, names)
            if hit.any():
                used[names[hit]] = True
                step_starts.append(tbl.ts[i : i + _SLICE][hit].max())
    if int(used.sum()) <= 1:  # no step, or a single step name: HTA filters nothing
        return on_stream, False
    last_start = float(np.max(step_starts))  # a NaN start wins, as in one max over every start

    sync_lut = _string_mask(trace, lambda s: s in _SYNC_NAMES)
    gpu_row = ((g.stream >= 0) & (g.correlation >= 0)) | _name_hits(sync_lut, g.name)
    # Correlation ids of the kept CPU-side rows: runtime calls, plus activities HTA does not count as
    # GPU rows (no stream or no correlation); CPU ops carry none, which HTA reads as -1.
    kept_cpu_gpu_table = ~gpu_row & _before(g.ts, last_start, rounded)
    others = [g.correlation[kept_cpu_gpu_table]]
    if _before(trace.ops.ts, last_start, rounded).any() or _before(trace.pyfn.ts, last_start, rounded).any():
        others.append(np.array([NONE], dtype=np.int64))
    launch = unique_correlation_launch(trace)
    if launch is None:
        kept_rt = trace.runtime.correlation[_before(trace.runtime.ts, last_start, rounded)]
        found = _isin_int(g.correlation, np.concatenate([kept_rt, *others]))
    else:
        found = _kept_by_launch(trace, launch, last_start, rounded) | _isin_sorted(g.correlation, np.concatenate(others))
    kept = np.where(gpu_row, found, kept_cpu_gpu_table)
    return kept & on_stream, True


def _kept_by_launch(trace: Trace, launch: np.ndarray, last_start: float, rounded: bool) -> np.ndarray:
    """Per GPU row: its correlation id is on a runtime call kept (starting before `last_start`).
    With unique runtime ids the linked call is the only candidate (no membership table over the
    whole id range)."""
    g, rt = trace.gpu, trace.runtime
    out = np.zeros(len(g), dtype=bool)
    linked = launch != NONE
    out[linked] = _before(rt.ts[launch[linked]], last_start, rounded)
    none = g.correlation == NONE  # never linked; a kept runtime call without an id matches them
    if none.any():
        out[none] = bool(((rt.correlation == NONE) & _before(rt.ts, last_start, rounded)).any())
    return out


def _isin_sorted(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """np.isin for a few integer members: a sort of the members and a binary search."""
    if len(values) == 0 or len(members) == 0:
        return np.zeros(len(values), dtype=bool)
    s = np.sort(members)
    pos = np.minimum(np.searchsorted(s, values), len(s) - 1)
    return s[pos] == values  # type: ignore[no-any-return]


@once
def hta_temporal(trace: Trace) -> TemporalBreakdown | None:
    """HTA's temporal breakdown in µs; None when there is no device activity (HTA raises there)."""
    g = trace.gpu
    rounded = hta_rounds(trace)
    mask, filtered = hta_device_mask(trace, rounded)
    out: TemporalBreakdown | None = None
    events = int(np.count_nonzero(mask))
    if events:
        # HTA's COMPUTATION verdict per string id, tested once per name in use; the last slot
        # stands for rows without a name (NONE indexes it).
        lut = np.zeros(len(trace.strings) + 1, dtype=bool)
        for n in _names_in(g.name, mask):
            lut[n] = hta_kernel_type(trace.s(n)) == "COMPUTATION"
        kernel_time, busy = _union(g, mask, rounded)
        idle = kernel_time - busy
        compute = _union(g, mask & lut[g.name], rounded)[1]
        out = TemporalBreakdown(
            idle_us=idle,
            compute_us=compute,
            # Rounding can leave an event inverted (a sub-µs one that crosses no whole µs): HTA then
            # counts negative busy time and fails its own non-compute >= 0 check.
            non_compute_us=max(0.0, kernel_time - compute - idle),
            kernel_time_us=kernel_time,
            step_filter=filtered,
            device_events=events,
        )
    return out


def _names_in(name: np.ndarray, rows: np.ndarray) -> set[int]:
    """Distinct ids of `name` on the rows of the mask `rows`, a slice at a time (no column-long
    copy of the ids)."""
    found: set[int] = set()
    for i in range(0, len(name), _SLICE):
        found.update(distinct(name[i : i + _SLICE][rows[i : i + _SLICE]]))
    return found


def _union(g: GpuTable, rows: np.ndarray, rounded: bool) -> tuple[float, float]:
    """(last end - first start, total length) of the merged spans of the GPU rows in the mask
    `rows` (0.0 for both without rows); on a rounded trace HTA's order: the end from the exact
    times, then start rounded up and end down."""
    first, last, length = merged_length(g.ts, g.dur, rows, rounded=rounded)
    return last - first, length


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
