"""Per-kernel context shared by fact sources: analysis window, launching op, shapes, dtype.

The op side (OpInfo, op_info, op_infos) lives in `_optree` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from perflint.facts import Context
from perflint.facts._group import present_ids
from perflint.facts._optree import OpInfo as OpInfo  # these three re-exported
from perflint.facts._optree import op_info as op_info
from perflint.facts._optree import op_infos as op_infos
from perflint.ids import isin_ids
from perflint.memo import once
from perflint.metrics import dtypes
from perflint.metrics.steps import clipped, launch_ts, step_of
from perflint.metrics.tb_gpu import gpu_summary
from perflint.model import GPU_SYNC, NONE, Device, Trace


@once
def window_mask(ctx: Context) -> np.ndarray:
    """GPU rows launched inside the analysis steps (all rows when the trace has no steps)."""
    t = ctx.trace
    got: np.ndarray = t.gpu.kind != GPU_SYNC
    if ctx.steps:
        got = got & (step_of(t, ctx.steps, launch_ts(t)) >= 0)
    return got


def steps_time_us(ctx: Context) -> float:
    """Analysis-step CPU time, each step cut to what the trace recorded."""
    t = ctx.trace
    return float(sum(b - a for a, b in (clipped(t, s.ts, s.end) for s in ctx.steps)))


@once
def gpu_utilization(ctx: Context) -> float | None:
    """TensorBoard-plugin GPU utilization (`gpu_summary`), once per context: several sources
    report it."""
    return gpu_summary(ctx.trace)["utilization_pct"]


@once
def primary_device(ctx: Context) -> Device | None:
    """`trace.primary_device` once per context (it counts kernels per device each time)."""
    return ctx.trace.primary_device


def kernel_op(t: Trace, rows: np.ndarray | None = None) -> np.ndarray:
    """Launching (bottom-level) op of each GPU row (of the GPU rows `rows` only, when given),
    NONE when unlinked."""
    launch = t.gpu.launch if rows is None else t.gpu.launch[rows]
    out = np.full(len(launch), NONE, dtype=np.int32)
    linked = launch != NONE
    out[linked] = t.runtime.op[launch[linked]]
    return out


def ops_named(t: Trace, test: Callable[[str], bool]) -> np.ndarray:
    """Indices of the ops whose name passes `test`, once per trace and test: the test runs once
    per distinct name."""
    return t.memo.keyed(_ops_named, t, test)


def _ops_named(t: Trace, test: Callable[[str], bool]) -> np.ndarray:
    hit = [i for i in present_ids(t.ops.name) if test(t.strings[i])]
    return np.flatnonzero(isin_ids(t.ops.name, hit)) if hit else np.zeros(0, dtype=np.int64)


def kernel_row_dtype(t: Trace, info: OpInfo, kernel_name: str) -> str | None:
    """Kernel name first (it is what ran: an fp32 op may run a tf32 kernel), else the op's dtype."""
    kd = dtypes.kernel_dtype(kernel_name)
    if kd is not None:
        return kd
    return info.dtype
