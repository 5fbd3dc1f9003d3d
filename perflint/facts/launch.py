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

import numpy as np

from perflint.facts import Context, Row, fact, rows
from perflint.facts._common import gpu_utilization, op_infos, steps_time_us, window_mask
from perflint.facts._group import Groups, dense_ids, group_medians, id_table, sums
from perflint.facts.apis import is_kernel_launch, is_launch
from perflint.facts.steps import busy_intervals, gap_lengths, windows
from perflint.memo import once
from perflint.metrics.intervals import merge_spans
from perflint.metrics.steps import step_of
from perflint.model import GPU_SYNC, KERNEL, NONE
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

def runtime_in_window(ctx: Context, rows: np.ndarray) -> np.ndarray:
    """Which of these runtime calls were made inside the analysis steps (all without steps)."""
    if not ctx.steps:
        return np.ones(len(rows), dtype=bool)
    return step_of(ctx.trace, ctx.steps, ctx.trace.runtime.ts[rows]) >= 0


def window_span_us(ctx: Context) -> float | None:
    """Denominator for 'share of step': step time, else the span of the GPU work analysed."""
    if ctx.steps:
        return steps_time_us(ctx)
    g = ctx.trace.gpu
    m = window_mask(ctx)
    if not m.any():
        return None
    span = float((g.ts[m] + g.dur[m]).max() - g.ts[m].min())
    return span or None


@once
def _launches(ctx: Context) -> dict[str, np.ndarray]:
    """Per launch call in the window: runtime index, GPU time launched, first GPU start."""
    t = ctx.trace
    rt, g = t.runtime, t.gpu
    n = len(rt)
    linked = (g.launch != NONE) & (g.kind != GPU_SYNC)
    li = g.launch[linked]
    # First GPU start per call: most calls launch one activity, so assign, then take the min
    # only over calls that launched several.
    lts = g.ts[linked]
    multi = np.bincount(li, minlength=n)[li] > 1
    starts = np.full(n, np.inf)
    starts[li] = lts
    if multi.any():
        starts[li[multi]] = np.inf
        np.minimum.at(starts, li[multi], lts[multi])
    del lts, multi
    has = np.isfinite(starts)
    if n:
        has |= id_table(rt.name, lambda i: is_launch(t.s(i)), dtype=bool, fill=False)[rt.name + 1]
    sel = np.flatnonzero(has)
    del has
    sel = sel[runtime_in_window(ctx, sel)]
    first_start = starts[sel]
    del starts
    first_start[~np.isfinite(first_start)] = np.nan  # no GPU side
    # Sums add in row order from 0.0, as np.add.at did: the same floats.
    gpu_time = sums(li, g.dur[linked], n)[sel]
    # HTA's documented launch delay: kernel start - end of the launch call (nan: GPU side missing)
    first_start -= rt.ts[sel] + rt.dur[sel]
    return {"idx": sel.astype(np.int32) if n < 2**31 else sel, "gpu_time": gpu_time, "delay": first_start}


GROUP_FIELDS = {
    "api": "runtime API name (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel, ...)",
    "op": "bottom-level op enclosing the launch call",
    "top_level_op": "outermost op on the launch stack",
    "op_stack": "ops from outermost to innermost (first launch of the group)",
    "source": "user's file:line, when stacks were recorded",
    "count": "launch calls in the analysis steps",
    "runtime_us": "total CPU time spent in the launch calls",
    "runtime_mean_us": "mean CPU time per launch call",
    "runtime_max_us": "longest launch call",
    "gpu_time_us": "GPU time of the work these calls launched",
    "delay_mean_us": "mean launch delay (GPU start - end of the launch call, as HTA defines it), linked launches only",
    "delay_p50_us": "median launch delay",
    "delay_max_us": "largest launch delay",
    "runtime_cutoff_us": "runtime outlier cutoff (HTA: 50 us)",
    "runtime_outliers": "launch calls longer than runtime_cutoff_us (and at most 1 ms: longer ones are slow_calls)",
    "slow_calls": "launch calls over 1 ms: lazy module loading, initialisation or a blocked call, not per-launch overhead",
    "slow_call_us": "CPU time of the slow_calls",
    "runtime_outlier_us": "CPU time of those calls above the cutoff (excess)",
    "delay_cutoff_us": "launch delay outlier cutoff (HTA: 100 us)",
    "delay_outliers": "launches whose delay exceeds delay_cutoff_us",
    "delay_outlier_us": "launch delay above the cutoff, summed",
    "gpu_busy_pct": "trace-wide TensorBoard-plugin GPU utilization (same for every group)",
    "steps": "number of analysis steps",
}


@fact("launch_groups", key=("api", "top_level_op", "op"), fields=GROUP_FIELDS)
def launch_groups(ctx: Context) -> list[Row]:
    """CPU launch calls in the analysis steps, grouped per runtime API x launching op."""
    t = ctx.trace
    rt = t.runtime
    L = _launches(ctx)
    idx = L["idx"]
    if len(idx) == 0:
        return []
    iid, infos = op_infos(ctx, rt.op[idx])
    site, _ = dense_ids((info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None) for info in infos)
    groups = Groups(rt.name[idx], site[iid])
    first_info = iid[groups.first].tolist()
    del iid
    busy = gpu_utilization(ctx)
    dur_all = rt.dur[idx[groups.order]]
    delay_all = L["delay"][groups.order]
    gpu_all = L["gpu_time"][groups.order]
    medians = group_medians(delay_all, groups.counts)
    out: list[Row] = []
    for gi, sl in enumerate(groups.slices()):
        dur = dur_all[sl]
        delay = delay_all[sl]
        delay = delay[~np.isnan(delay)]
        first = int(groups.first[gi])
        info = infos[first_info[gi]]
        slow = dur > SLOW_CALL_US
        over = (dur > RUNTIME_CUTOFF_US) & ~slow
        dover = delay > DELAY_CUTOFF_US
        runtime = float(dur.sum())
        out.append(
            {
                "api": t.s(int(rt.name[idx[first]])),
                "op": info.stack[-1] if info.stack else None,
                "top_level_op": info.stack[0] if info.stack else None,
                "op_stack": list(info.stack),
                "source": info.source,
                "count": len(dur),
                "runtime_us": runtime,
                # mean = the same pairwise sum / count, as ndarray.mean computes it
                "runtime_mean_us": runtime / len(dur),
                "runtime_max_us": float(dur.max()),
                "gpu_time_us": float(gpu_all[sl].sum()),
                "delay_mean_us": float(delay.sum()) / len(delay) if len(delay) else None,
                "delay_p50_us": medians[gi] if len(delay) else None,
                "delay_max_us": float(delay.max()) if len(delay) else None,
                "runtime_cutoff_us": RUNTIME_CUTOFF_US,
                "runtime_outliers": int(over.sum()),
                "runtime_outlier_us": float((dur[over] - RUNTIME_CUTOFF_US).sum()),
                "slow_calls": int(slow.sum()),
                "slow_call_us": float(dur[slow].sum()),
                "delay_cutoff_us": DELAY_CUTOFF_US,
                "delay_outliers": int(dover.sum()),
                "delay_outlier_us": float((delay[dover] - DELAY_CUTOFF_US).sum()),
                "gpu_busy_pct": busy,
                "steps": len(ctx.steps),
            }
        )
    out.sort(key=lambda row: -row["runtime_us"])
    return out


SUMMARY_FIELDS = {
    "kernel_count": "kernels launched in the analysis steps",
    "short_kernels": "kernels shorter than short_kernel_us",
    "short_kernel_us": "short-kernel threshold (TraceLens: 10 us)",
    "short_kernel_pct": "share of kernels (by count) shorter than short_kernel_us",
    "kernel_time_us": "GPU kernel time launched in the analysis steps",
    "gpu_time_us": "GPU time (kernels, memcpy, memset) launched by the launch calls",
    "launch_count": "launch calls in the analysis steps",
    "launch_runtime_us": "CPU time spent in launch calls",
    "short_launch_runtime_us": "CPU time of the calls that launched short kernels",
    "launch_to_gpu_ratio": "launch_runtime_us / kernel_time_us",
    "gpu_busy_pct": "TensorBoard-plugin GPU utilization (merged kernels in steps / step time)",
    "window_us": "step time (or GPU span without steps)",
    "idle_us": "window_us x (1 - gpu_busy_pct)",
    "top_launch_ops": "ops with the most kernel-launch CPU time: 'op (api) N calls, X' (calls over 1 ms left out)",
    "window": "what gpu_busy_pct is a share of: 'the step', or the GPU's active span without steps",
    "kernel_launch_runtime_us": "CPU time in kernel launch calls (not copies or memsets), calls over 1 ms left out",
    "slow_launch_calls": "kernel launch calls over 1 ms (lazy loading, initialisation, a blocked call), left out above",
    "launch_gap_idle_us": "device idle time in the window in gaps shorter than 1 ms (the scale of per-launch overhead)",
    "launch_gap_idle_pct": "launch_gap_idle_us as % of all device idle time in the window",
    "launch_bound_us": "min(kernel_launch_runtime_us, launch_gap_idle_us): the idle time fewer launches can win",
    "steps": "number of analysis steps",
}


def _launch_gap_idle(ctx: Context) -> tuple[float, float]:
    """(idle in gaps < LAUNCH_GAP_US, all idle) of the device over the analysis windows."""
    ms, me = busy_intervals(ctx)
    short = total = 0.0
    for w in windows(ctx):
        gap = gap_lengths(ms, me, w.lo, w.hi)
        total += float(gap.sum())
        short += float(gap[gap < LAUNCH_GAP_US].sum())
    return short, total


@fact("launch_summary", key=("path",), fields={"path": "trace file", **SUMMARY_FIELDS})
def launch_summary(ctx: Context) -> list[Row]:
    """One row per trace: short-kernel share, GPU busy and CPU launch time vs GPU kernel time."""
    t = ctx.trace
    g = t.gpu
    kern = window_mask(ctx) & (g.kind == KERNEL)
    if not kern.any():
        return []
    kd = g.dur[kern]
    short = kd < SHORT_KERNEL_US
    L = _launches(ctx)
    runtime = t.runtime.dur[L["idx"]]
    # Launch calls whose kernels were all short (a cudaGraphLaunch of many kernels is not "short").
    short_ids = np.flatnonzero(kern)[short]
    short_launch = np.zeros(len(t.runtime), dtype=bool)
    sl = g.launch[short_ids]
    short_launch[sl[sl != NONE]] = True
    short_rt = float(t.runtime.dur[L["idx"]][short_launch[L["idx"]]].sum())
    # Without steps the plugin's window is the CPU ops' span, start-up included: the share of
    # the GPU's own active span is what fewer launches can change.
    busy = gpu_utilization(ctx) if ctx.steps else None
    window = window_span_us(ctx)
    if busy is None and window:
        ms, me = merge_spans(g.ts, g.dur, kern)
        busy = 100.0 * float((me - ms).sum()) / window
    kernel_time = float(kd.sum())
    rt = t.runtime
    api_kernel = id_table(rt.name, lambda i: is_kernel_launch(t.s(i)), dtype=bool, fill=False)[rt.name[L["idx"]] + 1] if len(rt) else np.zeros(0, bool)
    slow = runtime > SLOW_CALL_US
    klaunch = float(runtime[api_kernel & ~slow].sum())
    gap_idle, all_idle = _launch_gap_idle(ctx)
    rows_ = [r for r in rows(ctx, "launch_groups") if is_kernel_launch(r["api"])]
    by_op: dict[tuple[str, str], list[float]] = {}
    for r in rows_:
        acc = by_op.setdefault((r["op"] or "(no op)", r["api"]), [0, 0.0])
        acc[0] += r["count"] - r["slow_calls"]
        acc[1] += r["runtime_us"] - r["slow_call_us"]
    top = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:3]
    return [
        {
            "path": t.path,
            "kernel_count": int(kern.sum()),
            "short_kernels": int(short.sum()),
            "short_kernel_us": SHORT_KERNEL_US,
            "short_kernel_pct": 100.0 * float(short.mean()),
            "kernel_time_us": kernel_time,
            "gpu_time_us": float(L["gpu_time"].sum()),
            "launch_count": len(L["idx"]),
            "launch_runtime_us": float(runtime.sum()),
            "short_launch_runtime_us": short_rt,
            "launch_to_gpu_ratio": float(runtime.sum()) / kernel_time if kernel_time else None,
            "gpu_busy_pct": busy,
            "window_us": window,
            "idle_us": window * (1.0 - busy / 100.0) if window and busy is not None else None,
            "top_launch_ops": [f"{op} ({api}) {int(n)} calls, {fmt_duration(us)}" for (op, api), (n, us) in top if n > 0],
            "window": "the step" if ctx.steps else "the GPU's active span (no step markers)",
            "kernel_launch_runtime_us": klaunch,
            "slow_launch_calls": int((api_kernel & slow).sum()),
            "launch_gap_idle_us": gap_idle,
            "launch_gap_idle_pct": 100.0 * gap_idle / all_idle if all_idle > 0 else None,
            "launch_bound_us": min(klaunch, gap_idle),
            "steps": len(ctx.steps),
        }
    ]
