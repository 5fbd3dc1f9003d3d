"""CUDA API names of the callback ids (cbid) nvprof stores in its RUNTIME and DRIVER tables.

The numbers are CUPTI's documented enums (`cupti_runtime_cbid.h`, `cupti_driver_cbid.h`); only the
calls a rule or the graph looks at are named: launches, copies, memsets, synchronizations,
allocations. Any other call is `cudaApi#<cbid>` / `cuApi#<cbid>`: still a runtime row (its time
counts as CPU-side CUDA work), never guessed.
"""

from __future__ import annotations

RUNTIME: dict[int, str] = {
    10: "cudaGetLastError", 11: "cudaPeekAtLastError", 13: "cudaLaunch", 16: "cudaSetDevice",
    17: "cudaGetDevice", 20: "cudaMalloc", 21: "cudaMallocPitch", 22: "cudaFree", 25: "cudaMallocHost",
    26: "cudaFreeHost", 27: "cudaHostAlloc", 30: "cudaMemGetInfo", 31: "cudaMemcpy", 32: "cudaMemcpy2D",
    39: "cudaMemcpyToSymbol", 40: "cudaMemcpyFromSymbol", 41: "cudaMemcpyAsync", 44: "cudaMemcpy2DAsync",
    47: "cudaMemcpyToSymbolAsync", 48: "cudaMemcpyFromSymbolAsync", 49: "cudaMemset", 50: "cudaMemset2D",
    51: "cudaMemsetAsync", 52: "cudaMemset2DAsync", 126: "cudaThreadSynchronize", 129: "cudaStreamCreate",
    130: "cudaStreamDestroy", 131: "cudaStreamSynchronize", 132: "cudaStreamQuery", 133: "cudaEventCreate",
    134: "cudaEventCreateWithFlags", 135: "cudaEventRecord", 136: "cudaEventDestroy",
    137: "cudaEventSynchronize", 138: "cudaEventQuery", 139: "cudaEventElapsedTime", 140: "cudaMalloc3D",
    142: "cudaMemset3D", 143: "cudaMemset3DAsync", 144: "cudaMemcpy3D", 145: "cudaMemcpy3DAsync",
    147: "cudaStreamWaitEvent", 151: "cudaPointerGetAttributes", 152: "cudaHostRegister",
    153: "cudaHostUnregister", 160: "cudaMemcpyPeer", 161: "cudaMemcpyPeerAsync", 165: "cudaDeviceSynchronize",
    198: "cudaStreamCreateWithFlags", 200: "cudaDeviceGetAttribute", 201: "cudaStreamDestroy",
    202: "cudaStreamCreateWithPriority", 206: "cudaMallocManaged", 211: "cudaLaunchKernel",
    213: "cudaLaunch_ptsz", 214: "cudaLaunchKernel_ptsz", 215: "cudaMemcpy_ptds", 225: "cudaMemcpyAsync_ptsz",
    233: "cudaMemset_ptds", 235: "cudaMemsetAsync_ptsz", 239: "cudaStreamSynchronize_ptsz",
    242: "cudaEventRecord_ptsz", 247: "cudaStreamWaitEvent_ptsz",
    251: "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 252: "cudaMemPrefetchAsync",
    269: "cudaLaunchCooperativeKernel", 270: "cudaLaunchCooperativeKernel_ptsz",
    272: "cudaLaunchCooperativeKernelMultiDevice", 273: "cudaFuncSetAttribute", 284: "cudaLaunchHostFunc",
    285: "cudaLaunchHostFunc_ptsz", 311: "cudaGraphLaunch", 312: "cudaGraphLaunch_ptsz",
}  # fmt: skip

DRIVER: dict[int, str] = {
    17: "cuCtxSynchronize", 115: "cuLaunch", 116: "cuLaunchGrid", 117: "cuLaunchGridAsync",
    121: "cuEventSynchronize", 126: "cuStreamSynchronize", 216: "cuMemsetD8Async", 218: "cuMemsetD16Async",
    220: "cuMemsetD32Async", 249: "cuMemsetD8_v2", 250: "cuMemsetD16_v2", 251: "cuMemsetD32_v2",
    276: "cuMemcpyHtoD_v2",
    277: "cuMemcpyHtoDAsync_v2", 278: "cuMemcpyDtoH_v2", 279: "cuMemcpyDtoHAsync_v2", 280: "cuMemcpyDtoD_v2",
    281: "cuMemcpyDtoDAsync_v2", 295: "cuStreamWaitEvent", 305: "cuMemcpy", 306: "cuMemcpyAsync",
    307: "cuLaunchKernel", 318: "cuMemcpyPeer", 319: "cuMemcpyPeerAsync", 418: "cuMemcpyAsync_ptsz",
    421: "cuMemcpyHtoDAsync_v2_ptsz", 422: "cuMemcpyDtoHAsync_v2_ptsz", 423: "cuMemcpyDtoDAsync_v2_ptsz",
    440: "cuStreamSynchronize_ptsz", 442: "cuLaunchKernel_ptsz", 477: "cuLaunchCooperativeKernel",
    478: "cuLaunchCooperativeKernel_ptsz", 514: "cuGraphLaunch", 515: "cuGraphLaunch_ptsz",
    527: "cuLaunchHostFunc", 652: "cuLaunchKernelEx", 653: "cuLaunchKernelEx_ptsz",
}  # fmt: skip


def runtime_name(cbid: int) -> str:
    return RUNTIME.get(cbid, f"cudaApi#{cbid}")


def driver_name(cbid: int) -> str:
    return DRIVER.get(cbid, f"cuApi#{cbid}")


# CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind, named as Kineto names copies
# ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)").
COPY_KIND = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
MEMORY_KIND = {0: "Unknown", 1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed", 6: "Device Static", 7: "Managed Static"}


def memcpy_name(copy_kind: int, src_kind: int, dst_kind: int) -> str:
    kind = COPY_KIND.get(copy_kind, "Unknown")
    return f"Memcpy {kind} ({MEMORY_KIND.get(src_kind, 'Unknown')} -> {MEMORY_KIND.get(dst_kind, 'Unknown')})"


def memset_name(memory_kind: int) -> str:
    return f"Memset ({MEMORY_KIND.get(memory_kind, 'Unknown')})"


__all__ = ["DRIVER", "RUNTIME", "driver_name", "memcpy_name", "memset_name", "runtime_name"]
