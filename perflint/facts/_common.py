"""Per-kernel context shared by fact sources: analysis window, launching op, shapes, dtype.

The op side (OpInfo, op_info, op_infos) lives in `_optree` and is re-exported here.
"""

from __future__ import annotations

import numpy as np

from perflint.facts import Context
from perflint.facts._optree import OpInfo as OpInfo  # these three re-exported
from perflint.facts._optree import op_info as op_info
from perflint.facts._optree import op_infos as op_infos
from perflint.memo import once
from perflint.metrics import dtypes
from perflint.metrics.steps import launch_ts
from perflint.model import GPU_SYNC, NONE, Device, Trace
from perflint.stepmodel import StepModel, step_at, step_model


def model(ctx: Context) -> StepModel:
    """The context's trace's step model (its window, steps and GPU use), made once per trace."""
    return step_model(ctx.trace, ctx.include_edge_steps)


@once
def window_mask(ctx: Context) -> np.ndarray:
    """GPU rows launched inside the analysis steps (all rows when the trace has no steps)."""
    t = ctx.trace
    m = model(ctx)
    got: np.ndarray = t.gpu.kind != GPU_SYNC
    if m.window.has_steps:
        got = got & (step_at(t, m.window, launch_ts(t)) >= 0)
    return got


def in_steps(ctx: Context, when: np.ndarray) -> np.ndarray:
    """Which of these CPU times fall inside the analysis steps' CPU spans (all without steps)."""
    m = model(ctx)
    if not m.window.has_steps:
        return np.ones(len(when), dtype=bool)
    got: np.ndarray = step_at(ctx.trace, m.window, when) >= 0
    return got


def runtime_in_window(ctx: Context, rows: np.ndarray) -> np.ndarray:
    """Which of these runtime calls were made inside the analysis steps (all without steps)."""
    return in_steps(ctx, ctx.trace.runtime.ts[rows])


def window_us(ctx: Context) -> float | None:
    """The analysed time, the denominator of every 'share of the step': the analysis steps'
    windows added up (the whole recorded trace without steps); None when it is empty."""
    return model(ctx).window_us or None


def gpu_busy_pct(ctx: Context) -> float | None:
    """GPU busy % over the analysed steps (the step model's)."""
    return model(ctx).busy_pct


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


def kernel_row_dtype(t: Trace, info: OpInfo, kernel_name: str) -> str | None:
    """Kernel name first (it is what ran: an fp32 op may run a tf32 kernel), else the op's dtype."""
    kd = dtypes.kernel_dtype(kernel_name)
    if kd is not None:
        return kd
    return info.dtype
