"""Event classes of the Kineto reader: category spellings -> class codes, and the lenient int rule.

Shared by the builders in kineto.py and fast_add.py (a module of its own so neither imports the other).
"""

from __future__ import annotations

import math
import re
from typing import Any

from perflint.model import NONE

C_OP, C_ANN, C_PYFN, C_RT, C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC, C_CPR = range(1, 10)
TRACE_CODE = 10  # an X event of category "Trace": maybe the profiler's own span
MEM_CODE = 11  # an instant event: maybe a [memory] record

_CATS = {
    "cpu_op": C_OP,
    "operator": C_OP,
    "user_annotation": C_ANN,
    "python_function": C_PYFN,
    "cuda_runtime": C_RT,
    "runtime": C_RT,
    "cuda_driver": C_RT,
    "mtia_runtime": C_RT,
    "hip_runtime": C_RT,
    "kernel": C_KERNEL,
    "mtia_ccp_events": C_KERNEL,
    "gpu_memcpy": C_MEMCPY,
    "memcpy": C_MEMCPY,
    "gpu_memset": C_MEMSET,
    "memset": C_MEMSET,
    "cuda_sync": C_SYNC,
    "cuda_profiler_range": C_CPR,
}
CATEGORY_CODES: dict[Any, int] = dict(_CATS)
for _k, _v in _CATS.items():
    CATEGORY_CODES[_k.capitalize()] = _v
    CATEGORY_CODES[_k.upper()] = _v

_STREAM_RE = re.compile(r"(\d+)")


def int_or(x: Any, default: int = NONE) -> int:
    if x is None or isinstance(x, bool):
        return default
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x == x:
        return int(x)
    if isinstance(x, str):
        m = _STREAM_RE.search(x)
        if m:
            return int(m.group(1))
    return default


def stream_of(x: Any) -> int:
    """A GPU row's `stream` argument as HTA's parser reads it (`int(value)`, and -1 where that
    fails): an int, a float's whole part, a string int() takes ("7"); anything else - a missing
    argument, a stream handle such as ROCm's "0x0", text around digits - is NONE (no stream).
    The thread id is never a stand-in: HTA leaves such rows out of the device timeline."""
    if x.__class__ is int:
        return x
    if isinstance(x, float):
        return int(x) if math.isfinite(x) else NONE
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            return NONE
    return NONE


def code_of(ph: Any, cat: Any) -> int:
    if ph == "X":
        if cat.__class__ is not str:
            return 0
        code = CATEGORY_CODES.get(cat)
        if code is None:
            code = CATEGORY_CODES.get(cat.lower())
            if code is None:
                return TRACE_CODE if cat == "Trace" else 0
        return code
    if ph == "i" or ph == "I":
        return MEM_CODE
    return 0
