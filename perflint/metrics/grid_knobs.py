"""What a user can change to give a kernel a larger grid, by who sizes its grid: the user's own
kernels and compiled (Triton) kernels size it from their code or autotuning; library kernels
size it from the problem shape, so the knob is the shape (batch, tokens, heads) or fusing the
work. None where no user-side knob is known: the grid is the library's choice."""

from __future__ import annotations

# category -> the knob, for library kernels (cuBLAS, CUTLASS, cuDNN, ATen, FlashAttention...)
_LIBRARY = {
    "gemm": "the GEMM's M and N (batch x tokens): a larger batch, grouped or batched GEMMs, or torch.compile(mode='max-autotune') to try split-K kernels",
    "conv": "the batch size (the convolution's output pixels x channels set its grid)",
    "attention": "batch x heads; for decode, a split-KV kernel (FlashAttention's num_splits, FlashInfer's split-k)",
    "elementwise": "the tensor's size: batch the work, or let torch.compile fuse it with its neighbours",
    "reduction": "the number of rows reduced: batch the work, or let torch.compile fuse it",
    "normalization": "how many rows (layer norm: batch x tokens) or channels (batch norm) it normalizes: a larger batch, or a fused norm",
}
_OWN = "the kernel's own launch grid (its block size and how it splits the work: BLOCK sizes, num_warps, a split-K)"
_COMPILED = "torch.compile's autotuning (mode='max-autotune' tries other block sizes) or a larger batch"


def grid_knob(library: str | None, category: str | None) -> str | None:
    """The user-side knob that sizes a kernel's grid, or None where the library decides alone."""
    if not library:
        return _OWN
    if library.startswith("Triton"):
        return _COMPILED
    return _LIBRARY.get(category or "")
