"""`perflint summary`: the per-trace metrics object (keys documented in the README)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.graph.build import top_ops, top_ops_of
from perflint.ids import unique_inverse
from perflint.metrics.inductor import inductor_view
from perflint.metrics.kernel_classes import CATEGORIES, SYNC_CATEGORY, classify
from perflint.metrics.kernel_view import kernel_view
from perflint.metrics.memory import memory_rows
from perflint.metrics.tb_gpu import gpu_summary
from perflint.metrics.temporal import temporal_breakdown
from perflint.metrics.tensor_cores import tensor_core_summary
from perflint.model import KERNEL, MEMCPY, MEMSET, NONE, Trace
from perflint.stepmodel import StepModel, step_model
from perflint.stepmodel.comm_table import comms
from perflint.stepmodel.critical import LABELS, runs

TOP_KERNELS = 10


def top_level_op(trace: Trace, gpu_row: int) -> int:
    r = int(trace.gpu.launch[gpu_row])
    if r == NONE:
        return NONE
    op = int(trace.runtime.op[r])
    if op == NONE:
        return NONE
    return int(top_ops(trace)[op])


def top_level_ops(trace: Trace, gpu_rows: np.ndarray) -> np.ndarray:
    """`top_level_op` of many GPU rows at once (int64, NONE where unlinked)."""
    out = np.full(len(gpu_rows), NONE, dtype=np.int64)
    r = trace.gpu.launch[gpu_rows]
    ok = np.flatnonzero(r != NONE)
    op = trace.runtime.op[r[ok]]
    has = op != NONE
    out[ok[has]] = top_ops_of(trace, op[has])
    return out


def by_category(trace: Trace) -> dict[str, dict[str, float]]:
    """GPU time per kernel category over the whole trace (the kernel table's, as `perflint
    kernels` lists it); the analysed steps' own split is the step model's."""
    g = trace.gpu
    cats = classify(trace).category
    work = cats != SYNC_CATEGORY
    return _split(np.bincount(cats[work].astype(np.int64), weights=g.dur[work], minlength=len(CATEGORIES)).tolist())


def _split(sums: list[float]) -> dict[str, dict[str, float]]:
    total = float(sum(sums))
    return {c: {"time_us": round(float(sums[i]), 3), "pct": round(100.0 * float(sums[i]) / total, 3) if total else 0.0} for i, c in enumerate(CATEGORIES)}


def top_kernels(trace: Trace, limit: int = TOP_KERNELS) -> list[dict[str, Any]]:
    g = trace.gpu
    kern = np.flatnonzero(g.kind == KERNEL)
    if len(kern) == 0:
        return []
    names, inverse = unique_inverse(g.name[kern])
    totals = np.bincount(inverse, weights=g.dur[kern])
    counts = np.bincount(inverse)
    order = np.argsort(-totals, kind="stable")[:limit]
    out = []
    for u in order.tolist():
        rows = kern[inverse == u]
        # The op that launched most of this kernel's time names it. bincount adds the durations in
        # row order, as a Python loop would (same float result); ties go to the first op seen.
        tops, first, tinv = np.unique(top_level_ops(trace, rows), return_index=True, return_inverse=True)
        sums = np.bincount(tinv.reshape(-1), weights=g.dur[rows], minlength=len(tops))
        if np.isnan(sums).any():  # max() over NaNs depends on visiting order: visit as the loop did
            by_top = {int(tops[i]): float(sums[i]) for i in np.argsort(first, kind="stable").tolist()}
            best = max(by_top, key=lambda k: by_top[k])
        else:
            tied = np.flatnonzero(sums == sums.max())
            best = int(tops[tied[np.argmin(first[tied])]])
        out.append(
            {
                "name": trace.s(int(names[u])),
                "top_level_op": trace.s(int(trace.ops.name[best])) if best != NONE else None,
                "count": int(counts[u]),
                "total_us": round(float(totals[u]), 3),
                "mean_us": round(float(totals[u]) / int(counts[u]), 3),
            }
        )
    return out


def transfers(trace: Trace, kind: int) -> dict[str, Any]:
    """Count, summed duration and bytes of the memcpy (or memset) activities: whole trace."""
    g = trace.gpu
    rows = g.kind == kind
    return {"count": int(rows.sum()), "time_us": round(float(g.dur[rows].sum()), 3), "bytes": int(g.nbytes[rows].sum())}


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


def _memory(trace: Trace) -> dict[str, Any] | None:
    """Peak device memory: the highest over the trace's GPUs, and each GPU's row."""
    rows = memory_rows(trace)
    if not rows:
        return None
    keys = ("device_id", "device", "peak_allocated_bytes", "peak_reserved_bytes", "device_memory_bytes", "peak_pct", "exact")
    devices = [{k: (_r(r[k]) if k == "peak_pct" else r[k]) for k in keys} for r in rows]
    return {"peak_allocated_bytes": max(r["peak_allocated_bytes"] for r in rows), "devices": devices}


def add_views(trace: Trace, out: dict[str, Any]) -> None:
    """The views only `perflint summary` shows (a check does not pay for them): the kernel view,
    the Inductor view and peak memory. Peak memory is null with the reason in `warnings` when the
    trace did not record it; the Inductor view is null without Inductor kernels, which an eager run
    has none of: nothing is missing, so nothing to warn about."""
    out["kernel_view"] = kernel_view(trace)
    out["inductor"] = inductor_view(trace)
    out["memory"] = _memory(trace)
    if out["memory"] is None:
        out["warnings"].append(f"the trace has no device {trace.recorded('memory')}: memory is null")


def null_reasons(trace: Trace, out: dict[str, Any]) -> list[str]:
    """Why each headline number of `out` is null, in the trace's profiler's words: one line per
    group, unless a reader's warning already names the key."""
    said = " ".join(trace.warnings)
    kernels = bool(out["kernels"]["count"])
    comm_only = kernels and not any(v["time_us"] for c, v in out["kernels"]["by_category"].items() if c != "communication")
    reasons: list[tuple[str, bool, str]] = [
        ("device.name", out["device"]["name"] is None, f"the trace has no {trace.recorded('device')}: device.* are null"),
        ("steps.median_us", out["steps"]["median_us"] is None, f"the trace has no {trace.recorded('steps')}: steps.median_us and steps.breakdown are null"),
        (
            "gpu.utilization_pct",
            kernels and out["gpu"]["utilization_pct"] is None,
            "the trace records only communication, no compute kernels (no kernel or op timeline): gpu.utilization_pct and temporal.* are null"
            if comm_only
            else "no step or CPU-op window to measure the GPU's busy time in: gpu.utilization_pct is null",
        ),
        (
            "gpu.sm_efficiency_pct",
            kernels and out["gpu"]["sm_efficiency_pct"] is None,
            "no kernel records its blocks per SM (launch grid and the device's SM count): gpu.sm_efficiency_pct is null",
        ),
        (
            "gpu.achieved_occupancy_pct",
            kernels and out["gpu"]["achieved_occupancy_pct"] is None,
            "no kernel records an achieved-occupancy estimate: gpu.achieved_occupancy_pct is null",
        ),
    ]
    return [why for key, null, why in reasons if null and key.split(".")[-1] not in said]


# The phases of a step where the format records them (MindSpore's step trace).
PHASES = ("iteration_interval_us", "fp_bp_us", "tail_us")


def _phases(trace: Trace, m: StepModel) -> dict[str, Any]:
    """{'phases': mean per phase over the analysis steps the step time covers} where the trace
    records its steps' phases (`meta["step_phases"]`), else nothing."""
    ph = trace.meta.get("step_phases")
    if not isinstance(ph, dict) or "step" not in ph or not m.window.has_steps:
        return {}
    at = {int(n): i for i, n in enumerate(ph["step"])}
    idx = [at[s.number] for s in m.window.timed_steps if s.number is not None and s.number in at]
    if not idx:
        return {}
    return {"phases": {"steps": len(idx), **{k: _r(float(np.mean([ph[k][i] for i in idx]))) for k in PHASES}}}


def window_summary(m: StepModel) -> dict[str, Any]:
    """The analysis window as `summary --format json` gives it under step_model.window."""
    w = m.window
    return {
        "kind": w.kind,
        "source": w.source,
        "start_us": _r(w.start_us),
        "end_us": _r(w.end_us),
        "us": _r(w.us),
        "steps": [{"step": s.number, "start_us": _r(s.lo), "end_us": _r(s.hi), "us": _r(s.us)} for s in w.steps] if w.has_steps else [],
        # First and last step the op and kernel events cover where the step markers run longer:
        # `steps` (the op-level numbers' steps) are those; the step count and median cover all.
        "op_steps": list(w.covered) if w.covered else None,
    }


def bound_summary(m: StepModel) -> dict[str, Any]:
    """What bounds the median step: time per category along its critical path (the pcts add up
    to 100), how close the replay comes to the measured steps, and the path itself."""
    bound = m.bound_by()
    total = sum(us for _, us in bound)
    median = m.steps[m.median_index] if m.steps else None
    path = m.critical_path()
    listed, n_runs = runs(m.trace, path) if path is not None else ([], 0)
    return {
        "median_step": median.number if median is not None and m.window.has_steps else None,
        "bound_by": [{"category": c, "label": LABELS[c], "us": _r(us), "pct": _r(100.0 * us / total)} for c, us in bound] if total > 0 else [],
        "replay_error_pct": _r(m.replay_error_pct),
        "replay_notes": list(m.replay_notes),
        "critical_path": [
            {
                "lane": r.lane, "start_us": _r(r.start), "end_us": _r(r.end), "category": r.category,
                "categories": {c: _r(us) for c, us in r.categories.items()}, "name": r.name, "pieces": r.pieces,
            }
            for r in listed
        ],  # fmt: skip
        # The path's time span (replayed clock) and how many runs it has: a long path lists only
        # its longest runs.
        "critical_path_span_us": [_r(float(path.start[0])), _r(float(path.end[-1]))] if path is not None and len(path) else None,
        "critical_path_runs": n_runs,
        # What ran on each lane meanwhile (merged, replayed times), for the picture of the path.
        "lanes": [{"lane": name, "busy": [[_r(a), _r(b)] for a, b in iv]} for name, iv in m.lanes()],
    }


def summarize(trace: Trace, include_edge_steps: bool = False) -> dict[str, Any]:
    """The trace's headline numbers, made once per trace and window (`summary` and `check` of one
    trace share them)."""
    return trace.memo.keyed(_summarize, trace, include_edge_steps)


def _summarize(trace: Trace, include_edge_steps: bool) -> dict[str, Any]:
    m = step_model(trace, include_edge_steps)
    dev = trace.primary_device
    # The plugin's SM efficiency and occupancy formulas over the model's window; utilization is
    # the model's busy % (the same formula, one definition).
    gpu = gpu_summary(trace, [(s.lo, s.hi) for s in m.steps])
    gpu["utilization_pct"] = m.busy_pct
    warnings = list(trace.warnings)
    out = {
        "path": trace.path,
        "rank": trace.rank,
        "device": {
            "name": dev.name if dev and dev.name else None,
            "vendor": dev.vendor if dev else None,
            "sm_count": dev.sm_count if dev else None,
            "compute_capability": dev.cc_str if dev and dev.vendor == "nvidia" else None,
        },
        "steps": {
            "count": len(m.window.timed_steps) if m.window.has_steps else 0,
            "median_us": _r(m.median_step_us),
            "excluded_edges": m.window.edges_excluded,
            **_phases(trace, m),
        },
        "gpu": {k: _r(v) for k, v in gpu.items()},
        "temporal": {k: _r(v) for k, v in m.temporal().items()},
        "kernels": {
            "count": int((trace.gpu.kind == KERNEL).sum()),
            "time_us": round(float(trace.gpu.dur[trace.gpu.kind == KERNEL].sum()), 3),
            "by_category": by_category(trace),
            "top": top_kernels(trace),
        },
        "memcpy": transfers(trace, MEMCPY),
        "memset": transfers(trace, MEMSET),
        "tensor_cores": tensor_core_summary(trace),
        "communication": None,
        "step_model": {
            "window": window_summary(m),
            "categories": _split(list(m.category_us().values())),
            **bound_summary(m),
        },
        "compat": {
            "tensorboard": {k: _r(v) for k, v in gpu_summary(trace).items()},
            "hta": {k: _r(v) for k, v in temporal_breakdown(trace).items()},
        },
        "warnings": warnings,
    }
    warnings.extend(null_reasons(trace, out))
    warnings.extend(m.replay_notes)
    # The per-collective table, and its rows for the run-level join of ranks (perflint.stepmodel.join),
    # which takes them out of the summary and fills the table's waits (comm_table.add_waits).
    out["communication"], out["_collectives"] = comms(m)
    return out
