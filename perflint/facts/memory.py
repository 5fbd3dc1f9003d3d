"""`device_memory`: peak allocated device memory per GPU, from the profiler's `[memory]` events.

`profile_memory=True` records one instant event per allocation/free with `Bytes` and, in
PyTorch >= 1.10, the allocator's running `Total Allocated` / `Total Reserved`. The TensorBoard
plugin's memory view plots those totals; its peak is max(Total Allocated). Older traces carry
only `Bytes`: their running sum starts at 0 when profiling starts, so it misses memory held
before (weights, optimizer state) and is reported as a lower bound (`exact: false`).

Only device type 1 (CUDA; ROCm builds report HIP devices as CUDA too) is device memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Row, capability, enricher, fact
from perflint.ids import distinct
from perflint.model import Trace

CUDA = 1  # c10::DeviceType::CUDA

FIELDS = {
    "device_id": "device index (Device Id of the [memory] events)",
    "device": "device name",
    "peak_allocated_bytes": "peak allocated bytes (max Total Allocated; else peak running sum of Bytes)",
    "peak_allocated_gib": "peak_allocated_bytes in GiB",
    "peak_reserved_bytes": "peak reserved (cached) bytes, when recorded",
    "device_memory_bytes": "device memory (deviceProperties totalGlobalMem)",
    "device_memory_gib": "device_memory_bytes in GiB",
    "peak_pct": "peak allocated / device memory, %",
    "exact": "false when the trace has no Total Allocated and the peak is a lower bound from Bytes",
    "events": "[memory] events for this device",
}
GIB = float(1 << 30)


def _gpu_rows(t: Trace) -> np.ndarray:
    m = t.memory
    return np.flatnonzero(m.device_type == CUDA) if len(m) else np.zeros(0, dtype=np.int64)


@capability("gpu_memory_events", "the trace has device (GPU) memory allocation events")
def _gpu_memory(t: Trace) -> str | None:
    if len(_gpu_rows(t)):
        return None
    if len(t.memory):
        return "the trace's [memory] events are all host (CPU) memory"
    return f"the trace has no {t.recorded('memory')} ({t.recorded('memory_hint')})"


def memory_rows(t: Trace) -> list[Row]:
    m = t.memory
    idx = _gpu_rows(t)
    out: list[Row] = []
    for dev_id in distinct(m.device_id[idx]):
        sel = idx[m.device_id[idx] == dev_id]
        alloc = m.total_allocated[sel]
        known = alloc >= 0
        if known.any():
            peak, exact = int(alloc[known].max()), True
        else:
            order = np.argsort(m.ts[sel], kind="stable")
            peak, exact = max(0, int(np.cumsum(m.nbytes[sel][order]).max())), False
        res = m.total_reserved[sel]
        dev = t.device(int(dev_id))
        total = dev.total_memory if dev else None
        out.append(
            {
                "device_id": int(dev_id),
                "device": dev.name if dev else None,
                "peak_allocated_bytes": peak,
                "peak_allocated_gib": peak / GIB,
                "peak_reserved_bytes": int(res.max()) if (res >= 0).any() else None,
                "device_memory_bytes": total,
                "device_memory_gib": total / GIB if total else None,
                "peak_pct": 100.0 * peak / total if total else None,
                "exact": exact,
                "events": len(sel),
            }
        )
    return out


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
