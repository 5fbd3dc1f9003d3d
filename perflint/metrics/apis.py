"""What CUDA and HIP runtime/driver API calls do to the host: which block it until the device has
drained work (syncs), which copy synchronously, which launch work, which allocate.

Names are matched after the suffixes the runtimes add to per-thread-default-stream and versioned
entry points (`_ptds`, `_ptsz`, `_v2`, `_v3020`, `_spt`): `cudaMemcpy_ptds`, `cuMemcpyHtoD_v2` and
`hipMemcpy_spt` are the same calls as far as the host is concerned.

Sources: the CUDA Runtime API reference ("API synchronization behavior": cudaMemcpy* without Async
return once the copy is done; cudaMemset* and *Async copies return at once except from/to pageable
host memory) and the HIP runtime API reference (hipMemcpy*, hipMemcpyWithStream,
hip*Synchronize). A cudaMemcpyAsync from device to pageable host memory also waits for the copy:
that one is told apart by the copy it launched (facts.syncs), not by its name.
"""

from __future__ import annotations

import re

_SUFFIX = re.compile(r"(?:_ptds|_ptsz|_spt|_v\d+)+$")

# Host waits for the device: API -> what it waits for.
SYNC_CALLS = {
    "cudaDeviceSynchronize": "device", "cudaThreadSynchronize": "device", "cudaStreamSynchronize": "stream",
    "cudaEventSynchronize": "event",
    "cuCtxSynchronize": "device", "cuStreamSynchronize": "stream", "cuEventSynchronize": "event",
    "hipDeviceSynchronize": "device", "hipCtxSynchronize": "device", "hipStreamSynchronize": "stream",
    "hipEventSynchronize": "event",
}  # fmt: skip

# Copies that return only when the copy is done (any direction, any host memory).
_SYNC_COPY = re.compile(
    r"^(?:cuda|hip)Memcpy(?:2D|3D|ToSymbol|FromSymbol|Peer|ToArray|FromArray|2DToArray|2DFromArray|ArrayToArray|"
    r"2DArrayToArray|Param2D|HtoD|DtoH|DtoD|HtoA|AtoH|3DPeer|WithStream)?$"
    r"|^cuMemcpy(?:HtoD|DtoH|DtoD|HtoA|AtoH|AtoD|DtoA|AtoA|2D|2DUnaligned|3D|Peer|3DPeer)?$"
)

# Calls that put work on the device (their GPU side may be missing when activity records dropped).
LAUNCH_APIS = frozenset(
    {
        "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch",
        "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy2DAsync", "cudaMemcpy3DAsync", "cudaMemcpyPeerAsync",
        "cuMemcpyAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemsetD8Async",
        "cuMemsetD32Async", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipGraphLaunch", "hipMemcpyAsync",
        "hipMemsetAsync", "hipMemcpyWithStream", "hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync", "hipMemcpyDtoDAsync",
        "hipMemcpy2DAsync", "hipMemcpyPeerAsync", "hipMemsetD32Async",
    }
)  # fmt: skip
# Launch APIs that start kernels (not copies or memsets): what launch overhead is made of.
KERNEL_LAUNCH = re.compile(r"^(?:cuda|cu|hip)(?:Ext)?(?:Module)?Launch(?:Cooperative)?Kernel|^(?:cuda|cu|hip)GraphLaunch$")

# Device memory allocation and release (cudaFree also synchronizes the device).
ALLOC_APIS = frozenset(
    {"cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "cudaMallocManaged", "cudaMallocHost", "cudaFreeHost",
     "cuMemAllocHost", "cuMemFreeHost", "hipMalloc", "hipFree", "hipExtMallocWithFlags", "hipMallocManaged",
     "hipHostMalloc", "hipHostFree"}
)  # fmt: skip


def base_name(api: str) -> str:
    """The API without its per-thread-stream / version suffix."""
    return _SUFFIX.sub("", api)


def sync_kind(api: str) -> str | None:
    """'device' / 'stream' / 'event' for a call that waits for the device, else None."""
    return SYNC_CALLS.get(base_name(api))


def is_sync_copy(api: str) -> bool:
    """A copy call that returns only when the copy is done."""
    return _SYNC_COPY.match(base_name(api)) is not None


def is_launch(api: str) -> bool:
    return api in LAUNCH_APIS or base_name(api) in LAUNCH_APIS


def is_kernel_launch(api: str) -> bool:
    return KERNEL_LAUNCH.match(base_name(api)) is not None


def is_alloc(api: str) -> bool:
    return base_name(api) in ALLOC_APIS


__all__ = ["ALLOC_APIS", "LAUNCH_APIS", "SYNC_CALLS", "base_name", "is_alloc", "is_kernel_launch", "is_launch", "is_sync_copy", "sync_kind"]
