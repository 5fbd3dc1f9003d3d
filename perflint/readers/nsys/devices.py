"""Device properties of an export as `model.Device`s, keyed the way its activity rows name devices.

`TARGET_INFO_GPU` (one row per GPU of the machine) holds the properties occupancy needs. Activity
rows carry `deviceId`: where the export has `TARGET_INFO_CUDA_DEVICE`, that maps a process's CUDA
device (`cudaId`) to a `TARGET_INFO_GPU.id` (`gpuId`), so CUDA_VISIBLE_DEVICES renumbering is
followed; without it `deviceId` is taken to be `TARGET_INFO_GPU.id`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from perflint.model import Device
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.schema import Schema

# Device field -> TARGET_INFO_GPU / TARGET_INFO_CUDA_DEVICE column names, in order of preference.
_FIELDS: dict[str, tuple[str, ...]] = {
    "sm_count": ("smCount", "numMultiprocessors", "multiProcessorCount"),
    "regs_per_sm": ("maxRegistersPerSm", "maxRegistersPerMultiprocessor"),
    "regs_per_block": ("maxRegistersPerBlock",),
    "shared_mem_per_sm": ("maxShmemPerSm", "maxSharedMemoryPerMultiprocessor"),
    "shared_mem_per_block": ("maxShmemPerBlockOptin", "maxShmemPerBlock", "maxSharedMemoryPerBlock"),
    "max_blocks_per_sm": ("maxBlocksPerSm", "maxBlocksPerMultiprocessor"),
    "total_memory": ("totalMemory", "totalGlobalMemory"),
}
_MAJOR = ("computeMajor", "computeCapabilityMajor", "smMajor")
_MINOR = ("computeMinor", "computeCapabilityMinor", "smMinor")
_INT32_MAX = 2**31 - 1


def _rows(con: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    try:
        cur = con.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    except sqlite3.DatabaseError:
        return []


def _pos(row: dict[str, Any], *names: str, limit: int = _INT32_MAX) -> int | None:
    """The first of `names` holding a positive integer in range (0 is how exports write 'unknown')."""
    for n in names:
        v = row.get(n)
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= limit:
            return v
    return None


def _device(dev_id: int, row: dict[str, Any]) -> Device:
    warp = _pos(row, "threadsPerWarp", "warpSize") or 32
    warps = _pos(row, "maxWarpsPerSm", "maxWarpsPerMultiprocessor")
    threads = _pos(row, "maxThreadsPerSm", "maxThreadsPerMultiprocessor") or (warps * warp if warps else None)
    major = next((row[n] for n in _MAJOR if isinstance(row.get(n), int) and row[n] > 0), None)
    minor = next((row[n] for n in _MINOR if isinstance(row.get(n), int) and row[n] >= 0), None)
    name = row.get("name")
    props = {k: _pos(row, *cols, limit=2**62 if k == "total_memory" else _INT32_MAX) for k, cols in _FIELDS.items()}
    return Device(
        id=dev_id,
        name=name if isinstance(name, str) else "",
        vendor="nvidia",
        compute_capability=(major, minor) if major is not None and minor is not None else None,
        max_threads_per_sm=threads,
        warp_size=warp,
        **props,
    )


def read_devices(con: sqlite3.Connection, sc: Schema) -> dict[tuple[int, int], Device]:
    """(pid, deviceId as activity rows write it) -> Device; pid -1 for the mapping that holds
    for every process (no TARGET_INFO_CUDA_DEVICE)."""
    gpus: dict[int, dict[str, Any]] = {}
    if sc.has(S.GPU_INFO, "id"):
        for row in _rows(con, S.GPU_INFO):
            if isinstance(row.get("id"), int):
                gpus.setdefault(int(row["id"]), row)
    out: dict[tuple[int, int], Device] = {}
    if sc.has(S.CUDA_DEVICE, "cudaId"):
        for row in _rows(con, S.CUDA_DEVICE):
            cuda_id = row.get("cudaId")
            if not isinstance(cuda_id, int):
                continue
            gpu_id = row.get("gpuId")
            merged = {**gpus.get(gpu_id if isinstance(gpu_id, int) else -2, {}), **{k: v for k, v in row.items() if v is not None}}
            pid = row.get("pid")
            out[(pid if isinstance(pid, int) and pid > 0 else -1, cuda_id)] = _device(cuda_id, merged)
    for gid, row in gpus.items():
        out.setdefault((-1, gid), _device(gid, row))
    return out


def devices_of(devices: dict[tuple[int, int], Device], pid: int, device_ids: list[int]) -> dict[int, Device]:
    """The Devices a process's activity rows name (its own mapping first, then the shared one)."""
    out: dict[int, Device] = {}
    for d in device_ids:
        dev = devices.get((pid, d)) or devices.get((-1, d))
        if dev is not None:
            out[d] = dev
    return out


__all__ = ["devices_of", "read_devices"]
