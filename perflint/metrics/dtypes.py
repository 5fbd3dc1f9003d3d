"""Data types of ops (from `Input type`) and kernels (from their names)."""

from __future__ import annotations

import re
from typing import Any

# Kineto `Input type` strings -> short dtype names.
_OP_TYPES = {
    "float": "fp32",
    "c10::Half": "fp16",
    "Half": "fp16",
    "c10::BFloat16": "bf16",
    "BFloat16": "bf16",
    "double": "fp64",
    "signed char": "int8",
    "unsigned char": "uint8",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "int": "int32",
    "long int": "int64",
    "bool": "bool",
    "c10::complex<float>": "complex64",
}
FLOAT_ORDER = ("fp8", "int8", "fp16", "bf16", "fp32", "fp64")

_KERNEL_DTYPES = (
    (re.compile(r"e4m3|e5m2|fp8|f8f6f4", re.I), "fp8"),
    (re.compile(r"bf16|bfloat16", re.I), "bf16"),
    (re.compile(r"tf32", re.I), "tf32"),
    (re.compile(r"f16|fp16|__half|c10::Half|h884|h1688|h16816|hgemm|_HH|HHS", re.I), "fp16"),
    (re.compile(r"i8|int8|imma|i8816", re.I), "int8"),
    (re.compile(r"sgemm|<float|float>|_SS|SSS|f32|fp32", re.I), "fp32"),
    (re.compile(r"dgemm|double", re.I), "fp64"),
)


def op_dtype(types: Any) -> str | None:
    """The compute dtype of an op: its first floating tensor input's type."""
    if not isinstance(types, list):
        return None
    found = [_OP_TYPES.get(t) for t in types if isinstance(t, str)]
    for d in found:
        if d in FLOAT_ORDER:
            return d
    return None


def kernel_dtype(name: str) -> str | None:
    for rx, dt in _KERNEL_DTYPES:
        if rx.search(name):
            return dt
    return None


def dtype_size(dtype: str | None) -> int | None:
    return {"fp8": 1, "int8": 1, "uint8": 1, "fp16": 2, "bf16": 2, "fp32": 4, "tf32": 4, "int32": 4, "fp64": 8, "int64": 8}.get(
        dtype or ""
    )
