"""`kernel_groups` field `matrix_op`: the GEMM or convolution op (aten::mm, aten::convolution...)
on a kernel's launch stack. The op-level Tensor Core rules see matrix kernels through these ops;
a compiled graph (torch.compile's CompiledFunction) or a custom op launches cuBLAS/cuDNN kernels
without one, and only the kernel-level rules see them."""

from __future__ import annotations

import re

from perflint.facts import Context, Fields, Row, enricher, typed
from perflint.metrics.shapes import op_class

_ATEN_BACKWARD = re.compile(r"^(aten::\w+?)_backward")  # aten::cudnn_convolution_backward_input
_AUTOGRAD = re.compile(r"^(\w+)Backward\d*$")  # ConvolutionBackward0, AddmmBackward0


def is_matrix_op(name: str) -> bool:
    """A GEMM or convolution op, or the backward op of one (its kernels are that op's work)."""
    if op_class(name):
        return True
    m = _ATEN_BACKWARD.match(name)
    if m and op_class(m.group(1)):
        return True
    m = _AUTOGRAD.match(name)
    return bool(m and op_class("aten::" + m.group(1).lower()))

FIELDS: Fields = {
    "matrix_op": typed("the GEMM or convolution op (or its backward op) on the kernel's launch stack, innermost first; null when none (a compiled graph or a custom op launched it)", "text"),
}


@enricher("kernel_groups", fields=FIELDS)
def _enrich(ctx: Context, row: Row) -> Row:
    stack = row.get("op_stack") or ()
    return {"matrix_op": next((op for op in reversed(stack) if is_matrix_op(op)), None)}
