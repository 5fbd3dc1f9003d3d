"""`device_memory`: peak allocated device memory per GPU, from the profiler's `[memory]` events
(computed in metrics.memory, which `perflint summary` reads too)."""

from __future__ import annotations

from typing import Any

from perflint.facts import Context, Fields, Row, capability, enricher, fact, typed
from perflint.metrics.memory import gpu_memory_rows, memory_rows
from perflint.model import Trace

FIELDS: Fields = {
    "device_id": typed("device index (Device Id of the [memory] events)", "integer"),
    "device": typed("device name", "text"),
    "peak_allocated_bytes": "peak allocated bytes (max Total Allocated; else peak running sum of Bytes)",
    "peak_allocated_gib": "peak_allocated_bytes in GiB",
    "peak_reserved_bytes": "peak reserved (cached) bytes, when recorded",
    "device_memory_bytes": "device memory (deviceProperties totalGlobalMem)",
    "device_memory_gib": "device_memory_bytes in GiB",
    "peak_pct": "peak allocated / device memory, %",
    "exact": typed("false when the trace has no Total Allocated and the peak is a lower bound from Bytes", "bool"),
    "events": typed("[memory] events for this device", "integer"),
}


@capability("gpu_memory_events", "the trace has device (GPU) memory allocation events")
def _gpu_memory(t: Trace) -> str | None:
    if len(gpu_memory_rows(t)):
        return None
    if len(t.memory):
        return "the trace's [memory] events are all host (CPU) memory"
    return f"the trace has no {t.recorded('memory')} ({t.recorded('memory_hint')})"


@fact("device_memory", key=("device_id",), fields=FIELDS)
def device_memory(ctx: Context) -> list[Row]:
    """One row per GPU with [memory] events: its peak allocated memory vs its capacity."""
    return [dict(r) for r in ctx.trace.memo.get(memory_rows, ctx.trace)]


TRACE_FIELDS = {"peak_memory_pct": "highest peak allocated / device memory over the trace's GPUs, %"}


@enricher("trace", fields=TRACE_FIELDS)
def _enrich(ctx: Context, row: Row) -> dict[str, Any]:
    got = ctx.trace.memo.get(memory_rows, ctx.trace)
    pcts = [r["peak_pct"] for r in got if r["peak_pct"] is not None]
    return {"peak_memory_pct": max(pcts) if pcts else None}
