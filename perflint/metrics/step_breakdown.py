"""The TensorBoard profiler plugin's step-time breakdown ("Execution Summary"): each step's time
split into kernel, memcpy, memset, communication, runtime, dataloader, cpu_exec and other
(formula: docs/metrics.md, "steps.breakdown").

Every role is the union of its events' intervals. Inside a step, time goes to the first role, in
the order above, whose union covers it; time no role covers is `other`. The steps are the plugin's
(`tb_gpu.tb_steps`: ProfilerSteps extended to the device work they launched, an incomplete tail
dropped), all of them: the plugin keeps the warm-up step, and so does this breakdown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.ids import isin_ids
from perflint.metrics.intervals import covered_before, merge
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.metrics.tb_gpu import tb_steps
from perflint.model import KERNEL, MEMCPY, MEMSET, Trace

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")
PARTS = ROLES + ("other",)
# The plugin's host-side collectives (its NcclOpNameSet and GlooOpNameSet).
HOST_COLLECTIVES = frozenset(
    f"{lib}:{op}" for lib in ("nccl", "gloo") for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
)


def _is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or name.startswith(
        "enumerate(DataPipe)#"
    )


def _names_where(trace: Trace, col: np.ndarray, pred: Any) -> np.ndarray:
    """Rows of an op-name column whose name satisfies `pred`: the test runs once per distinct name."""
    if len(col) == 0:
        return np.zeros(0, dtype=bool)
    ids = np.unique(col)
    hits = [int(s) for s in ids.tolist() if pred(trace.s(int(s)))]
    return isin_ids(col, hits) if hits else np.zeros(len(col), dtype=bool)


def role_intervals(trace: Trace) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per role (in ROLES order): the start and end of each interval that counts for it."""
    g, ops, rt = trace.gpu, trace.ops, trace.runtime
    g_end = g.ts + g.dur
    comm_kernel = (g.kind == KERNEL) & (classify(trace).category == CAT_INDEX["communication"])
    markers = np.zeros(len(ops), dtype=bool)
    markers[[s.op for s in trace.steps]] = True
    host_comm = _names_where(trace, ops.name, HOST_COLLECTIVES.__contains__)
    loader = _names_where(trace, ops.name, _is_dataloader)
    o_end = ops.ts + ops.dur
    masks = {
        "kernel": (g.kind == KERNEL) & ~comm_kernel,
        "memcpy": g.kind == MEMCPY,
        "memset": g.kind == MEMSET,
    }
    out = [(g.ts[m], g_end[m]) for m in masks.values()]
    cpu = ~markers & ~host_comm & ~loader
    out.append((np.concatenate((g.ts[comm_kernel], ops.ts[host_comm & ~markers])),
                np.concatenate((g_end[comm_kernel], o_end[host_comm & ~markers]))))
    out.append((rt.ts, rt.ts + rt.dur))
    out.append((ops.ts[loader & ~markers], o_end[loader & ~markers]))
    out.append((ops.ts[cpu], o_end[cpu]))
    return out


def step_breakdown(trace: Trace) -> tuple[dict[str, Any] | None, str | None]:
    """The breakdown per plugin step and averaged over them; (None, why) without ProfilerSteps."""
    if not trace.steps:
        return None, "no ProfilerStep#N markers: the step-time breakdown needs steps"
    steps = tb_steps(trace)
    if steps is None:  # steps exist, so the plugin's steps do too; kept for the type
        return None, "no ProfilerStep#N markers: the step-time breakdown needs steps"
    s0, s1 = steps
    names = [st.number for st in trace.steps[: len(s0)]]
    total = s1 - s0
    # Time claimed by roles 0..r inside each step; role r's cost is the growth from r-1 to r.
    claimed_prev = np.zeros(len(s0))
    acc_s, acc_e = np.zeros(0), np.zeros(0)
    costs: dict[str, np.ndarray] = {}
    for role, (a, b) in zip(ROLES, role_intervals(trace)):
        ra, rb = merge(a, b)  # each role merged on its own first: the union then sorts fewer intervals
        acc_s, acc_e = merge(np.concatenate((acc_s, ra)), np.concatenate((acc_e, rb)))
        claimed = covered_before(acc_s, acc_e, s1) - covered_before(acc_s, acc_e, s0)
        costs[role] = np.maximum(claimed - claimed_prev, 0.0)
        claimed_prev = claimed
    costs["other"] = np.maximum(total - claimed_prev, 0.0)
    per_step = []
    for i, number in enumerate(names):
        t = float(total[i])
        row: dict[str, Any] = {"step": number, "start_us": round(float(s0[i]), 3), "total_us": round(t, 3)}
        for p in PARTS:
            us = float(costs[p][i])
            row[p] = {"us": round(us, 3), "pct": round(100.0 * us / t, 3) if t > 0 else 0.0}
        per_step.append(row)
    avg_total = float(total.mean())
    average: dict[str, Any] = {"steps": len(s0), "total_us": round(avg_total, 3)}
    for p in PARTS:
        us = float(costs[p].mean())
        average[p] = {"us": round(us, 3), "pct": round(100.0 * us / avg_total, 3) if avg_total > 0 else 0.0}
    return {"parts": list(PARTS), "steps": per_step, "average": average}, None
