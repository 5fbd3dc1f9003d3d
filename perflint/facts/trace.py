"""`trace`: one row per trace (rank) with headline numbers. It is also each trace's `rank_row`
for run-level (multi-rank) rules; other modules add fields to it with `@enricher("trace", ...)`."""

from __future__ import annotations

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import gpu_busy_pct, model, window_mask
from perflint.metrics.temporal import temporal_breakdown
from perflint.model import KERNEL

FIELDS: Fields = {
    "path": typed("trace file", "text"),
    "rank": typed("rank (distributedInfo or file name)", "integer"),
    "device": typed("device name", "text"),
    "sm_count": typed("SMs on the device", "integer"),
    "steps": typed("analysis steps (warm-up and last excluded): those the op and kernel events cover", "integer"),
    "timed_steps": typed("steps step time covers: every step marker's (warm-up and last excluded), also where the op events cover fewer than 'steps'", "integer"),
    "step_median_us": "median analysis-step duration (its window: CPU start to the end of the GPU work it launched)",
    "steps_time_us": "total analysis-step time (their windows)",
    "kernel_time_us": "kernel time launched in the analysis steps",
    "kernel_count": typed("kernels launched in the analysis steps", "integer"),
    "gpu_utilization_pct": "GPU busy %: merged kernel time / window time over the analysis steps (the whole trace without steps)",
    "idle_pct": "HTA temporal breakdown idle %",
    "has_steps": "the trace has ProfilerStep markers",
    "recorded_steps": typed("ProfilerStep markers in the trace (analysis steps leave out the first and last when there are 3 or more)", "integer"),
    "has_device_properties": "the trace has deviceProperties",
    "has_input_dims": "some op recorded Input Dims",
    "has_gpu_kernels": "the trace has kernel events besides communication (a step trace's collective spans alone are not a kernel timeline)",
    "steps_what": typed("what the trace's profiler calls its step markers", "text"),
    "steps_fix": typed("how to record step markers with the trace's profiler", "text"),
    "shapes_what": typed("what the trace's profiler calls operator input shapes", "text"),
    "shapes_fix": typed("how to record input shapes with the trace's profiler", "text"),
    "device_what": typed("what the trace's profiler calls the device's properties", "text"),
    "device_fix": typed("how to record the device's properties with the trace's profiler", "text"),
}


@fact("trace", key=("rank",), fields=FIELDS)
def trace_row(ctx: Context) -> list[Row]:
    """One row of whole-trace numbers."""
    t = ctx.trace
    g = t.gpu
    kern = window_mask(ctx) & (g.kind == KERNEL)
    dev = t.primary_device
    m = model(ctx)
    return [
        {
            "path": t.path,
            "rank": t.rank,
            "device": dev.name if dev else None,
            "sm_count": dev.sm_count if dev else None,
            "steps": len(ctx.steps),
            "timed_steps": len(m.window.timed_steps) if m.window.has_steps else 0,
            "step_median_us": m.median_step_us,
            "steps_time_us": m.window_us if m.window.has_steps else None,
            "kernel_time_us": float(g.dur[kern].sum()),
            "kernel_count": int(kern.sum()),
            "gpu_utilization_pct": gpu_busy_pct(ctx),
            "idle_pct": temporal_breakdown(t)["idle_pct"],
            "has_steps": bool(t.steps),
            "recorded_steps": len(t.steps),
            "has_device_properties": bool(t.devices),
            "has_input_dims": bool((t.ops.dims >= 0).any()),
            "has_gpu_kernels": bool((g.kind == KERNEL).any()) and m.records_compute,
            "steps_what": t.recorded("steps"),
            "steps_fix": t.recorded("steps_fix"),
            "shapes_what": t.recorded("shapes"),
            "shapes_fix": t.recorded("shapes_fix"),
            "device_what": t.recorded("device"),
            "device_fix": t.recorded("device_fix"),
        }
    ]
