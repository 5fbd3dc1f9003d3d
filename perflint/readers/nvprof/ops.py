"""NVTX ranges as the op layer: pyprof's argument markers and emit_nvtx's ranges become ops.

- A pyprof argument marker is an op named like the ATen op the call runs (`torch.nn.functional.linear`
  -> `aten::linear`, `Tensor.__matmul__` -> `aten::matmul`, `Tensor.__iadd__` -> `aten::add_`; calls
  of other modules keep `module.op`), with Kineto-style Input Dims / Input type / Concrete Inputs
  from its arguments, pyprof's `mod.op` in `pycall`, and the call trace of the pyprof trace marker
  pushed just before it (same thread) as its call stack.
- An emit_nvtx range is an op with its autograd sequence number (and Input Dims when it recorded
  `sizes`); ranges of autograd nodes (`MulBackward0`) and everything inside them are backward
  ops (`fwd_tid` set), as Kineto marks them.
- Any other range (user markers, pyprof's `layer:` markers) is a user annotation. pyprof's module
  and trace markers are not ops: their content is on the ops they wrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from perflint.model import NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.nvprof.markers import ARG, BACKWARD_NAME, REPR, SEQ, TRACE, Parsed, Ranges, group_ids, inside
from perflint.readers.tables import Strings, Threads

# Modules whose calls pyprof wraps that are ATen ops of the same name.
ATEN_MODULES = frozenset({"torch", "Tensor", "torch.Tensor", "torch.nn.functional"})
_DUNDER = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__rtruediv__": "div", "__div__": "div", "__rdiv__": "div", "__itruediv__": "div_", "__idiv__": "div_",
    "__matmul__": "matmul", "__rmatmul__": "matmul", "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow_",
    "__neg__": "neg", "__abs__": "abs", "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
    "__invert__": "bitwise_not", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__eq__": "eq", "__ne__": "ne", "__floordiv__": "floor_divide", "__mod__": "remainder",
}  # fmt: skip
# torch dtype names (str(dtype) after the dot) -> Kineto "Input type" names.
_DTYPES = {
    "float32": "float", "float": "float", "float16": "c10::Half", "half": "c10::Half", "bfloat16": "c10::BFloat16",
    "float64": "double", "double": "double", "int64": "long int", "long": "long int", "int32": "int", "int": "int",
    "int16": "short int", "short": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
}  # fmt: skip


def op_name(mod: str, op: str) -> str:
    """The op name of a pyprof call: the ATen op for torch / Tensor / torch.nn.functional."""
    if mod in ATEN_MODULES:
        return f"aten::{_DUNDER.get(op, op)}"
    return f"{mod}.{op}" if mod else op


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    return "" if value is None else str(value)


def arg_columns(args: list[Any]) -> tuple[str, str, str]:
    """Input Dims, Input type and Concrete Inputs JSON of pyprof's argument list, as Kineto writes
    them: a tensor gives its shape and dtype, a scalar `[]`, "Scalar" and its value."""
    dims: list[Any] = []
    types: list[str] = []
    concrete: list[str] = []
    for a in args:
        if not isinstance(a, dict):
            continue
        kind = a.get("type")
        if kind in ("tensor", "ndarray"):
            shape = a.get("shape")
            dims.append([int(x) for x in shape] if isinstance(shape, (list, tuple)) and all(isinstance(x, int) for x in shape) else [])
            dt = str(a.get("dtype", ""))
            types.append(_DTYPES.get(dt, dt))
            concrete.append("")
        elif kind in ("list", "tuple"):
            dims.append([])
            types.append("ScalarList")
            concrete.append(_text(a.get("value")))
        elif kind == "NoneType":
            dims.append([])
            types.append("")
            concrete.append("")
        else:
            dims.append([])
            types.append("Scalar")
            concrete.append(_text(a.get("value")))
    return (orjson.dumps(dims).decode(), orjson.dumps(types).decode(), orjson.dumps(concrete).decode())


# pyprof's own wrapper frames: the profiler's, not the user's.
_PYPROF_FRAME = "/pyprof/nvtx/nvmarker.py:"


def call_stack(frames: list[str]) -> str:
    """pyprof's trace ("file.py:LINE", outermost first) as a Kineto call stack (innermost first),
    without pyprof's wrapper frames; pyprof records no function names."""
    out = []
    for f in reversed(frames):
        if _PYPROF_FRAME in f:
            continue
        path, _, line = f.rpartition(":")
        out.append(f"{path}({line}): ?" if line.isdigit() else f)
    return ";".join(out)


def op_columns(r: Ranges, texts: dict[int, str], strings: Strings, threads: Threads, origin: int) -> tuple[dict[str, Any], int]:
    """OpTable columns of the ranges; and how many pyprof-looking names were not Python literals."""
    n = len(r)
    kinds = r.kinds()
    group = group_ids(r.pid, r.tid)
    is_arg, is_seq = kinds == ARG, kinds == SEQ
    keep = ~np.isin(kinds, (TRACE, REPR))
    # The trace marker of an argument marker: the last one pushed before it on its thread (pyprof
    # pushes trace, module, argument markers back to back), if it encloses it.
    pos = np.arange(n)
    last_trace = np.maximum.accumulate(np.where(kinds == TRACE, pos, -1)) if n else pos
    tr = np.where(is_arg, last_trace, -1)
    ok = tr >= 0
    ok[ok] = (group[tr[ok]] == group[ok]) & (r.end[tr[ok]] >= r.end[ok])
    tr[~ok] = -1
    # Per distinct name: op name, Python call, dims/types/concrete, seq, and whether it is an autograd node.
    uniq, inv = np.unique(r.name, return_inverse=True)
    inv = inv.reshape(-1)
    infos = [_name_info(r.parsed[int(u)], strings) for u in uniq.tolist()]
    malformed = sum(r.parsed[int(u)].malformed for u in uniq.tolist())
    per_name = np.asarray([i[:6] for i in infos], dtype=np.int64).reshape(len(infos), 6)[inv]
    node = np.asarray([i[6] for i in infos], dtype=bool)[inv] if n else np.zeros(0, bool)
    backward = inside(group, r.start, r.end, node & is_seq) & is_seq
    stacks = np.asarray(
        [strings.id(call_stack(r.parsed[int(u)].payload)) if r.parsed[int(u)].kind == TRACE else NONE for u in uniq.tolist()],
        dtype=np.int64,
    )
    stack = np.full(n, NONE, dtype=np.int64)
    has = tr >= 0
    stack[has] = stacks[inv[tr[has]]]
    g_first = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1]))) if n else np.zeros(0, np.int64)
    g_thread = np.asarray([threads.id(int(r.pid[i]), int(r.tid[i])) for i in g_first.tolist()], dtype=np.int32)
    thread = g_thread[group] if n else np.zeros(0, np.int32)
    # Backward ops carry the forward thread's id (Kineto's "Fwd thread id"): the thread with the
    # most forward emit_nvtx ranges.
    fwd = is_seq & ~backward
    fwd_thread = int(np.bincount(group[fwd]).argmax()) if fwd.any() else -1
    fwd_tid = int(r.tid[np.flatnonzero(group == fwd_thread)[0]]) if fwd_thread >= 0 else 1
    k = np.flatnonzero(keep)
    cols = {
        "kind": np.where(is_arg | is_seq, OP_CPU, OP_ANNOTATION)[k],
        "name": per_name[k, 0],
        "pycall": per_name[k, 1],
        "dims": per_name[k, 2],
        "types": per_name[k, 3],
        "concrete": per_name[k, 4],
        "seq": per_name[k, 5],
        "fwd_tid": np.where(backward, max(fwd_tid, 1), NONE)[k],
        "stack": stack[k],
        "thread": thread[k],
        "ts": (r.start[k] - origin) / 1000.0,
        "dur": (r.end[k] - r.start[k]) / 1000.0,
    }
    return cols, malformed


def _name_info(p: Parsed, strings: Strings) -> tuple[int, int, int, int, int, int, bool]:
    """(name, Python call, dims, types, concrete, seq, is an autograd node) of one distinct range name."""
    if p.kind == ARG:
        mod = str(p.payload.get("mod", ""))
        dims, types, concrete = arg_columns(p.payload["args"])
        call = f"{mod}.{p.payload['op']}" if mod else str(p.payload["op"])
        return (strings.id(op_name(mod, p.payload["op"])), strings.id(call), strings.id(dims), strings.id(types), strings.id(concrete), NONE, False)
    if p.kind == SEQ:
        dims_id = strings.id(orjson.dumps(p.payload).decode()) if p.payload is not None else NONE
        return (strings.id(p.name), NONE, dims_id, NONE, NONE, p.seq if p.seq >= 0 else NONE, bool(BACKWARD_NAME.search(p.name)))
    return (strings.id(p.name), NONE, NONE, NONE, NONE, NONE, False)


__all__ = ["ATEN_MODULES", "arg_columns", "call_stack", "op_columns", "op_name"]
