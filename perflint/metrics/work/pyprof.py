"""pyprof's per-kernel `op` and `tc` conventions for the kernel table.

pyprof's `tc` describes the op a row shows, not only the kernel: "1"/"0" for a matrix kernel of a
matrix op (linear, matmul, mm, bmm, addmm, convolution) that did / did not use Tensor Cores, "-" for
any other op it has arguments for, "na" for a kernel with no argument marker (after the backward
kernel's forward lookup). Whether a kernel used Tensor Cores is perflint's kernel classification
(metrics.tensor_cores), never pyprof's guess from the dtype. pyprof shows the non-GEMM kernel of a
linear (its separate bias addition) as op "bias".
"""

from __future__ import annotations

MATRIX_OPS = frozenset(
    "linear matmul __matmul__ __rmatmul__ mm addmm addmm_ bmm baddbmm baddbmm_ conv1d conv2d conv3d convolution "
    "_convolution conv_transpose1d conv_transpose2d conv_transpose3d cudnn_convolution".split()
)  # fmt: skip


def pyprof_op(op: str, matrix_kernel: bool) -> str:
    """The op column: pyprof names a linear's non-GEMM kernel "bias"."""
    return "bias" if op == "linear" and not matrix_kernel else op


def pyprof_tc(op: str, matrix_kernel: bool, tensor_cores: bool | None, pyprof_trace: bool, unmarked: bool) -> str:
    """The tc column of one kernel row (module docstring). On a trace without pyprof markers the
    verdict is the kernel's alone: 1/0 for a matrix kernel, "-" otherwise."""
    if not pyprof_trace:
        return "-" if tensor_cores is None else ("1" if tensor_cores else "0")
    if unmarked:
        return "na"
    name = op.rpartition("::")[2]
    if name in MATRIX_OPS and matrix_kernel and tensor_cores is not None:
        return "1" if tensor_cores else "0"
    return "-"
