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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from perflint.ids import distinct
from perflint.model import NONE
from perflint.readers.kineto.builder import ColumnBuilder, Rows
from perflint.readers.kineto.codes import CAT_CODES, G_CPR, G_GPU, G_TRACE, GROUP, KIND_OF, MEM_CODE, SIDE_OF, TABLE_GROUPS
from perflint.readers.kineto.columns import (
    COLLECTIVE,
    COMM_ROW,
    COMMS_SOURCES,
    DIM3,
    KIND,
    NAME,
    NONEMPTY_TEXT,
    NUMBER,
    RAW,
    ROW,
    SCANNER_COMM_ROWS,
    SCANNER_ROWS,
    SIDE,
    TABLES,
    TEXT,
    THREAD,
    TIME,
    Column,
    read_columns,
)

try:
    import perflint.readers.kineto._kscan as _kscan
except ImportError:  # not built (no compiler at install, or PERFLINT_NO_NATIVE=1): the msgspec path
    _kscan = None  # type: ignore[assignment]  # a module or None: built() says which
if _kscan is not None and (getattr(_kscan, "ROWS", None) != SCANNER_ROWS or getattr(_kscan, "COMM_ROWS", None) != SCANNER_COMM_ROWS):
    # Built from other sources (a stale build): its rows would be misread. The msgspec path
    # reads instead; tests/readers/test_kineto_spec.py fails on it.
    _kscan = None  # type: ignore[assignment]

I8, I32, I64, F64 = np.int8, np.int32, np.int64, np.float64
_NF, _NI, _NS, _NU = map(len, SCANNER_ROWS)
_NCI, _NCS = map(len, SCANNER_COMM_ROWS)
# The scanner's phase classes (its U "ph" row).
PH_X, PH_MEMORY = 1, 2


def built() -> bool:
    """The C scanner was compiled at install."""
    return _kscan is not None


def available() -> bool:
    """The C scanner is built and not turned off (PERFLINT_NATIVE=0)."""
    return _kscan is not None and os.environ.get("PERFLINT_NATIVE", "1") != "0"


class NativeSlice:
    """Events as the scanner's columns, with each event's group (codes.G_*), and the collective
    records of the events with a Collective name: their positions (`cev`, ascending) and values
    (`CI`, `CS`: one column per record)."""

    __slots__ = ("n", "F", "I", "S", "codes", "group", "odd", "strs", "raws", "pairs", "cev", "CI", "CS")

    def __init__(self, n: int, F: np.ndarray, I: np.ndarray, S: np.ndarray, codes: np.ndarray, group: np.ndarray,
                 odd: np.ndarray, strs: list[str], raws: list[bytes], pairs: list[tuple[Any, Any]],
                 cev: np.ndarray, CI: np.ndarray, CS: np.ndarray) -> None:  # fmt: skip
        self.n, self.F, self.I, self.S, self.codes, self.group, self.odd = n, F, I, S, codes, group, odd
        self.strs, self.raws, self.pairs = strs, raws, pairs
        self.cev, self.CI, self.CS = cev, CI, CS

    def __len__(self) -> int:
        return self.n

    def head(self, k: int) -> NativeSlice:
        c = int(np.searchsorted(self.cev, k))
        return NativeSlice(k, self.F[:, :k], self.I[:, :k], self.S[:, :k], self.codes[:k], self.group[:k], self.odd[:k],
                           self.strs, self.raws, self.pairs, self.cev[:c], self.CI[:, :c], self.CS[:, :c])  # fmt: skip


class Parts(list):  # type: ignore[type-arg]
    """A slice read in pieces, in file order: scanned columns, and the events the scanner left
    to msgspec between them (slices.add_slice takes each in turn)."""


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
    events with values the strict builder converts by its own rules."""
    g = ns.group
    bad = (g == G_CPR) | (g == G_TRACE) | ((g == G_GPU) & ns.odd)
    return int(bad.argmax()) if bad.any() else ns.n


def _columns(data: Any, lo: int, hi: int) -> tuple[NativeSlice, np.ndarray, int] | None:
    got = _kscan.scan(data, lo, hi)
    if got is None:
        return None
    n, fb, ib, sb, ub, ob, strs, raws, pairs, ceb, cib, csb, nxt = got
    F = np.frombuffer(fb, dtype=F64).reshape(_NF, n)
    I = np.frombuffer(ib, dtype=I64).reshape(_NI, n)  # noqa: E741
    S = np.frombuffer(sb, dtype=I32).reshape(_NS, n)
    U = np.frombuffer(ub, dtype=np.uint8).reshape(_NU, n)
    ph = U[ROW["ph"]]
    x = ph == PH_X
    cats = S[ROW["kind"]]  # the category's string id
    lut = np.zeros(len(strs) + 1, dtype=I8)  # the last slot: skip events' -1
    for c in distinct(cats[x]):
        lut[c] = CAT_CODES[strs[c]]
    codes = np.where(x, lut[cats], np.where(ph == PH_MEMORY, MEM_CODE, 0)).astype(I8)
    cev = np.frombuffer(ceb, dtype=I64)
    CI = np.frombuffer(cib, dtype=I64).reshape(len(cev), _NCI).T
    CS = np.frombuffer(csb, dtype=I32).reshape(len(cev), _NCS).T
    ns = NativeSlice(n, F, I, S, codes, GROUP[codes], U[ROW["odd"]].view(np.bool_), strs, raws, pairs, cev, CI, CS)
    return ns, np.frombuffer(ob, dtype=I64), nxt


def _column(ns: NativeSlice, col: Column, idx: np.ndarray, slut: np.ndarray, rlut: np.ndarray, tlut: np.ndarray) -> np.ndarray:
    f = col.field
    rule = f.rule
    out: np.ndarray
    if f.record:  # a collective record's value: `idx` are events with one
        pos = np.searchsorted(ns.cev, idx)
        if rule in (NAME, TEXT, NONEMPTY_TEXT):
            out = slut[ns.CS[COMM_ROW[f.name]][pos]]
        else:
            out = ns.CI[COMM_ROW[f.name]][pos].astype(f.dtype, copy=False)
    elif rule == KIND:
        out = KIND_OF[ns.codes[idx]]
    elif rule == SIDE:
        out = SIDE_OF[ns.codes[idx]]
    elif rule == THREAD:
        out = tlut[ns.S[ROW[f.name]][idx]]
    elif rule == RAW:
        out = rlut[ns.S[ROW[f.name]][idx]]
    elif rule in (NAME, TEXT, NONEMPTY_TEXT):  # the scanner left "" out of a NONEMPTY_TEXT row
        out = slut[ns.S[ROW[f.name]][idx]]
    elif rule in (TIME, NUMBER):
        out = ns.F[ROW[f.name]][idx]
    elif rule == DIM3:
        r = ROW[f.rows[0]]
        out = np.ascontiguousarray(ns.I[r : r + 3][:, idx].T)
    else:  # ID, COUNT, STREAM, DEVICE
        out = ns.I[ROW[f.name]][idx].astype(f.dtype, copy=False)
    return out


# Per table: its columns, and its string, raw and thread rows.
_READ = {t: read_columns(t) for t in TABLES}
_STRING_ROWS = {
    t: [ROW[c.field.name] for c in cols if c.field.rule in (NAME, TEXT, NONEMPTY_TEXT) and not c.field.record] for t, cols in _READ.items()
}
_COMM_STRINGS = [COMM_ROW[c.field.name] for c in _READ["comms"] if c.field.record and c.field.rule in (NAME, TEXT, NONEMPTY_TEXT)]
_RAW_ROWS = {t: [ROW[c.field.name] for c in cols if c.field.rule == RAW] for t, cols in _READ.items()}
_THREAD_ROWS = {t: [ROW[c.field.name] for c in cols if c.field.rule == THREAD] for t, cols in _READ.items()}
_COLLECTIVE_ROW = ROW[COLLECTIVE.name]


def add_native(b: ColumnBuilder, ns: NativeSlice) -> None:
    """Append a scanned slice to `b`: the tables the strict builder makes of the same events."""
    n = ns.n
    if n == 0:
        b.commit(0, {})
        return
    S, group = ns.S, ns.group
    rows_of = {t: np.flatnonzero(group == g) for t, g in TABLE_GROUPS.items()}
    rows_of = {t: idx for t, idx in rows_of.items() if len(idx)}
    named = [idx for t, idx in rows_of.items() if t in COMMS_SOURCES]
    if named:
        comms = np.sort(np.concatenate(named)) if len(named) > 1 else named[0]
        comms = comms[S[_COLLECTIVE_ROW][comms] != NONE]
        if len(comms):
            rows_of["comms"] = comms

    def used(which: dict[str, list[int]], records: Sequence[int] = ()) -> np.ndarray:
        parts = [S[r][idx] for t, idx in rows_of.items() for r in which[t]]
        if records and "comms" in rows_of:
            pos = np.searchsorted(ns.cev, rows_of["comms"])
            parts += [ns.CS[r][pos] for r in records]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=I32)

    # Intern only what the tables hold, as the strict builder does (unused strings would stay
    # in the trace's string table).
    ids = b.string_ids
    slut = _lut(used(_STRING_ROWS, _COMM_STRINGS), ns.strs, ids.__getitem__)
    rlut = _lut(used(_RAW_ROWS), ns.raws, ids.__getitem__)
    tlut = _lut(used(_THREAD_ROWS), ns.pairs, b.thread_ids.__getitem__)
    rows: dict[str, Rows] = {}
    for t, idx in rows_of.items():
        rows[t] = (idx, {c.name: _column(ns, c, idx, slut, rlut, tlut) for c in _READ[t]})
    b.commit(n, rows)


def _lut(local: np.ndarray, keys: list[Any], global_id: Callable[[Any], int]) -> np.ndarray:
    """Builder id by the scanner's local id (its last slot: the scanner's -1, none)."""
    lut = np.full(len(keys) + 1, NONE, dtype=I32)
    for k in distinct(local):
        if k >= 0:
            lut[k] = global_id(keys[k])
    return lut


__all__ = ["MAX_PIECES", "NativeSlice", "Parts", "add_native", "available", "built", "scan"]
