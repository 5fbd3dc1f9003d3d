"""Columns of a slice from the optional C scanner (`_kscan.c`), when it is built.

The scanner reads a slice's events straight into columns: no Python object per event, which is
where the msgspec path spends most of its time. It takes only what it is sure of and
stops at any other event (see the C file); so does `scan` here at what the columns below do not
cover (profiler ranges, the profiler's own span, a GPU event with a value the strict builder
converts by its own rules). msgspec reads that event (or, after invalid JSON, the rest of the
slice), and the scanner goes on after it, so the tables are the same either way:
tests/readers/test_native_scan.py checks that on the corpus, on generated traces and on broken JSON.

PERFLINT_NATIVE=0 turns the scanner off (the pure-Python reader, as without a compiler).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from perflint.ids import distinct
from perflint.model import NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.kineto.codes import C_OP, MEM_CODE
from perflint.readers.kineto.fast_add import _CODES, _GPU_KIND, _GROUP, G_CPR, G_GPU, G_MEM, G_OPS, G_PYFN, G_RT, G_TRACE

try:
    from perflint.readers.kineto import _kscan
except ImportError:  # not built (no compiler at install, or PERFLINT_NO_NATIVE=1): the msgspec path
    _kscan = None  # type: ignore[assignment]  # a module or None: built() says which

if TYPE_CHECKING:
    from perflint.readers.kineto.reader import ColumnBuilder

I8, I32, I64, F64 = np.int8, np.int32, np.int64, np.float64
# Column rows of the scanner's result, in the order of the enums in _kscan.c.
F_TS, F_DUR, F_BPS, F_WPS, F_OCC = range(5)
I_EXT, I_SEQ, I_FWD, I_CORR, I_DEV, I_STREAM, I_REGS, I_SHMEM, I_NBYTES, I_G0, I_G1, I_G2, I_B0, I_B1, I_B2 = range(15)
I_MEM_BYTES, I_TOTAL_ALLOC, I_TOTAL_RES, I_DEV_TYPE, I_DEV_ID = range(15, 20)
S_CAT, S_NAME, S_PAIR, S_DIMS, S_TYPES, S_STACK, S_COLL, S_CONC = range(8)
U_PH, U_ODD = range(2)
_NF, _NI, _NS, _NU = 5, 20, 8, 2
PH_X, PH_MEMORY = 1, 2


def built() -> bool:
    """The C scanner was compiled at install."""
    return _kscan is not None


def available() -> bool:
    """The C scanner is built and not turned off (PERFLINT_NATIVE=0)."""
    return _kscan is not None and os.environ.get("PERFLINT_NATIVE", "1") != "0"


class NativeSlice:
    """Events as the scanner's columns, with each event's group (fast_add G_*)."""

    __slots__ = ("n", "F", "I", "S", "codes", "group", "odd", "strs", "raws", "pairs")

    def __init__(self, n: int, F: np.ndarray, I: np.ndarray, S: np.ndarray, codes: np.ndarray, group: np.ndarray,
                 odd: np.ndarray, strs: list[str], raws: list[bytes], pairs: list[tuple[Any, Any]]) -> None:  # fmt: skip
        self.n, self.F, self.I, self.S, self.codes, self.group, self.odd = n, F, I, S, codes, group, odd
        self.strs, self.raws, self.pairs = strs, raws, pairs

    def __len__(self) -> int:
        return self.n

    def head(self, k: int) -> NativeSlice:
        return NativeSlice(k, self.F[:, :k], self.I[:, :k], self.S[:, :k], self.codes[:k], self.group[:k], self.odd[:k],
                           self.strs, self.raws, self.pairs)  # fmt: skip


class Parts(list):  # type: ignore[type-arg]
    """A slice read in pieces, in file order: scanned columns, and the events the scanner left
    to msgspec between them (ColumnBuilder.add takes each in turn)."""


# A slice with more events than this left to msgspec is decoded by it whole: each piece costs a
# scanner call and some numpy work, and a slice full of odd events gains nothing from the scanner.
MAX_PIECES = 8
_WS = b" \t\r\n"


def scan(data: Any, lo: int, hi: int, decode: Callable[[int, int], Any]) -> NativeSlice | Parts | None:
    """The events of data[lo:hi] (whole events, comma-separated): a NativeSlice, or Parts when
    some events needed msgspec (`decode(lo, hi)`: its result for such a range, None when the
    range does not decode). None: let msgspec decode the slice whole."""
    parts = Parts()
    pieces = 0
    pos = lo
    while pos < hi:
        cols = _columns(data, pos, hi)
        if cols is None:  # the scanner leaves the range to msgspec
            return None
        ns, offs, nxt = cols
        k = _first_refused(ns)
        if k < ns.n:  # an event only the Python builder reads: msgspec takes it alone
            if k:
                parts.append(ns.head(k))
            start, pos = int(offs[k]), int(offs[k + 1])
            end = _trim(data, start, pos)
        else:
            if ns.n:
                parts.append(ns)
            start = int(offs[ns.n])
            if start >= hi:
                break
            # refused by the scanner; nxt < 0: it stopped on something it does not check, and
            # msgspec takes the rest (and says what is wrong with it)
            end = hi if nxt < 0 else _trim(data, start, nxt)
            pos = hi if nxt < 0 else nxt
        pieces += 1
        if pieces > MAX_PIECES:
            return None
        piece = decode(start, end)
        if piece is None:
            return None
        parts.append(piece)
    if len(parts) == 1 and isinstance(parts[0], NativeSlice):
        return parts[0]
    return parts


def _trim(data: Any, lo: int, hi: int) -> int:
    """The end of the one event in data[lo:hi] (which may end with whitespace and a comma)."""
    while hi > lo and data[hi - 1] in _WS:
        hi -= 1
    if hi > lo and data[hi - 1] == 0x2C:
        hi -= 1
        while hi > lo and data[hi - 1] in _WS:
            hi -= 1
    return hi


def _first_refused(ns: NativeSlice) -> int:
    """The first event the columns do not take: profiler ranges, the profiler's own span, and GPU
    events with values fast_add converts by its own rules."""
    g = ns.group
    bad = (g == G_CPR) | (g == G_TRACE) | ((g == G_GPU) & ns.odd)
    return int(bad.argmax()) if bad.any() else ns.n


def _columns(data: Any, lo: int, hi: int) -> tuple[NativeSlice, np.ndarray, int] | None:
    got = _kscan.scan(data, lo, hi)
    if got is None:
        return None
    n, fb, ib, sb, ub, ob, strs, raws, pairs, nxt = got
    F = np.frombuffer(fb, dtype=F64).reshape(_NF, n)
    I = np.frombuffer(ib, dtype=I64).reshape(_NI, n)  # noqa: E741
    S = np.frombuffer(sb, dtype=I32).reshape(_NS, n)
    U = np.frombuffer(ub, dtype=np.uint8).reshape(_NU, n)
    ph = U[U_PH]
    x = ph == PH_X
    cats = S[S_CAT]
    lut = np.zeros(len(strs) + 1, dtype=I8)  # the last slot: skip events' -1
    for c in distinct(cats[x]):
        lut[c] = _CODES[strs[c]]
    codes = np.where(x, lut[cats], np.where(ph == PH_MEMORY, MEM_CODE, 0)).astype(I8)
    ns = NativeSlice(n, F, I, S, codes, _GROUP[codes], U[U_ODD].view(np.bool_), strs, raws, pairs)
    return ns, np.frombuffer(ob, dtype=I64), nxt


def add_native(b: ColumnBuilder, ns: NativeSlice) -> None:
    """Append a scanned slice to `b`: the tables fast_add.add_strict makes of the same events."""
    n = ns.n
    if n == 0:
        return
    base = b.n_events
    F, I, S, group, codes = ns.F, ns.I, ns.S, ns.group, ns.codes  # noqa: E741
    ops, rt, gpu, pyfn, mem = (np.flatnonzero(group == g) for g in (G_OPS, G_RT, G_GPU, G_PYFN, G_MEM))
    # Intern only what the tables hold, as the strict builder does (unused strings would stay
    # in the trace's string table).
    ids, strs = b.ids, ns.strs
    slut = np.full(len(strs) + 1, NONE, dtype=I32)  # the last slot: the scanner's -1 (none)
    used = np.concatenate((S[S_NAME][(group >= G_OPS) & (group <= G_PYFN)], S[S_STACK][ops], S[S_COLL][gpu]))
    for k in distinct(used):
        if k >= 0:
            slut[k] = ids[strs[k]]
    rlut = np.full(len(ns.raws) + 1, NONE, dtype=I32)
    if len(ops):
        raws = ns.raws
        for k in distinct(np.concatenate((S[S_DIMS][ops], S[S_TYPES][ops], S[S_CONC][ops]))):
            if k >= 0:
                rlut[k] = ids[raws[k]]
    tlut = np.full(len(ns.pairs) + 1, NONE, dtype=I32)
    tids, pairs = b.thread_ids, ns.pairs
    for k in distinct(S[S_PAIR][(group != G_GPU) & (group != 0)]):  # GPU rows have no thread
        tlut[k] = tids[pairs[k]]
    name, pair = S[S_NAME], S[S_PAIR]
    ts, dur, ext = F[F_TS], F[F_DUR], I[I_EXT]
    b.n_events += n
    if len(ops):
        b.ops.add(
            ops + base,
            kind=np.where(codes[ops] == C_OP, OP_CPU, OP_ANNOTATION).astype(I8),
            ts=ts[ops],
            dur=dur[ops],
            ext_id=ext[ops],
            seq=I[I_SEQ][ops],
            fwd_tid=I[I_FWD][ops],
            name=slut[name[ops]],
            thread=tlut[pair[ops]],
            dims=rlut[S[S_DIMS][ops]],
            types=rlut[S[S_TYPES][ops]],
            concrete=rlut[S[S_CONC][ops]],
            stack=slut[S[S_STACK][ops]],
        )
    if len(rt):
        b.rt.add(
            rt + base,
            ts=ts[rt],
            dur=dur[rt],
            correlation=I[I_CORR][rt],
            ext_id=ext[rt],
            name=slut[name[rt]],
            thread=tlut[pair[rt]],
        )
    if len(gpu):
        b.gpu.add(
            gpu + base,
            kind=_GPU_KIND[codes[gpu]],
            device=I[I_DEV][gpu].astype(I32),
            stream=I[I_STREAM][gpu],
            ts=ts[gpu],
            dur=dur[gpu],
            correlation=I[I_CORR][gpu],
            ext_id=ext[gpu],
            grid=np.ascontiguousarray(I[I_G0 : I_G2 + 1][:, gpu].T),
            block=np.ascontiguousarray(I[I_B0 : I_B2 + 1][:, gpu].T),
            regs=I[I_REGS][gpu].astype(I32),
            shmem=I[I_SHMEM][gpu],
            blocks_per_sm=F[F_BPS][gpu],
            warps_per_sm=F[F_WPS][gpu],
            occupancy=F[F_OCC][gpu],
            nbytes=I[I_NBYTES][gpu],
            name=slut[name[gpu]],
            collective=slut[S[S_COLL][gpu]],
        )
    if len(pyfn):
        b.pyfn.add(pyfn + base, ts=ts[pyfn], dur=dur[pyfn], name=slut[name[pyfn]], thread=tlut[pair[pyfn]])
    if len(mem):
        b.mem.add(
            mem + base,
            thread=tlut[pair[mem]],
            ts=ts[mem],
            nbytes=I[I_MEM_BYTES][mem],
            total_allocated=I[I_TOTAL_ALLOC][mem],
            total_reserved=I[I_TOTAL_RES][mem],
            device_type=I[I_DEV_TYPE][mem].astype(np.int16),
            device_id=I[I_DEV_ID][mem].astype(np.int16),
        )


__all__ = ["MAX_PIECES", "NativeSlice", "Parts", "add_native", "available", "built", "scan"]
