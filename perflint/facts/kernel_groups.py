"""`kernel_groups`: GPU kernels grouped per top-level op x op x kernel x input shapes."""

from __future__ import annotations

import numpy as np

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import kernel_op, kernel_row_dtype, op_infos, primary_device, window_mask, window_us
from perflint.facts._group import Groups, dense_ids
from perflint.ids import rows_of
from perflint.kernelnames.classify import classify_kernel
from perflint.metrics.kernel_classes import CATEGORIES, classify, trace_vendor
from perflint.model import KERNEL, NONE

FIELDS: Fields = {
    "kernel": typed("kernel name", "text"),
    "category": typed("kernel category (gemm, conv, attention, elementwise, ...)", "text"),
    "tensor_cores": typed("true/false for matrix kernels by the name table, null otherwise", "bool"),
    "dtype": typed("compute dtype (kernel name, else the launching op's first floating input)", "text"),
    "op": typed("bottom-level op that launched the kernel", "text"),
    "top_level_op": typed("outermost op on the launch stack", "text"),
    "op_stack": typed("ops from outermost to innermost", "list"),
    "input_dims": typed("Input Dims of the op that describes the work", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "is_backward": "launched from a backward (autograd) op",
    "count": typed("launches in the analysis steps", "integer"),
    "time_us": "total kernel time",
    "mean_us": "mean kernel time",
    "share_pct": "share of all kernel time",
    "step_share_pct": "share of the analysis steps' time (null without steps)",
    "grid": typed("grid dims [x, y, z] of the longest launch", "list"),
    "block": typed("block dims of the longest launch", "list"),
    "threads_per_block": typed("block x*y*z", "integer"),
    "blocks": typed("grid x*y*z", "integer"),
    "blocks_per_sm": typed("time-weighted mean blocks per SM (null if not recorded)", "number"),
    "occupancy_pct": "time-weighted est. achieved occupancy % (null if not recorded)",
    "registers": typed("registers per thread", "integer"),
    "shared_memory": typed("shared memory bytes per block", "integer"),
    "sm_count": typed("SMs on the device", "integer"),
    "compute_capability": typed("major*10+minor for NVIDIA devices", "integer"),
    "vendor": typed("nvidia | amd | mtia | unknown", "text"),
    "steps": typed("number of analysis steps", "integer"),
    "window_share_pct": "share of the analysed time (the steps' windows, else the whole trace)",
    "library": typed("library whose naming convention identified the kernel (cublas, cudnn, cutlass, triton, ...; '' unknown)", "text"),
    "helper": typed("a library helper beside matrix kernels (split-K reduction, workspace initialisation)", "bool"),
    "layout_conversion": typed("the kernel converts tensors between NCHW and NHWC (by its function name)", "bool"),
    "kernel_row": typed("the classification table row that decided the kernel's category", "text"),
}


def _weighted_mean(x: np.ndarray, w: np.ndarray, w_sum: float, count: int) -> float | None:
    """The `w`-weighted mean of a group's column `x` with NaNs skipped, as `(x[ok] * w[ok]).sum()
    / w[ok].sum()` computes it (None without weight). A group without NaN reuses its time sum
    `w_sum` (the same pairwise sum of the same values)."""
    ok = ~np.isnan(x)
    kept = int(np.count_nonzero(ok))
    if kept == count:
        return None if w_sum <= 0 else float((x * w).sum() / w_sum)
    if kept == 0:
        return None
    ws = w[ok].sum()
    if ws <= 0:
        return None
    return float((x[ok] * w[ok]).sum() / ws)


def _prod(dims: list[int]) -> int:
    """np.prod of a list of ints (int64, wrapping as numpy does)."""
    p = 1
    for d in dims:
        p *= d
    return (p + 2**63) % 2**64 - 2**63


@fact("kernel_groups", key=("top_level_op", "op", "kernel", "input_dims"), fields=FIELDS)
def kernel_groups(ctx: Context) -> list[Row]:
    """Kernels launched in the analysis steps, grouped per op x kernel x shapes (never per launch)."""
    t = ctx.trace
    g = t.gpu
    sel = rows_of(window_mask(ctx) & (g.kind == KERNEL))
    if len(sel) == 0:
        return []
    total = float(g.dur[sel].sum())
    span = window_us(ctx)
    vendor = trace_vendor(t)
    cls = classify(t)
    dev = primary_device(ctx)
    # Group on (op's names + shapes, kernel name): the op side is resolved once per distinct info.
    iid, infos = op_infos(ctx, kernel_op(t, sel))
    if len(infos) == 1:  # one launch site (a trace without CPU ops): the kernel name alone
        del iid
        groups = Groups(g.name[sel])
        firsts = [0] * len(groups)
    else:
        site, _ = dense_ids(
            (info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None, repr(info.dims)) for info in infos
        )
        groups = Groups(site.astype(np.int32)[iid], g.name[sel])
        firsts = iid[groups.first].tolist()
        del iid
    names = g.name[sel[groups.first]].tolist()
    grouped = sel[groups.order]  # trace rows, grouped, in launch order inside each group
    counts, slices = groups.counts.tolist(), groups.slices()
    del sel, groups
    cc = (
        dev.compute_capability[0] * 10 + dev.compute_capability[1]
        if dev and dev.compute_capability and dev.vendor == "nvidia"
        else None
    )
    rows: list[Row] = []
    for gi, sl in enumerate(slices):
        # Each group's rows gathered on their own: no grouped copy of every kernel's columns.
        r = grouped[sl]
        dur = g.dur[r]
        longest = int(r[int(np.argmax(dur))])  # its first longest launch (the first NaN, if any)
        bps = g.blocks_per_sm[r]
        occ = g.occupancy[r]  # a gathered copy: ours to mark
        # Kineto writes 0 when its occupancy query failed (e.g. > 48 KB shared memory) even though
        # blocks ran: unknown, not zero.
        occ[(occ == 0) & (bps > 0)] = np.nan
        info = infos[firsts[gi]]
        kname = t.s(names[gi])
        grid, block = g.grid[longest].tolist(), g.block[longest].tolist()
        dur_sum = dur.sum()
        time_us = float(dur_sum)
        tc = int(cls.tensor_core[longest])
        count = counts[gi]
        kc = classify_kernel(kname, vendor)
        rows.append(
            {
                "_gpu": r,  # the group's GPU rows, for the step model's what-if of its fix
                "kernel": kname,
                "category": CATEGORIES[int(cls.category[longest])],
                "tensor_cores": None if tc < 0 else bool(tc),
                "dtype": kernel_row_dtype(t, info, kname),
                "op": info.stack[-1] if info.stack else None,
                "top_level_op": info.stack[0] if info.stack else None,
                "op_stack": list(info.stack),
                "input_dims": info.dims,
                "source": info.source,
                "is_backward": info.is_backward,
                "count": count,
                "time_us": time_us,
                "mean_us": time_us / count,
                "share_pct": 100.0 * time_us / total if total else 0.0,
                "step_share_pct": 100.0 * time_us / span if span and ctx.steps else None,
                "grid": grid if any(grid) else None,
                "block": block if any(block) else None,
                "threads_per_block": _prod(block) if any(block) else None,
                "blocks": _prod(grid) if any(grid) else None,
                "blocks_per_sm": _weighted_mean(bps, dur, dur_sum, count),
                "occupancy_pct": _weighted_mean(occ, dur, dur_sum, count),
                "registers": int(g.regs[longest]) if g.regs[longest] != NONE else None,
                "shared_memory": int(g.shmem[longest]) if g.shmem[longest] != NONE else None,
                "sm_count": dev.sm_count if dev else None,
                "compute_capability": cc,
                "vendor": dev.vendor if dev else "unknown",
                "steps": len(ctx.steps),
                "window_share_pct": 100.0 * time_us / span if span else None,
                "library": kc.library,
                "helper": kc.helper,
                "layout_conversion": kc.layout_conversion,
                "kernel_row": kc.row,
            }
        )
    rows.sort(key=lambda r: -r["time_us"])
    return rows
