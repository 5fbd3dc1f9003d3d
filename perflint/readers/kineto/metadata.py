"""A Kineto trace's metadata around its events: devices (deviceProperties), the rank and world size
(distributedInfo) and the version keys, each value out of range dropped as unknown with a note."""

from __future__ import annotations

import re
from typing import Any

from perflint.model import Device, Trace, one_part
from perflint.readers.kineto.codes import int_or
from perflint.readers.kineto.ranges import INT32_MAX, INT64_MAX, meta_int
from perflint.readers.kineto.schema import TraceFile

# cudaDeviceProp / hipDeviceProp_t hold these as C ints (totalGlobalMem as size_t, taken as int64
# here): a value beyond, or one that cannot be (no SMs, a negative count), is unknown.
_COUNT_MAX = {"totalGlobalMem": INT64_MAX}
# A warp (wavefront) is 32 or 64 threads on every GPU; any power of two up to a block's 1024 is
# taken, anything else is unknown (the default).
_WARP_SIZES = frozenset(1 << k for k in range(11))

# What says which vendor made a device, read from the entry itself (never from its mere presence:
# other backends write deviceProperties too, with a chip codename for a name).
_MTIA_NAME = re.compile(r"\bmtia\b", re.IGNORECASE)
_AMD_NAME = re.compile(r"\b(?:amd|instinct|radeon|gfx\d+\w*|mi\d{2,3}[a-z]*)\b", re.IGNORECASE)
# The brands of cudaDeviceProp.name, or a data-centre part named without one (A100, H100, L40S,
# T4, V100, GH200, B200).
_NVIDIA_NAME = re.compile(r"\b(?:nvidia|tesla|geforce|quadro|titan|jetson|rtx|gtx)\b|^(?:[ABHLTVPKM]\d{1,3}[A-Za-z]?|G[BH]\d{3})\b",
                          re.IGNORECASE)
# Keys only one runtime's Kineto writes: CUPTI builds add cudaDeviceProp's regsPerMultiprocessor,
# sharedMemPerBlockOptin and sharedMemPerMultiprocessor; roctracer builds add
# maxSharedMemoryPerMultiProcessor; hipDeviceProp_t's gcnArchName names a gfx target.
_CUDA_KEYS = ("regsPerMultiprocessor", "sharedMemPerBlockOptin", "sharedMemPerMultiprocessor")
_ROCM_KEYS = ("maxSharedMemoryPerMultiProcessor", "gcnArchName")


def device_vendor(p: dict[str, Any], name: str, warp: int, major: int | None) -> str:
    """The vendor a deviceProperties entry names: by its name, else by the fields only one
    runtime writes; "unknown" when neither says (a codename of another accelerator)."""
    if _MTIA_NAME.search(name):
        return "mtia"
    if warp == 64 or _AMD_NAME.search(name) or any(k in p for k in _ROCM_KEYS):
        return "amd"  # wavefronts of 64 are AMD's; every NVIDIA GPU runs warps of 32
    if _NVIDIA_NAME.search(name):
        return "nvidia"
    if major is not None and any(k in p for k in _CUDA_KEYS):
        return "nvidia"
    return "unknown"


def parse_devices(props: Any, notes: list[str] | None = None) -> dict[int, Device]:
    """Devices of deviceProperties; each value out of range is dropped as unknown and named in `notes`."""
    devices: dict[int, Device] = {}
    if not isinstance(props, list):
        return devices
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        dropped: list[str] = []

        def ranged(key: str, v: Any, lo: int, hi: int) -> int | None:
            r = meta_int(v, lo, hi)
            if r is None and v.__class__ is int:
                dropped.append(key)
            return r

        raw_id = int_or(p.get("id"), 0)
        dev_id = ranged("id", raw_id, 0, INT32_MAX)
        if dev_id is None:
            dev_id = 0
        raw_name = p.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        major = ranged("computeMajor", p.get("computeMajor", p.get("major")), 0, INT32_MAX)
        minor = ranged("computeMinor", p.get("computeMinor", p.get("minor")), 0, INT32_MAX)
        warp = int_or(p.get("warpSize"), 32)
        if warp not in _WARP_SIZES:
            dropped.append("warpSize")
            warp = 32
        vendor = device_vendor(p, name, warp, major)

        def opt(*keys: str) -> int | None:
            """The first of `keys` in range; 0 is how Kineto writes a property it could not query."""
            bad = None
            for k in keys:
                v = p.get(k)
                if v.__class__ is int:
                    r = meta_int(v, 1, _COUNT_MAX.get(k, INT32_MAX))
                    if r is not None:
                        return r
                    if v != 0 and bad is None:
                        bad = k
            if bad is not None:
                dropped.append(bad)
            return None

        cc = (major, minor) if major is not None and minor is not None else None
        sm_count = opt("numSms", "multiProcessorCount")
        max_threads = opt("maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor")
        if max_threads is not None and max_threads < warp:  # a multiprocessor holds at least one warp
            dropped.append("maxThreadsPerMultiprocessor")
            max_threads = None
        regs_sm, regs_block = opt("regsPerMultiprocessor"), opt("regsPerBlock")
        smem_sm = opt("sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor")
        smem_block = opt("sharedMemPerBlockOptin", "sharedMemPerBlock")
        max_blocks = opt("maxBlocksPerMultiProcessor", "maxBlocksPerMultiprocessor")
        total = opt("totalGlobalMem")
        if dropped and notes is not None:
            notes.append(f"deviceProperties[{i}]: out-of-range {', '.join(dropped)} ignored")
        devices[dev_id] = Device(
            id=dev_id,
            name=name,
            vendor=vendor,
            sm_count=sm_count,
            compute_capability=cc,
            max_threads_per_sm=max_threads,
            regs_per_sm=regs_sm,
            regs_per_block=regs_block,
            shared_mem_per_sm=smem_sm,
            shared_mem_per_block=smem_block,
            max_blocks_per_sm=max_blocks,
            warp_size=warp,
            total_memory=total,
        )
    return devices


def _ids(ids: list[int]) -> str:
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}-{ids[-1]}"
    return ", ".join(map(str, ids))


def unlisted_devices_note(trace: Trace) -> str | None:
    """What the trace warning says when kernels ran on devices that deviceProperties does not list."""
    if not trace.devices:
        return None
    unlisted = [d for d in trace.kernel_devices() if d not in trace.devices]
    if not unlisted:
        return None
    which = f"device{'s' if len(unlisted) > 1 else ''} {_ids(unlisted)}"
    why = "(ROCm's visible devices and CUDA_VISIBLE_DEVICES can number GPUs differently)"
    part = one_part(trace.devices)
    named = f" ({part.name})" if part is not None and part.name else ""
    if len(trace.devices) == 1:
        return f"kernels ran on {which}, not deviceProperties' device {next(iter(trace.devices))}{named}: taken as that device {why}"
    listed = f"deviceProperties' devices {_ids(sorted(trace.devices))}"
    if part is None:
        return f"kernels ran on {which}, not among {listed}, which differ: the properties of {which} are unknown"
    return f"kernels ran on {which}, not among {listed}, all one part{named}: {which} takes their properties {why}"


def _backend_vendor(info: Any) -> str | None:
    """The accelerator a torch.distributed backend string names for the default process group
    ("mtia:hccl,cpu:gloo" = MTIA)."""
    backend = info.get("backend") if isinstance(info, dict) else None
    if isinstance(backend, str) and re.search(r"(?:^|,)\s*mtia:", backend):
        return "mtia"
    return None


def apply_metadata(trace: Trace, doc: TraceFile) -> None:
    props = doc.deviceProperties if doc.deviceProperties is not None else doc.computeProperties
    notes: list[str] = []
    trace.devices = parse_devices(props, notes)
    note = unlisted_devices_note(trace)
    if note:
        notes.append(note)
    info = doc.distributedInfo
    if not trace.devices:
        vendor = _backend_vendor(info)
        if vendor:
            trace.meta["device_vendor"] = vendor
    if isinstance(info, dict):
        # torch.distributed ranks and world sizes are C ints; one beyond (or negative) is
        # unknown, as when the trace has no distributedInfo (the file name may still say the rank).
        rank = info.get("rank")
        trace.rank = meta_int(rank, 0, INT32_MAX)
        if trace.rank is None and rank.__class__ is int:
            notes.append("distributedInfo: out-of-range rank ignored")
        ws = info.get("world_size")
        trace.world_size = meta_int(ws, 1, INT32_MAX)
        if trace.world_size is None and ws.__class__ is int:
            notes.append("distributedInfo: out-of-range world_size ignored")
    for key in (
        "schemaVersion",
        "displayTimeUnit",
        "traceName",
        "cuda_runtime_version",
        "cuda_driver_version",
        "hip_runtime_version",
        "cupti_version",
    ):
        v = getattr(doc, key)
        if v.__class__ is int and meta_int(v, -INT64_MAX - 1, INT64_MAX) is None:
            notes.append(f"out-of-range {key} ignored")  # the reports write ints as int64
        elif isinstance(v, (str, int, float)):
            trace.meta[key] = v
    trace.warnings.extend(notes)



__all__ = ["apply_metadata", "device_vendor", "parse_devices", "unlisted_devices_note"]
