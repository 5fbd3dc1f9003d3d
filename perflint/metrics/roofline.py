"""Roofline of kernels and kernel groups: achieved TFLOP/s and GB/s against the device's peaks
(metrics/devices.py), the share of the binding roof, and what bounds the kernel.

A kernel doing F FLOPs and moving B bytes of device memory in T µs achieves F/T FLOP/s and B/T
bytes/s. Its arithmetic intensity I = F/B against the ridge point R = peak FLOP/s / peak bytes/s
says which roof binds: I >= R compute, I < R memory (a kernel with bytes and no FLOPs is memory
work). `pct_of_peak` is the achieved share of the binding roof.

"latency" replaces both when no roof binds: a kernel shorter than LATENCY_US (launch, ramp-up and
tail of one wave dominate: it cannot approach either roof), or one reaching less than
LATENCY_PCT of both roofs (its time goes to something neither roof measures: dependent memory
latency, a grid too small to fill the device, synchronisation). A kernel without a known roof on
its side (no peak for its dtype, no FLOP or byte count) has no bound (NaN / None).

Everything takes numpy arrays (one entry per kernel or per group); peaks are per entry, so a trace
mixing dtypes passes each kernel its own peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.metrics.devices import Part, device_part
from perflint.model import Trace

LATENCY_US = 5.0  # shorter kernels cannot approach a roof
LATENCY_PCT = 10.0  # below this share of both roofs, neither binds
BOUNDS = ("compute", "memory", "latency")


@dataclass
class Roofline:
    tflops: np.ndarray  # achieved TFLOP/s (NaN without FLOPs)
    gbps: np.ndarray  # achieved GB/s (NaN without bytes)
    intensity: np.ndarray  # FLOPs per byte (NaN without both)
    ridge: np.ndarray  # FLOPs per byte where the roofs meet (NaN without both peaks)
    pct_compute: np.ndarray  # % of the compute roof
    pct_memory: np.ndarray  # % of the memory roof
    pct_of_peak: np.ndarray  # % of the binding roof
    bound: list[str | None]  # BOUNDS, or None when it cannot be told


def _f(x: np.ndarray | list[float | None] | float) -> np.ndarray:
    a = np.asarray(x, dtype=object if isinstance(x, list) else None)
    if a.dtype == object:
        a = np.asarray([np.nan if v is None else v for v in a.tolist()], dtype=np.float64)
    return a.astype(np.float64)


def roofline(flops: np.ndarray, nbytes: np.ndarray, dur_us: np.ndarray, peak_tflops: np.ndarray, bandwidth_gbps: np.ndarray) -> Roofline:
    """Per entry: FLOPs, bytes, duration (µs), the compute peak (TFLOP/s) for its dtype and
    units, the memory bandwidth (GB/s). NaN (or None) marks an unknown; a zero duration gives
    NaN rates."""
    f, b, t = _f(flops), _f(nbytes), _f(dur_us)
    pk, bw = _f(peak_tflops), _f(bandwidth_gbps)
    f, b, t, pk, bw = np.broadcast_arrays(f, b, t, pk, bw)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok_t = t > 0
        tflops = np.where(ok_t, f / t / 1e6, np.nan)  # FLOP/µs = 1e6 FLOP/s; /1e12 -> TFLOP/s
        gbps = np.where(ok_t, b / t / 1e3, np.nan)  # B/µs = 1e6 B/s; /1e9 -> GB/s
        intensity = np.where(b > 0, f / b, np.nan)
        ridge = np.where((pk > 0) & (bw > 0), pk * 1e3 / bw, np.nan)  # (TFLOP/s)/(GB/s) = 1e3 FLOP/B
        pct_c = np.where(pk > 0, 100.0 * tflops / pk, np.nan)
        pct_m = np.where(bw > 0, 100.0 * gbps / bw, np.nan)
    memory_only = (b > 0) & ~(f > 0)  # bytes and no FLOPs: memory work whatever the ridge
    compute = (intensity >= ridge) & ~memory_only
    memory = (intensity < ridge) | memory_only
    # One roof known (the other side unknown): it is the only one that can bind.
    compute |= np.isnan(ridge) & ~np.isnan(pct_c) & np.isnan(pct_m)
    memory |= np.isnan(ridge) & np.isnan(pct_c) & ~np.isnan(pct_m) & ~compute
    compute &= ok_t
    memory &= ok_t & ~compute
    pct = np.where(compute, pct_c, np.where(memory, pct_m, np.nan))
    both_low = np.fmax(np.nan_to_num(pct_c, nan=-1.0), np.nan_to_num(pct_m, nan=-1.0))
    known = compute | memory
    latency = known & ((t < LATENCY_US) | ((both_low >= 0) & (both_low < LATENCY_PCT)))
    bound: list[str | None] = [
        "latency" if la else "compute" if c else "memory" if m else None for la, c, m in zip(latency.tolist(), compute.tolist(), memory.tolist())
    ]
    return Roofline(tflops, gbps, intensity, ridge, pct_c, pct_m, pct, bound)


def group_roofline(
    gid: np.ndarray, n_groups: int, flops: np.ndarray, nbytes: np.ndarray, dur_us: np.ndarray, peak_tflops: np.ndarray, bandwidth_gbps: np.ndarray
) -> Roofline:
    """`roofline` of groups of kernels (an op's kernels, for `perflint ops`): FLOPs, bytes and time
    summed per group id. A group whose kernels have different peaks (dtypes, units) gets the
    peak that takes its FLOPs the same time at peak as its kernels would each at their own:
    sum(F) / sum(F_i / peak_i). Unknown FLOPs or bytes of one kernel make the group's unknown."""
    g = np.asarray(gid, dtype=np.int64)
    f, b, t = _f(flops), _f(nbytes), _f(dur_us)
    pk, bw = np.broadcast_to(_f(peak_tflops), f.shape), np.broadcast_to(_f(bandwidth_gbps), f.shape)

    def total(x: np.ndarray) -> np.ndarray:
        s = np.bincount(g, weights=np.nan_to_num(x), minlength=n_groups)
        bad = np.bincount(g, weights=np.isnan(x).astype(np.float64), minlength=n_groups)
        return np.where(bad > 0, np.nan, s)

    with np.errstate(divide="ignore", invalid="ignore"):
        ft = total(f)
        at_peak = total(np.where(f > 0, f / pk, 0.0))  # FLOPs / (TFLOP/s): time at peak, scaled
        g_pk = np.where(at_peak > 0, ft / at_peak, np.nan)
        bt = total(b)
        at_bw = total(np.where(b > 0, b / bw, 0.0))
        g_bw = np.where(at_bw > 0, bt / at_bw, np.nan)
    return roofline(ft, bt, total(t), g_pk, g_bw)


def kernel_peaks(t: Trace, devices: list[int], dtypes: list[str | None], tensor_cores: list[bool | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel (its device id, dtype, Tensor Core verdict): the compute peak (TFLOP/s) and the
    memory bandwidth (GB/s) of its device's part, NaN where the part or the number is unknown.
    Resolved once per distinct (device, dtype, units)."""
    parts: dict[int, Part | None] = {}
    seen: dict[tuple[int, str | None, bool | None], tuple[float, float]] = {}
    pk = np.full(len(devices), np.nan)
    bw = np.full(len(devices), np.nan)
    for i, key in enumerate(zip(devices, dtypes, tensor_cores)):
        got = seen.get(key)
        if got is None:
            dev, dtype, tc = key
            if dev not in parts:
                parts[dev] = device_part(t.device(dev)).part
            part = parts[dev]
            p = part.peak(dtype, tc) if part else None
            b = part.bandwidth_gbps if part else None
            got = seen[key] = (np.nan if p is None else p, np.nan if b is None else b)
        pk[i], bw[i] = got
    return pk, bw

