"""Roofline fields on `op_groups`: the device's dense Tensor Core peak for the op's math dtype
(metrics/devices.py), the GEMM's or convolution's least memory traffic, the roof it can attain
(the lower of the compute peak and intensity x bandwidth) and the share of it the op's forward
kernels reached.

The least traffic reads every operand and writes the output once (GEMM: batch*(M*K + K*N + M*N)
elements; convolution: input, filter and output tensors) in the math dtype's size (tf32: 4 bytes):
a kernel moves at least that much, so intensity = FLOPs / least bytes is an upper bound and the
attainable roof min(peak, intensity x bandwidth) one the op cannot beat. The achieved rate is the
forward FLOPs over the forward GEMM / convolution kernels' time (`fwd_matrix_time_us`): the copies,
casts and bias kernels under the op are not the matrix math, and backward kernels have other shapes.
"""

from __future__ import annotations

import math
from typing import Any

from perflint.facts import Context, Fields, Row, enricher, typed
from perflint.facts._common import primary_device
from perflint.metrics.devices import Match, device_part
from perflint.metrics.dtypes import dtype_size
from perflint.metrics.shapes import op_shape

TILE = 128  # output tile edge of the large-GEMM kernels cuBLAS / hipBLASLt pick for big problems

FIELDS: Fields = {
    "device_part": typed("the device's part in the peak table (docs/roofline.md), null when unknown or ambiguous", "text"),
    "peak_note": typed("why the device has no peaks (unknown or ambiguous part), else how the part was chosen", "text"),
    "tc_peak_tflops": typed("dense Tensor Core (matrix core) peak of the device for align_dtype, TFLOP/s (null: no such number)", "number"),
    "bandwidth_gbps": typed("the device's peak memory bandwidth, GB/s", "number"),
    "min_bytes": "least memory traffic per call: every operand read and the output written once, in align_dtype's size",
    "intensity": typed("flops / min_bytes, FLOPs per byte (an upper bound)", "number"),
    "attainable_tflops": typed("min(tc_peak_tflops, intensity x bandwidth): the roof the op's shape allows", "number"),
    "matrix_tflops": typed("flops x count / fwd_matrix_time_us: the rate of the op's forward GEMM / convolution kernels, TFLOP/s", "number"),
    "pct_of_attainable": typed("matrix_tflops as % of attainable_tflops", "number"),
    "tiles": typed("128x128 output tiles per call (ceil(M/128) x ceil(N/128) x batch)", "integer"),
    "sm_count": typed("SMs / CUs of the device", "integer"),
    "ideal_call_us": "time per call at the attainable roof, µs",
    "fwd_matrix_share_pct": "fwd_matrix_time_us as % of all kernel time in the analysis steps",
}


def _device_part(ctx: Context) -> Match:
    return device_part(primary_device(ctx))


def _part(ctx: Context) -> Match:
    return ctx.memo.get(_device_part, ctx)


def _min_elems(row: Row) -> float | None:
    conv: dict[str, Any] | None = row.get("conv")
    if conv is not None:
        spatial = [conv[k] for k in ("D", "H", "W") if k in conv]
        filt = [conv[k] for k in ("T", "R", "S") if k in conv]
        out = [conv[k] for k in ("Z", "P", "Q") if k in conv]
        n, c, k, g = conv["N"], conv["C"], conv["K"], conv["groups"]
        return float(n * c * math.prod(spatial) + k * (c // g) * math.prod(filt) + n * k * math.prod(out))
    m, n, k, b = row.get("m"), row.get("n"), row.get("k"), row.get("batch") or 1
    if m is None or n is None or k is None:
        return None
    return float(b * (m * k + k * n + m * n))


@enricher("op_groups", fields=FIELDS)
def op_roofline(ctx: Context, row: Row) -> Row:
    out: Row = dict.fromkeys(FIELDS)
    match = _part(ctx)
    part = match.part
    out["peak_note"] = match.reason
    dev = primary_device(ctx)
    sms = (part.sm_count if part else None) or (dev.sm_count if dev else None)
    out["sm_count"] = sms
    ktime, fmat, share = row.get("kernel_time_us") or 0.0, row.get("fwd_matrix_time_us") or 0.0, row.get("kernel_share_pct")
    out["fwd_matrix_share_pct"] = share * fmat / ktime if ktime > 0 and share is not None else None
    m, n, b = row.get("m"), row.get("n"), row.get("batch") or 1
    if m is not None and n is not None:
        out["tiles"] = -(-m // TILE) * -(-n // TILE) * b
    if part is None:
        return out
    out["device_part"] = part.key
    dtype = row.get("align_dtype")
    peak = part.peak(dtype, True)
    bw = part.bandwidth_gbps
    out["tc_peak_tflops"], out["bandwidth_gbps"] = peak, bw
    flops, size, elems = row.get("flops"), dtype_size(dtype), _min_elems(row)
    if peak is None or bw is None or not flops or size is None or not elems:
        return out
    nbytes = elems * size
    intensity = flops / nbytes
    attainable = min(peak, intensity * bw / 1e3)  # FLOP/B x GB/s = 1e9 FLOP/s = 1e-3 TFLOP/s
    out.update(min_bytes=int(nbytes), intensity=intensity, attainable_tflops=attainable, ideal_call_us=flops / attainable / 1e6)
    if fmat > 0 and row.get("count"):
        out["matrix_tflops"] = achieved = flops * row["count"] / fmat / 1e6
        out["pct_of_attainable"] = 100.0 * achieved / attainable
    return out


KERNEL_FIELDS = {
    "roof_pct": "the kernel's speed as % of the roof its op's shape allows on the device (memory or compute: min(peak, intensity x bandwidth)), from the mean launch time; null when the op's shape or the device's peaks are unknown",
}


@enricher("kernel_groups", fields=KERNEL_FIELDS)
def kernel_roof(ctx: Context, row: Row) -> Row:
    """How close a GEMM or convolution kernel runs to its roof: at the memory or compute roof its
    grid is not what holds it back."""
    op, mean = row.get("op"), row.get("mean_us")
    if not op or not mean or row.get("category") not in ("gemm", "conv"):
        return {"roof_pct": None}
    shape = op_shape(op, row.get("input_dims"))
    part = _part(ctx).part
    dtype = row.get("dtype")
    if shape is None or part is None or not shape.flops:
        return {"roof_pct": None}
    peak, bw, size = part.peak(dtype, True), part.bandwidth_gbps, dtype_size(dtype)
    elems = _min_elems({"conv": shape.conv, "m": shape.m, "n": shape.n, "k": shape.k, "batch": shape.batch})
    if peak is None or bw is None or size is None or not elems:
        return {"roof_pct": None}
    attainable = min(peak, shape.flops / (elems * size) * bw / 1e3)
    return {"roof_pct": 100.0 * shape.flops / attainable / 1e6 / float(mean)}
