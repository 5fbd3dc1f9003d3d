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


# c10::ScalarType names as PyTorch writes them (a collective record's "dtype") -> short names.
SCALAR_TYPES = {
    "Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64", "Half": "fp16", "Float": "fp32",
    "Double": "fp64", "ComplexHalf": "complex32", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "Bool": "bool", "BFloat16": "bf16", "Float8_e5m2": "fp8", "Float8_e4m3fn": "fp8", "Float8_e5m2fnuz": "fp8",
    "Float8_e4m3fnuz": "fp8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
}  # fmt: skip

_SIZES = {
    "fp8": 1, "int8": 1, "uint8": 1, "bool": 1, "fp16": 2, "bf16": 2, "int16": 2, "uint16": 2, "fp32": 4, "tf32": 4,
    "int32": 4, "uint32": 4, "complex32": 4, "fp64": 8, "int64": 8, "uint64": 8, "complex64": 8, "complex128": 16,
}  # fmt: skip


def scalar_dtype(name: str | None) -> str | None:
    """The short name of a c10::ScalarType name ("BFloat16" -> "bf16"); None when unknown."""
    return SCALAR_TYPES.get(name or "")


def dtype_size(dtype: str | None) -> int | None:
    """Bytes per element of a short dtype name; None when unknown."""
    return _SIZES.get(dtype or "")
