"""Range checks of the numbers a Kineto trace gives, once its tables are built.

Every read path (the C scanner, the strict and lenient msgspec builders, the reference loop)
fills the same columns, and a number that does not fit its column (an int beyond int64, a
float out of range) is already refused there with a one-line error naming the field. What
fits the column but cannot be is decided here, per field, with numpy over whole columns:

- times: an error. A time beyond MAX_TS_US comes from no clock, and would make every interval
  and ratio of the trace meaningless.
- ids (correlation, External id, Sequence number, Fwd thread id) below zero: unknown (NONE,
  which is what a missing id reads as). An id only links events; one that cannot be links none.
- launch and size details (grid, block, registers, shared memory, bytes, blocks/warps per SM,
  achieved occupancy, [memory] byte counts): unknown, as when the trace does not record them
  (many events never do); the event's timing stays good. One warning counts what was dropped.
- pid, tid, device, stream: labels (a thread's text, a key to match on), never summed or
  multiplied: any value the column holds is kept.
- metadata (distributedInfo, deviceProperties, version keys; bounds in metadata.py): dropped as
  unknown with a warning, since each is optional and the events are still sound.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perflint.model import NONE, Trace

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Microseconds: no 64-bit clock counts beyond 2^64 (584,000 years). Times past float64's exact
# microseconds (2^53) lose precision but still order and subtract; past 2^64 they come from no
# clock at all.
MAX_TS_US = float(2**64)
# Bytes of one copy, allocation or memory total: 8 PiB, more than any machine has; the
# metrics sum and divide byte counts in float64, exact below 2^53.
MAX_BYTES = 2**53
# A launch's threads (grid x block, unknown dims counted as 1): more cannot run, and the
# kernel facts multiply these dims as Python ints that must stay within int64 for the reports.
MAX_THREADS = float(2**63)


def meta_int(v: Any, lo: int, hi: int) -> int | None:
    """`v` when it is an int (not a bool) in [lo, hi], else None."""
    if v.__class__ is int and lo <= v <= hi:
        return int(v)
    return None


def finite_time(x: Any) -> float | None:
    """A time given as a JSON number, as a float; None when it is no number or out of range."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        f = float(x)
    except OverflowError:  # an int beyond float64
        return None
    return f if math.isfinite(f) and abs(f) <= MAX_TS_US else None


def span_of(ts: Any, dur: Any) -> tuple[float, float] | None:
    """(start, end) of an event whose time and duration are numbers in range, else None."""
    t, d = finite_time(ts), finite_time(dur)
    return None if t is None or d is None else (t, t + d)


def check_columns(trace: Trace) -> None:
    """Ids, sizes and launch details that cannot be, made unknown; one warning counts them."""
    dropped: dict[str, int] = {}
    ops, rt, gpu, mem = trace.ops, trace.runtime, trace.gpu, trace.memory
    for tbl, col, what in (
        (ops, "ext_id", "External id"), (ops, "seq", "Sequence number"), (ops, "fwd_tid", "Fwd thread id"),
        (rt, "correlation", "correlation"), (rt, "ext_id", "External id"),
        (gpu, "correlation", "correlation"), (gpu, "ext_id", "External id"),
        (gpu, "regs", "registers per thread"),
    ):  # fmt: skip
        _keep_within(tbl, col, 0, INT64_MAX, NONE, what, dropped)
    _keep_within(gpu, "shmem", 0, INT32_MAX, NONE, "shared memory", dropped)
    # The comms table repeats its events' ids: the same ones are unknown there, counted once above.
    for col in ("ext_id", "correlation"):
        _keep_within(trace.comms, col, 0, INT64_MAX, NONE, col, {})
    if len(gpu):
        _launches(gpu, dropped)
        _keep_within(gpu, "nbytes", 0, MAX_BYTES, NONE, "bytes", dropped)
        _keep_within(gpu, "blocks_per_sm", 0, np.inf, np.nan, "blocks per SM", dropped)
        _keep_within(gpu, "warps_per_sm", 0, np.inf, np.nan, "warps per SM", dropped)
        _keep_within(gpu, "occupancy", 0, 100, np.nan, "est. achieved occupancy %", dropped)
    if len(mem):
        # Bytes is negative for a free; 0 is what a record without it reads as.
        _keep_within(mem, "nbytes", -MAX_BYTES, MAX_BYTES, 0, "[memory] Bytes", dropped)
        _keep_within(mem, "total_allocated", 0, MAX_BYTES, NONE, "Total Allocated", dropped)
        _keep_within(mem, "total_reserved", 0, MAX_BYTES, NONE, "Total Reserved", dropped)
    if dropped:
        parts = ", ".join(f"{n} {what}" for what, n in dropped.items())
        trace.warnings.append(f"out-of-range values ignored (taken as unknown): {parts}")
    # The model's launch columns are 32-bit, as every CUDA and HIP limit is: all values fit now.
    gpu.grid, gpu.block, gpu.shmem = (getattr(gpu, c).astype(np.int32, copy=False) for c in ("grid", "block", "shmem"))


def _keep_within(tbl: Any, col: str, lo: Any, hi: Any, unknown: Any, what: str, dropped: dict[str, int]) -> None:
    """Values of column `col` outside [lo, hi] set to `unknown` (which is itself kept: it is the
    column's missing value, just below the range or inside it)."""
    v = getattr(tbl, col)
    if len(v) == 0:
        return
    if v.dtype.kind == "f":  # NaN is the unknown: fmin/fmax skip it (all NaN: nothing to drop)
        if not (np.fmin.reduce(v) < lo or np.fmax.reduce(v) > hi):
            return
        bad = (v < lo) | (v > hi)
    else:
        if min(lo, unknown) <= v.min() and v.max() <= max(hi, unknown):  # two reductions: the usual case
            return
        bad = ((v < lo) | (v > hi)) & (v != unknown)
    _set_unknown(tbl, col, bad, unknown, what, dropped)


def _set_unknown(tbl: Any, col: str, bad: np.ndarray, unknown: Any, what: str, dropped: dict[str, int]) -> None:
    """Column `col` of `tbl` with the `bad` rows set to `unknown` (a new array: a column may be
    a read-only view of the scanner's buffer)."""
    n = int(np.count_nonzero(bad))
    if n:
        v = getattr(tbl, col)
        setattr(tbl, col, np.where(bad, unknown, v).astype(v.dtype))
        dropped[what] = dropped.get(what, 0) + n


def _launches(gpu: Any, dropped: dict[str, int]) -> None:
    """Grid and block both unknown (0) for a launch with a negative dimension, one beyond 32 bits
    (no GPU allows it) or MAX_THREADS or more threads."""
    grid, block = gpu.grid, gpu.block
    if grid.min() < 0 or block.min() < 0:
        ok = (grid >= 0).all(axis=1) & (block >= 0).all(axis=1)
    else:
        ok = None
    # The product of the dims' maxima bounds every launch: one reduction per column when it is small.
    most = [max(float(dims[:, j].max()), 1.0) for dims in (grid, block) for j in range(3)]  # per column: fast
    if max(most) > INT32_MAX:
        fits = (grid <= INT32_MAX).all(axis=1) & (block <= INT32_MAX).all(axis=1)
        ok = fits if ok is None else ok & fits
    if math.prod(most) >= MAX_THREADS:
        threads = np.ones(len(grid), dtype=np.float64)
        for dims in (grid, block):
            for j in range(3):
                threads *= np.maximum(dims[:, j], 1)
        ok = (threads < MAX_THREADS) if ok is None else ok & (threads < MAX_THREADS)
    if ok is None:
        return
    bad = ~ok
    n = int(np.count_nonzero(bad))
    if n:
        dropped["grid/block"] = n
        gpu.grid = np.where(bad[:, None], 0, grid)
        gpu.block = np.where(bad[:, None], 0, block)


__all__ = ["INT32_MAX", "INT64_MAX", "MAX_TS_US", "check_columns", "finite_time", "meta_int", "span_of"]
