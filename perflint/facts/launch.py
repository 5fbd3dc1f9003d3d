"""Launch overhead facts: `launch_groups` (per runtime API x launching op) and `launch_summary`
(one row per trace: short-kernel share, GPU busy, CPU launch time vs GPU time).

A "launch" is a CPU runtime call that put work on the GPU: any runtime call linked by correlation
to a kernel/memcpy/memset, plus the known launch APIs when their GPU side was not recorded. HTA's
CUDA kernel launch stats do the same for cudaLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync;
this also covers cuLaunchKernel, cudaLaunchKernelExC, hip* and graph launches.

Outlier cutoffs are HTA's defaults (runtime > 50 us, launch delay > 100 us). They are fixed here
because fact rows are computed once per trace, before any rule's params are known; rules filter on
the counts (and on the max/quantile fields when they want another cutoff).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import gpu_busy_pct, model, op_infos, runtime_in_window, window_mask, window_us
from perflint.facts._group import Groups, dense_ids, group_medians, id_table
from perflint.ids import compress_in_place, rows_of
from perflint.memo import once
from perflint.metrics.apis import is_kernel_launch, is_launch
from perflint.metrics.intervals import covered_before
from perflint.model import GPU_SYNC, KERNEL, NONE, Trace
from perflint.stepmodel.usage import gap_lengths
from perflint.units import fmt_duration

RUNTIME_CUTOFF_US = 50.0  # HTA cuda_kernel_launch_stats runtime_cutoff
DELAY_CUTOFF_US = 100.0  # HTA cuda_kernel_launch_stats launch_delay_cutoff
SHORT_KERNEL_US = 10.0  # TraceLens short-kernel threshold
# A launch call this long is not launch overhead: lazy module loading, library initialisation, or
# a call that blocked (a full launch queue). Such calls are counted apart.
SLOW_CALL_US = 1000.0
# Device idle gaps shorter than this are the scale of per-launch host overhead; longer ones have
# another cause (data loading, syncs, host work), which other rules name.
LAUNCH_GAP_US = 1000.0
_SLICE = 1 << 18  # rows per slice where a column is worked through a slice at a time


@dataclass
class _Launches:
    """The launch calls in the window and their GPU side, as references into the trace's own
    columns (a few bytes per call, not a float column each): `idx`, the calls (runtime rows,
    ascending); `row`, per call the GPU row it launched when it launched exactly one (NONE
    otherwise); the calls that launched several (`multi`: positions in idx, ascending) with their
    GPU time and first GPU start."""

    idx: np.ndarray
    row: np.ndarray
    multi: np.ndarray
    multi_time: np.ndarray
    multi_start: np.ndarray

    def _fill(self, pos: np.ndarray, one: np.ndarray, many: np.ndarray, missing: float) -> np.ndarray:
        """Per call at `pos`: `one[row]` of its single GPU row, `many[k]` of a call that launched
        several, `missing` for a call without GPU side; a slice at a time."""
        out = np.empty(len(pos))
        for i in range(0, len(pos), _SLICE):
            p = pos[i : i + _SLICE]
            r = self.row[p]
            has = r != NONE
            part = np.full(len(p), missing)
            part[has] = one[r[has]]
            if len(self.multi):
                k = np.minimum(np.searchsorted(self.multi, p), len(self.multi) - 1)
                m = self.multi[k] == p
                part[m] = many[k[m]]
            out[i : i + len(p)] = part
        return out

    def gpu_time(self, t: Trace, pos: np.ndarray) -> np.ndarray:
        """GPU time each call at `pos` launched: its rows' durations added in row order from 0.0
        (0.0 + d for a single row: the same float, -0.0 included)."""
        out = self._fill(pos, t.gpu.dur, self.multi_time, 0.0)
        out += 0.0
        return out

    def delay(self, t: Trace, pos: np.ndarray) -> np.ndarray:
        """HTA's launch delay of each call at `pos`: its first GPU start - the end of the call
        (nan without GPU side)."""
        out = self._fill(pos, t.gpu.ts, self.multi_start, np.nan)
        out[~np.isfinite(out)] = np.nan
        rt = t.runtime
        for i in range(0, len(pos), _SLICE):
            c = self.idx[pos[i : i + _SLICE]]
            out[i : i + _SLICE] -= rt.ts[c] + rt.dur[c]
        return out


def _launches(ctx: Context) -> _Launches:
    """The launch calls in the window (any runtime call linked to GPU work, and the launch APIs
    whose GPU side was not recorded), each with its GPU rows, a slice of rows at a time."""
    t = ctx.trace
    rt, g = t.runtime, t.gpu
    n = len(rt)
    is_call = np.zeros(n, dtype=bool)
    if n:
        table = id_table(rt.name, lambda i: is_launch(t.s(i)), dtype=bool, fill=False)
        for i in range(0, n, _SLICE):
            is_call[i : i + _SLICE] = table[rt.name[i : i + _SLICE] + 1]
    linked = (g.launch != NONE) & (g.kind != GPU_SYNC)
    gpu_rows = rows_of(linked)
    del linked
    for i in range(0, len(gpu_rows), _SLICE):
        is_call[g.launch[gpu_rows[i : i + _SLICE]]] = True
    sel = rows_of(is_call)
    del is_call
    sel = sel[runtime_in_window(ctx, sel)]

    def positions(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in sel, GPU rows) of the GPU rows whose call is in sel."""
        li = g.launch[rows]
        at = np.minimum(np.searchsorted(sel, li), max(len(sel) - 1, 0))
        mine = (sel[at] == li) if len(sel) else np.zeros(len(li), dtype=bool)
        return at[mine], rows[mine]

    row = np.full(len(sel), NONE, dtype=np.int32)
    several = np.zeros(len(sel), dtype=bool)
    for i in range(0, len(gpu_rows), _SLICE):
        at, rows = positions(gpu_rows[i : i + _SLICE])
        u, c = np.unique(at, return_counts=True)
        several[u[(c > 1) | (row[u] != NONE)]] = True  # a second row, in this slice or an earlier one
        row[at] = rows
    multi = rows_of(several)
    del several
    row[multi] = NONE
    multi_time = np.zeros(len(multi))
    multi_start = np.full(len(multi), np.inf)
    if len(multi):
        # Added and compared in GPU-row order from 0.0, as one pass over every row would.
        for i in range(0, len(gpu_rows), _SLICE):
            at, rows = positions(gpu_rows[i : i + _SLICE])
            k = np.minimum(np.searchsorted(multi, at), len(multi) - 1)
            m = multi[k] == at
            np.add.at(multi_time, k[m], g.dur[rows[m]])
            np.minimum.at(multi_start, k[m], g.ts[rows[m]])
    return _Launches(sel, row, multi, multi_time, multi_start)


GROUP_FIELDS: Fields = {
    "api": typed("runtime API name (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel, ...)", "text"),
    "op": typed("bottom-level op enclosing the launch call", "text"),
    "top_level_op": typed("outermost op on the launch stack", "text"),
    "op_stack": typed("ops from outermost to innermost (first launch of the group)", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("launch calls in the analysis steps", "integer"),
    "runtime_us": "total CPU time spent in the launch calls",
    "runtime_mean_us": "mean CPU time per launch call",
    "runtime_max_us": "longest launch call",
    "gpu_time_us": "GPU time of the work these calls launched",
    "delay_mean_us": "mean launch delay (GPU start - end of the launch call, as HTA defines it), linked launches only",
    "delay_p50_us": "median launch delay",
    "delay_max_us": "largest launch delay",
    "runtime_cutoff_us": "runtime outlier cutoff (HTA: 50 us)",
    "runtime_outliers": typed("launch calls longer than runtime_cutoff_us (and at most 1 ms: longer ones are slow_calls)", "integer"),
    "slow_calls": typed("launch calls over 1 ms: lazy module loading, initialisation or a blocked call, not per-launch overhead", "integer"),
    "slow_call_us": "CPU time of the slow_calls",
    "runtime_outlier_us": "CPU time of those calls above the cutoff (excess)",
    "delay_cutoff_us": "launch delay outlier cutoff (HTA: 100 us)",
    "delay_outliers": typed("launches whose delay exceeds delay_cutoff_us", "integer"),
    "delay_outlier_us": "launch delay above the cutoff, summed",
    "gpu_busy_pct": "GPU busy % over the analysis steps (same for every group)",
    "steps": typed("number of analysis steps", "integer"),
    "api_kind": typed("kernel (kernel and graph launches) | memcpy | memset | other: copies and syncs are the sync rules' concern", "text"),
    "api_count": typed("launch calls of this API in the analysis steps, over every launching op (the denominator of the API's outliers)", "integer"),
    "api_slow_calls": typed("calls of this API over 1 ms in the analysis steps, over every launching op (null when none)", "integer"),
    "outlier_max_us": "longest of the runtime_outliers (the calls counted there, none over 1 ms)",
    "idle_delay_outliers": typed("launches whose delay held more than delay_cutoff_us of device idle time: the work waited while the GPU did nothing", "integer"),
    "idle_delay_us": "device idle time inside those launches' delays, above the cutoff, summed",
    "idle_delay_max_us": "largest device idle time inside one launch's delay",
}


def api_kind(api: str) -> str:
    if is_kernel_launch(api):
        return "kernel"
    if "Memcpy" in api:
        return "memcpy"
    if "Memset" in api:
        return "memset"
    return "other"


@once
def _launch_facts(ctx: Context) -> tuple[list[Row], list[Row]]:
    """(launch_groups rows, launch_summary rows) from one set of launch calls, which neither
    keeps."""
    L = _launches(ctx)
    everyone = np.arange(len(L.idx), dtype=np.int32)
    gpu_total = float(L.gpu_time(ctx.trace, everyone).sum())
    del everyone
    groups = _group_rows(ctx, L)
    idx = L.idx
    del L  # the summary reads the calls alone
    return groups, _summary_rows(ctx, idx, gpu_total, groups)


@fact("launch_groups", key=("api", "top_level_op", "op"), fields=GROUP_FIELDS)
def launch_groups(ctx: Context) -> list[Row]:
    """CPU launch calls in the analysis steps, grouped per runtime API x launching op."""
    return _launch_facts(ctx)[0]


def _group_rows(ctx: Context, L: _Launches) -> list[Row]:
    t = ctx.trace
    rt = t.runtime
    idx = L.idx
    if len(idx) == 0:
        return []
    iid, infos = op_infos(ctx, rt.op[idx])
    if len(infos) == 1:  # one launch site (a trace without CPU ops): the API alone tells groups apart
        del iid
        groups = Groups(rt.name[idx])
        first_info = [0] * len(groups)
    else:
        site, _ = dense_ids((info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None) for info in infos)
        groups = Groups(rt.name[idx], site.astype(np.int32)[iid])
        first_info = iid[groups.first].tolist()
        del iid
    order, firsts, slices = groups.order, groups.first.tolist(), groups.slices()
    del groups  # its per-call group ids are not read again
    busy = gpu_busy_pct(ctx)
    ms, me = model(ctx).spans.work
    out: list[Row] = []
    for gi, sl in enumerate(slices):
        # Each group's values gathered on their own, one at a time, in the order a reorder of
        # every call would give them: the same sums.
        pos = order[sl]
        gpu = float(L.gpu_time(t, pos).sum())
        delay = L.delay(t, pos)
        nan = np.isnan(delay)
        if nan.any():
            delay = delay[~nan]
        # Of each delay, the time the device sat idle: waiting behind busy work is queueing.
        ends = rt.ts[idx[pos[~nan]]] + rt.dur[idx[pos[~nan]]]
        idle = delay - (covered_before(ms, me, ends + np.maximum(delay, 0.0)) - covered_before(ms, me, ends)) if len(ms) else delay.copy()
        np.maximum(idle, 0.0, out=idle)
        iover = idle > DELAY_CUTOFF_US
        del nan, ends
        dover = delay > DELAY_CUTOFF_US
        delay_mean = float(delay.sum()) / len(delay) if len(delay) else None
        delay_max = float(delay.max()) if len(delay) else None
        delay_outliers, delay_outlier_us = int(dover.sum()), float((delay[dover] - DELAY_CUTOFF_US).sum())
        del dover
        # Last: the median reorders the group's delays (its own gathered copy) in place.
        delay_p50 = group_medians(delay, np.array([len(delay)]), scratch=True)[0] if len(delay) else None
        del delay
        dur = rt.dur[idx[pos]]
        first = firsts[gi]
        info = infos[first_info[gi]]
        slow = dur > SLOW_CALL_US
        over = (dur > RUNTIME_CUTOFF_US) & ~slow
        runtime = float(dur.sum())
        api = t.s(int(rt.name[idx[first]]))
        out.append(
            {
                "_calls": idx[pos][over],  # the outlier calls, for the step model's what-if
                "api": api,
                "api_kind": api_kind(api),
                "outlier_max_us": float(dur[over].max()) if over.any() else None,
                "idle_delay_outliers": int(iover.sum()),
                "idle_delay_us": float((idle[iover] - DELAY_CUTOFF_US).sum()),
                "idle_delay_max_us": float(idle.max()) if len(idle) else None,
                "op": info.stack[-1] if info.stack else None,
                "top_level_op": info.stack[0] if info.stack else None,
                "op_stack": list(info.stack),
                "source": info.source,
                "count": len(dur),
                "runtime_us": runtime,
                # mean = the same pairwise sum / count, as ndarray.mean computes it
                "runtime_mean_us": runtime / len(dur),
                "runtime_max_us": float(dur.max()),
                "gpu_time_us": gpu,
                "delay_mean_us": delay_mean,
                "delay_p50_us": delay_p50,
                "delay_max_us": delay_max,
                "runtime_cutoff_us": RUNTIME_CUTOFF_US,
                "runtime_outliers": int(over.sum()),
                "runtime_outlier_us": float((dur[over] - RUNTIME_CUTOFF_US).sum()),
                "slow_calls": int(slow.sum()),
                "slow_call_us": float(dur[slow].sum()),
                "delay_cutoff_us": DELAY_CUTOFF_US,
                "delay_outliers": delay_outliers,
                "delay_outlier_us": delay_outlier_us,
                "gpu_busy_pct": busy,
                "steps": len(ctx.steps),
            }
        )
        del dur, slow, over, idle, iover
    # Per API, its calls over every launching op: the denominators of each group's counts.
    per_api: dict[str, list[int]] = {}
    for row in out:
        c = per_api.setdefault(row["api"], [0, 0])
        c[0] += row["count"]
        c[1] += row["slow_calls"]
    for row in out:
        row["api_count"] = per_api[row["api"]][0]
        row["api_slow_calls"] = per_api[row["api"]][1] or None
    out.sort(key=lambda row: -row["runtime_us"])
    return out


SUMMARY_FIELDS: Fields = {
    "kernel_count": typed("kernels launched in the analysis steps", "integer"),
    "short_kernels": typed("kernels shorter than short_kernel_us", "integer"),
    "short_kernel_us": "short-kernel threshold (TraceLens: 10 us)",
    "short_kernel_pct": "share of kernels (by count) shorter than short_kernel_us",
    "kernel_time_us": "GPU kernel time launched in the analysis steps",
    "gpu_time_us": "GPU time (kernels, memcpy, memset) launched by the launch calls",
    "launch_count": typed("launch calls in the analysis steps", "integer"),
    "launch_runtime_us": "CPU time spent in launch calls",
    "short_launch_runtime_us": "CPU time of the calls that launched short kernels",
    "launch_to_gpu_ratio": "launch_runtime_us / kernel_time_us",
    "gpu_busy_pct": "GPU busy %: merged kernel time / window time over the analysis steps",
    "window_us": "analysis window: the steps' windows (the whole trace without steps)",
    "idle_us": "window_us x (1 - gpu_busy_pct)",
    "top_launch_ops": typed("ops with the most kernel-launch CPU time: 'op (api) N calls, X' (calls over 1 ms left out)", "list"),
    "window": typed("what gpu_busy_pct is a share of: 'the step', or the whole trace without steps", "text"),
    "kernel_launch_runtime_us": "CPU time in kernel launch calls (not copies or memsets), calls over 1 ms left out",
    "slow_launch_calls": typed("kernel launch calls over 1 ms (lazy loading, initialisation, a blocked call), left out above", "integer"),
    "launch_gap_idle_us": "device idle time in the window in gaps shorter than 1 ms (the scale of per-launch overhead)",
    "launch_gap_idle_pct": "launch_gap_idle_us as % of all device idle time in the window",
    "launch_bound_us": "min(kernel_launch_runtime_us, launch_gap_idle_us): the idle time fewer launches can win",
    "steps": typed("number of analysis steps", "integer"),
}


def _launch_gap_idle(ctx: Context) -> tuple[float, float]:
    """(idle in gaps < LAUNCH_GAP_US, all idle) of the device over the analysis windows. Without
    steps, between the first and the last GPU work: before and after it (start-up, tear-down)
    the GPU is not waiting between launches."""
    m = model(ctx)
    ms, me = m.spans.work
    short = total = 0.0
    for w in m.steps:
        lo, hi = (w.lo, w.hi) if m.window.has_steps or not len(ms) else (max(w.lo, ms[0]), min(w.hi, me[-1]))
        gap = gap_lengths(ms, me, lo, hi)
        total += float(gap.sum())
        short += float(compress_in_place(gap, lambda part: part < LAUNCH_GAP_US).sum())
    return short, total


@fact("launch_summary", key=("path",), fields={"path": typed("trace file", "text"), **SUMMARY_FIELDS})
def launch_summary(ctx: Context) -> list[Row]:
    """One row per trace: short-kernel share, GPU busy and CPU launch time vs GPU kernel time."""
    return _launch_facts(ctx)[1]


def _summary_rows(ctx: Context, idx: np.ndarray, gpu_total: float, groups: list[Row]) -> list[Row]:
    t = ctx.trace
    g = t.gpu
    rt = t.runtime
    kern = window_mask(ctx) & (g.kind == KERNEL)
    if not kern.any():
        return []
    kd = g.dur[kern]
    kernel_time = float(kd.sum())
    short = kd < SHORT_KERNEL_US
    del kd
    short_count, short_pct = int(short.sum()), 100.0 * float(short.mean())
    # Launch calls whose kernels were all short (a cudaGraphLaunch of many kernels is not "short").
    short_ids = rows_of(kern)[short]
    del short
    short_launch = np.zeros(len(rt), dtype=bool)
    sl = g.launch[short_ids]
    short_launch[sl[sl != NONE]] = True
    del sl, short_ids
    runtime = rt.dur[idx]
    short_rt = float(runtime[short_launch[idx]].sum())
    del short_launch
    launch_runtime = float(runtime.sum())
    api_kernel = np.zeros(len(idx), dtype=bool)
    if len(rt):
        table = id_table(rt.name, lambda i: is_kernel_launch(t.s(i)), dtype=bool, fill=False)
        for i in range(0, len(idx), _SLICE):
            api_kernel[i : i + _SLICE] = table[rt.name[idx[i : i + _SLICE]] + 1]
    slow = runtime > SLOW_CALL_US
    klaunch = float(runtime[api_kernel & ~slow].sum())
    slow_launches = int((api_kernel & slow).sum())
    del runtime, api_kernel, slow
    busy = gpu_busy_pct(ctx)
    window = window_us(ctx)
    kernel_count = int(kern.sum())
    del kern
    gap_idle, all_idle = _launch_gap_idle(ctx)
    by_op: dict[tuple[str, str], list[float]] = {}
    for r in groups:
        if not is_kernel_launch(r["api"]):
            continue
        acc = by_op.setdefault((r["op"] or "(no op)", r["api"]), [0, 0.0])
        acc[0] += r["count"] - r["slow_calls"]
        acc[1] += r["runtime_us"] - r["slow_call_us"]
    top = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:3]
    return [
        {
            "path": t.path,
            "kernel_count": kernel_count,
            "short_kernels": short_count,
            "short_kernel_us": SHORT_KERNEL_US,
            "short_kernel_pct": short_pct,
            "kernel_time_us": kernel_time,
            "gpu_time_us": gpu_total,
            "launch_count": len(idx),
            "launch_runtime_us": launch_runtime,
            "short_launch_runtime_us": short_rt,
            "launch_to_gpu_ratio": launch_runtime / kernel_time if kernel_time else None,
            "gpu_busy_pct": busy,
            "window_us": window,
            "idle_us": window * (1.0 - busy / 100.0) if window and busy is not None else None,
            "top_launch_ops": [f"{op} ({api}) {int(n)} calls, {fmt_duration(us)}" for (op, api), (n, us) in top if n > 0],
            "window": "the step" if ctx.steps else "the whole trace (no step markers)",
            "kernel_launch_runtime_us": klaunch,
            "slow_launch_calls": slow_launches,
            "launch_gap_idle_us": gap_idle,
            "launch_gap_idle_pct": 100.0 * gap_idle / all_idle if all_idle > 0 else None,
            "launch_bound_us": min(klaunch, gap_idle),
            "steps": len(ctx.steps),
        }
    ]
