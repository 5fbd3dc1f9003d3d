"""Peak allocated device memory per GPU, from the profiler's `[memory]` events.

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

from perflint.ids import distinct
from perflint.model import Trace

CUDA = 1  # c10::DeviceType::CUDA
GIB = float(1 << 30)


def gpu_memory_rows(t: Trace) -> np.ndarray:
    m = t.memory
    return np.flatnonzero(m.device_type == CUDA) if len(m) else np.zeros(0, dtype=np.int64)


def memory_rows(t: Trace) -> list[dict[str, Any]]:
    m = t.memory
    idx = gpu_memory_rows(t)
    out: list[dict[str, Any]] = []
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
