"""Event classes of the Kineto reader (category spellings -> class codes -> tables) and the
lenient rules for single values, which every builder shares.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from perflint.errors import InputError
from perflint.model import COMM_GPU, COMM_OP, GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.kineto.schema import INSTANT_CAT, SKIP_CAT

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

# The table each class of events fills (columns.TABLES), by class code.
TABLE_CODES: dict[str, tuple[int, ...]] = {
    "ops": (C_OP, C_ANN),
    "runtime": (C_RT,),
    "gpu": (C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC),
    "pyfn": (C_PYFN,),
    "memory": (MEM_CODE,),
}
# A row's KIND column by its class code (ops and gpu tables).
KIND_OF = np.zeros(MEM_CODE + 1, dtype=np.int8)
KIND_OF[C_OP], KIND_OF[C_ANN] = OP_CPU, OP_ANNOTATION
KIND_OF[C_KERNEL], KIND_OF[C_MEMCPY], KIND_OF[C_MEMSET], KIND_OF[C_SYNC] = KERNEL, MEMCPY, MEMSET, GPU_SYNC
# A comms row's SIDE column by its event's class code.
SIDE_OF = np.zeros(MEM_CODE + 1, dtype=np.int8)
SIDE_OF[C_OP], SIDE_OF[C_ANN] = COMM_OP, COMM_OP
SIDE_OF[[C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC]] = COMM_GPU

# Class code -> the group of events read together: a table, or one of the rarer kinds.
G_OPS, G_RT, G_GPU, G_PYFN, G_CPR, G_TRACE, G_MEM = range(1, 8)
TABLE_GROUPS = {"ops": G_OPS, "runtime": G_RT, "gpu": G_GPU, "pyfn": G_PYFN, "memory": G_MEM}
GROUP = np.zeros(MEM_CODE + 1, dtype=np.int8)
for _table, _codes in TABLE_CODES.items():
    GROUP[list(_codes)] = TABLE_GROUPS[_table]
GROUP[C_CPR], GROUP[TRACE_CODE] = G_CPR, G_TRACE

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


_INT64_MAX = (1 << 63) - 1


def count_or_none(x: Any) -> int:
    """A count (message elements, group size, sequence number): a JSON integer from 0 to int64's
    maximum; text, floats, bools, negatives and nulls are unknown (NONE)."""
    return x if x.__class__ is int and 0 <= x <= _INT64_MAX else NONE


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


def num_or_nan(x: Any) -> float:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        try:
            return float(x)
        except OverflowError:  # an int beyond float64: unknown, as no number is
            pass
    return float("nan")


def dim3(x: Any) -> tuple[int, int, int]:
    if isinstance(x, list) and len(x) == 3 and all(isinstance(v, int) for v in x):
        return (x[0], x[1], x[2])
    return (0, 0, 0)


def as_column(path: str, what: str, values: list[Any], dtype: Any, ndim: int = 1) -> np.ndarray:
    """A column of `values`; one that is a list (numpy would make the column two-dimensional)
    or no number is bad input."""
    try:
        col = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"non-numeric or out-of-range value in {what}") from None
    if values and col.ndim != ndim:
        raise InputError(path, f"non-numeric or out-of-range value in {what}")
    return col


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


class _CatCodes(dict):  # type: ignore[type-arg]
    """Class code of a strictly decoded event's `cat` (a category string, or the schema's SKIP or
    INSTANT constant), or of a category string the scanner read."""

    def __missing__(self, cat: Any) -> int:
        code = self[cat] = code_of("X", cat)
        return code


CAT_CODES: dict[Any, int] = _CatCodes({SKIP_CAT: 0, INSTANT_CAT: MEM_CODE})
