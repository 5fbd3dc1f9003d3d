"""Kernel categories and Tensor Core use per GPU row, from `kernelnames.classify.classify_kernel`.

Each unique kernel name is classified once (by the structure of its name, with the trace's device
vendor); the per-row arrays are gathered from that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.ids import distinct
from perflint.kernelnames.classify import classify_kernel
from perflint.memo import once
from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, Trace

CATEGORIES = (
    "gemm",
    "conv",
    "attention",
    "elementwise",
    "reduction",
    "normalization",
    "communication",
    "memcpy",
    "memset",
    "triton_pointwise",
    "triton_reduction",
    "triton_persistent_reduction",
    "other",
)
CAT_INDEX = {c: i for i, c in enumerate(CATEGORIES)}
SYNC_CATEGORY = -1  # device-side sync records: not work, never counted


def kernel_category(name: str, vendor: str | None = None) -> str:
    return classify_kernel(name, vendor).category


def uses_tensor_cores(name: str, vendor: str | None = None) -> bool | None:
    """True/False for matrix kernels (GEMM, conv, attention) by name; None for others and for
    library helpers beside them."""
    return classify_kernel(name, vendor).tensor_cores


def trace_vendor(trace: Trace) -> str | None:
    """The vendor of the device running most kernels ("nvidia", "amd"), None when unknown."""
    dev = trace.primary_device
    return dev.vendor if dev is not None and dev.vendor in ("nvidia", "amd") else None


@dataclass
class KernelClasses:
    category: np.ndarray  # int8 index into CATEGORIES per GPU row (SYNC_CATEGORY for sync records)
    tensor_core: np.ndarray  # int8: 1 yes, 0 no, -1 not a matrix kernel


@once
def classify(trace: Trace) -> KernelClasses:
    g = trace.gpu
    n = len(g)
    category = np.full(n, CAT_INDEX["other"], dtype=np.int8)
    tc = np.full(n, -1, dtype=np.int8)
    # Per string id: the kernel class of that name (filled as names turn up), so a row is classified
    # by a gather; a slice of rows at a time, with no column-long index list or inverse.
    cat_of = np.full(len(trace.strings), CAT_INDEX["other"], dtype=np.int8)
    tc_of = np.full(len(trace.strings), -1, dtype=np.int8)
    done: set[int] = set()
    vendor: str | None = None
    for i in range(0, n, _SLICE):
        kind = g.kind[i : i + _SLICE]
        cat = category[i : i + _SLICE]
        cat[kind == MEMCPY] = CAT_INDEX["memcpy"]
        cat[kind == MEMSET] = CAT_INDEX["memset"]
        cat[kind == GPU_SYNC] = SYNC_CATEGORY
        kern = kind == KERNEL
        if not kern.any():
            continue
        if not done:
            vendor = trace_vendor(trace)
        names = g.name[i : i + _SLICE][kern]
        for sid in distinct(names):
            if sid not in done:
                done.add(sid)
                c = classify_kernel(trace.strings[sid], vendor)
                cat_of[sid] = CAT_INDEX[c.category]
                tc_of[sid] = -1 if c.tensor_cores is None else int(c.tensor_cores)
        cat[kern] = cat_of[names]
        tc[i : i + _SLICE][kern] = tc_of[names]
        # NCCL kernels that carry collective args are communication whatever their name says.
        cat[kern & (g.collective[i : i + _SLICE] >= 0)] = CAT_INDEX["communication"]
    return KernelClasses(category=category, tensor_core=tc)


_SLICE = 1 << 16
