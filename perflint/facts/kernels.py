"""`kernel_groups`: GPU kernels grouped per top-level op x op x kernel x input shapes."""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Row, fact
from perflint.facts._common import kernel_op, kernel_row_dtype, op_info, steps_time_us, window_mask
from perflint.metrics.kernels import CATEGORIES, classify
from perflint.model import KERNEL, NONE

FIELDS = {
    "kernel": "kernel name",
    "category": "kernel category (gemm, conv, attention, elementwise, ...)",
    "tensor_cores": "true/false for matrix kernels by the name table, null otherwise",
    "dtype": "compute dtype (kernel name, else the launching op's first floating input)",
    "op": "bottom-level op that launched the kernel",
    "top_level_op": "outermost op on the launch stack",
    "op_stack": "ops from outermost to innermost",
    "input_dims": "Input Dims of the op that describes the work",
    "source": "user's file:line, when stacks were recorded",
    "is_backward": "launched from a backward (autograd) op",
    "count": "launches in the analysis steps",
    "time_us": "total kernel time",
    "mean_us": "mean kernel time",
    "share_pct": "share of all kernel time",
    "step_share_pct": "share of total step time",
    "grid": "grid dims [x, y, z] of the longest launch",
    "block": "block dims of the longest launch",
    "threads_per_block": "block x*y*z",
    "blocks": "grid x*y*z",
    "blocks_per_sm": "time-weighted mean blocks per SM (null if not recorded)",
    "occupancy_pct": "time-weighted est. achieved occupancy % (null if not recorded)",
    "registers": "registers per thread",
    "shared_memory": "shared memory bytes per block",
    "sm_count": "SMs on the device",
    "compute_capability": "major*10+minor for NVIDIA devices",
    "vendor": "nvidia | amd | unknown",
    "steps": "number of analysis steps",
}


def _wmean(x: np.ndarray, w: np.ndarray) -> float | None:
    ok = ~np.isnan(x)
    if not ok.any() or w[ok].sum() <= 0:
        return None
    return float((x[ok] * w[ok]).sum() / w[ok].sum())


@fact("kernel_groups", key=("top_level_op", "op", "kernel", "input_dims"), fields=FIELDS)
def kernel_groups(ctx: Context) -> list[Row]:
    """Kernels launched in the analysis steps, grouped per op x kernel x shapes (never per launch)."""
    t = ctx.trace
    g = t.gpu
    sel = np.flatnonzero(window_mask(ctx) & (g.kind == KERNEL))
    if len(sel) == 0:
        return []
    total = float(g.dur[sel].sum())
    step_time = steps_time_us(ctx)
    kop = kernel_op(t)[sel]
    cls = classify(t)
    dev = t.primary_device
    # group on (op index's info key, kernel name): shapes come from the op, so op identity
    # is resolved to names + dims first.
    groups: dict[tuple[Any, ...], list[int]] = {}
    info_key: dict[int, tuple[Any, ...]] = {}
    for pos, (row, op) in enumerate(zip(sel.tolist(), kop.tolist())):
        k = info_key.get(op)
        if k is None:
            info = op_info(ctx, op)
            k = (info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None, repr(info.dims), op)
            info_key[op] = k
        key = (k[0], k[1], k[2], int(g.name[row]))
        groups.setdefault(key, []).append(pos)
    rows: list[Row] = []
    for (top, bottom, _dims, name_id), positions in groups.items():
        idx = sel[np.asarray(positions)]
        dur = g.dur[idx]
        first_op = int(kop[positions[0]])
        info = op_info(ctx, first_op)
        longest = int(idx[int(np.argmax(dur))])
        kname = t.s(name_id)
        grid = g.grid[longest].tolist()
        block = g.block[longest].tolist()
        time_us = float(dur.sum())
        tc = int(cls.tensor_core[longest])
        rows.append(
            {
                "kernel": kname,
                "category": CATEGORIES[int(cls.category[longest])],
                "tensor_cores": None if tc < 0 else bool(tc),
                "dtype": kernel_row_dtype(t, info, kname),
                "op": bottom,
                "top_level_op": top,
                "op_stack": list(info.stack),
                "input_dims": info.dims,
                "source": info.source,
                "is_backward": info.is_backward,
                "count": len(idx),
                "time_us": time_us,
                "mean_us": time_us / len(idx),
                "share_pct": 100.0 * time_us / total if total else 0.0,
                "step_share_pct": 100.0 * time_us / step_time if step_time else None,
                "grid": grid if any(grid) else None,
                "block": block if any(block) else None,
                "threads_per_block": int(np.prod(block)) if any(block) else None,
                "blocks": int(np.prod(grid)) if any(grid) else None,
                "blocks_per_sm": _wmean(g.blocks_per_sm[idx], dur),
                # Kineto writes 0 when its occupancy query failed (e.g. > 48 KB shared memory) even
                # though blocks ran: unknown, not zero.
                "occupancy_pct": _wmean(
                    np.where((g.occupancy[idx] == 0) & (g.blocks_per_sm[idx] > 0), np.nan, g.occupancy[idx]), dur
                ),
                "registers": int(g.regs[longest]) if g.regs[longest] != NONE else None,
                "shared_memory": int(g.shmem[longest]) if g.shmem[longest] != NONE else None,
                "sm_count": dev.sm_count if dev else None,
                "compute_capability": (
                    dev.compute_capability[0] * 10 + dev.compute_capability[1]
                    if dev and dev.compute_capability and dev.vendor == "nvidia"
                    else None
                ),
                "vendor": dev.vendor if dev else "unknown",
                "steps": len(ctx.steps),
            }
        )
    rows.sort(key=lambda r: -r["time_us"])
    return rows
