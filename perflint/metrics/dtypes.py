"""Data types of ops (from `Input type`) and kernels (from their names)."""

from __future__ import annotations

from typing import Any

from perflint.kernelnames.classify import classify_kernel

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
    """The math dtype a kernel's name says by its library's convention (None: it does not say)."""
    return classify_kernel(name).dtype


def dtype_size(dtype: str | None) -> int | None:
    return {"fp8": 1, "int8": 1, "uint8": 1, "fp16": 2, "bf16": 2, "fp32": 4, "tf32": 4, "int32": 4, "fp64": 8, "int64": 8}.get(
        dtype or ""
    )
