"""Columns from events decoded with the strict schema (schema.StrictEvent), one column at a time.

The strict decode already gives each typed field its final Python type (floats for times, ints
for ids, defaults for missing keys), so such a column is a list comprehension and one
`np.fromiter`: no per-value conversion in Python. Interning is one dict lookup per value (a new
key is added by the dict's __missing__). The untyped fields (columns.Field.strict is Any) get a
type check and, when odd, the lenient builder's per-value rule.

The tables equal what the lenient builder gives for the same bytes; a value the columns cannot
hold (an id beyond the column's dtype) raises `StrictMiss` before the builder changes, and the
caller redoes the slice the lenient way, which words the error. Interning may have run by then:
it added strings and threads the lenient pass adds anyway (ids are renumbered at the end, so
their order does not matter).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from perflint.model import NONE
from perflint.readers.kineto.builder import ColumnBuilder, CounterRow, Rows
from perflint.readers.kineto.codes import CAT_CODES, G_CPR, G_MEM, G_TRACE, GROUP, KIND_OF, SIDE_OF, TABLE_GROUPS, int_or, stream_of
from perflint.readers.kineto.columns import (
    COLLECTIVE,
    COMMS_SOURCES,
    COMPLETE_TABLES,
    COUNT,
    DEVICE,
    DIM3,
    ID,
    KIND,
    NAME,
    NONEMPTY_TEXT,
    NUMBER,
    RAW,
    SIDE,
    STREAM,
    STRING_RULES,
    TEXT,
    THREAD,
    TIME,
    Column,
    Field,
    read_columns,
)
from perflint.readers.kineto.getters import getter
from perflint.readers.kineto.lenient import table_columns
from perflint.readers.kineto.ranges import span_of

I8, I32, I64, F64 = np.int8, np.int32, np.int64, np.float64
_NAN = float("nan")


class StrictMiss(Exception):
    """A strictly decoded slice has a value only the lenient path handles (or words as an error)."""


# Attributes are read with list comprehensions (getters.getter), and np.fromiter over the list
# adds one C loop.


def _take(events: list[Any], idx: np.ndarray) -> list[Any] | tuple[Any, ...]:
    if len(idx) == 1:
        return [events[int(idx[0])]]
    return itemgetter(*idx.tolist())(events)  # type: ignore[no-any-return]


def _col(values: Any, dtype: Any, m: int) -> np.ndarray:
    return np.fromiter(values, dtype=dtype, count=m)


_INT = frozenset((int,))
_NUM = frozenset((int, float))


def _only(vals: list[Any], types: frozenset[type]) -> bool:
    return set(map(type, vals)) <= types


class _Slice:
    """The events of one table of a strictly decoded slice, and the builder's interners."""

    def __init__(self, b: ColumnBuilder, evs: Any, codes: np.ndarray) -> None:
        self.evs, self.codes, self.m = evs, codes, len(evs)
        self.sid = b.string_ids.__getitem__  # a new string gets an id in StringIds.__missing__
        self.tid = b.thread_ids.__getitem__

    @cached_property
    def args(self) -> list[Any]:
        return _ARGS(self.evs)

    def strings(self, keys: Any) -> np.ndarray:
        return _col(map(self.sid, keys), I32, self.m)


_ARGS, _NAMES, _PIDS, _TIDS = getter("args"), getter("name"), getter("pid"), getter("tid")
# A column's reader over a _Slice, made once per column from its field (getters bound).
_Read = Callable[[_Slice], np.ndarray]


def _kind(f: Field) -> _Read:
    def read(s: _Slice) -> np.ndarray:
        kinds: np.ndarray = KIND_OF[s.codes]
        return kinds

    return read


def _side(f: Field) -> _Read:
    def read(s: _Slice) -> np.ndarray:
        sides: np.ndarray = SIDE_OF[s.codes]
        return sides

    return read


_INT64_MAX = (1 << 63) - 1


def _count(f: Field) -> _Read:
    """A count as every builder reads it (codes.count_or_none): a non-negative JSON integer."""
    get = getter(f.attrs[0])

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        return _col((v if v.__class__ is int and 0 <= v <= _INT64_MAX else NONE for v in vals), I64, s.m)

    return read


def _name(f: Field) -> _Read:
    return lambda s: s.strings(_NAMES(s.evs))


def _thread(f: Field) -> _Read:
    # zip reuses its result tuple when the lookup dropped it: no (pid, tid) tuple per event.
    return lambda s: _col(map(s.tid, zip(_PIDS(s.evs), _TIDS(s.evs))), I32, s.m)


def _time(f: Field) -> _Read:
    get = getter(f.attrs[0])
    return lambda s: _col(get(s.evs), F64, s.m)


def _id(f: Field) -> _Read:
    """A typed id; all defaults (the one object, counted by identity in C) skip the conversion.
    With several spellings the first is Optional: where it is missing, the next one counts."""
    first, *others = map(getter, f.attrs)
    dtype, default = f.dtype, f.default

    def read(s: _Slice) -> np.ndarray:
        m = s.m
        vals = first(s.args)
        if others:
            try:
                return _col(vals, dtype, m)
            except TypeError:  # some lack the first spelling (old traces say "external id")
                for get in others:
                    vals = [v if v is not None else w for v, w in zip(vals, get(s.args))]
        if vals.count(default) == m:
            return np.full(m, default, dtype=dtype)
        return _col(vals, dtype, m)

    return read


def _untyped_id(f: Field) -> _Read:
    """An untyped id as the lenient builder reads it (missing: the default)."""
    get, dtype, default = getter(f.attrs[0]), f.dtype, f.default

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if not _only(vals, _INT):
            vals = [v if v.__class__ is int else default if v is None else int_or(v, default) for v in vals]
        return _col(vals, dtype, s.m)

    return read


def _untyped_number(f: Field) -> _Read:
    """An untyped number as the lenient builder reads it (missing: the NaN default)."""
    get = getter(f.attrs[0])

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if not _only(vals, _NUM):
            vals = [float(v) if v.__class__ is float or v.__class__ is int else _NAN for v in vals]
        return _col(vals, F64, s.m)

    return read


def _dim3(f: Field) -> _Read:
    get, dtype = getter(f.attrs[0]), f.dtype
    return lambda s: _col(chain.from_iterable(get(s.args)), dtype, 3 * s.m).reshape(s.m, 3)


def _stream(f: Field) -> _Read:
    get, dtype = getter(f.attrs[0]), f.dtype

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if not _only(vals, _INT):  # no stream arg (no stream: NONE, as HTA has it), or an odd one
            vals = [v if v.__class__ is int else stream_of(v) for v in vals]
        return _col(vals, dtype, s.m)

    return read


def _device(f: Field) -> _Read:
    get, dtype, default = getter(f.attrs[0]), f.dtype, f.default

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if not _only(vals, _INT):  # no device arg (the pid says it), or an odd one
            vals = [d if d.__class__ is int else int_or(d, int_or(p, default)) for d, p in zip(vals, _PIDS(s.evs))]
        return _col(vals, dtype, s.m)

    return read


def _raw(f: Field) -> _Read:
    """String ids of raw JSON values (b"", no value, is seeded as NONE). One join and one split
    copy them out faster than bytes() of each; JSON text holds no NUL byte, so the split gives
    back exactly the values (checked by the count)."""
    get = getter(f.attrs[0])

    def read(s: _Slice) -> np.ndarray:
        raws = get(s.args)
        parts = b"\0".join(raws).split(b"\0")
        if len(parts) != s.m:  # pragma: no cover - msgspec rejects a raw NUL in JSON
            parts = [bytes(r) for r in raws]
        return s.strings(parts)

    return read


def _text(f: Field) -> _Read:
    get = getter(f.attrs[0])

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if vals.count(None) == s.m:
            return np.full(s.m, NONE, dtype=I32)
        return s.strings([v if v.__class__ is str else None for v in vals])

    return read


def _nonempty_text(f: Field) -> _Read:
    get = getter(f.attrs[0])

    def read(s: _Slice) -> np.ndarray:
        vals = get(s.args)
        if vals.count(None) == s.m:
            return np.full(s.m, NONE, dtype=I32)
        return s.strings([v if v else None for v in vals])  # "" is a name's string but no stack

    return read


# (rule, typed) -> the maker of a column's reader; event keys are typed by schema.XEvent, args as
# their field says. A column without one fails at import.
_READERS: dict[tuple[str, bool], Callable[[Field], _Read]] = {
    (KIND, True): _kind, (SIDE, True): _side, (COUNT, False): _count, (NAME, True): _name, (THREAD, True): _thread, (TIME, True): _time,
    (ID, True): _id, (ID, False): _untyped_id, (NUMBER, False): _untyped_number, (DIM3, True): _dim3,
    (STREAM, False): _stream, (DEVICE, False): _device, (RAW, True): _raw, (TEXT, False): _text,
    (NONEMPTY_TEXT, True): _nonempty_text,
}  # fmt: skip


def _reader(col: Column) -> _Read:
    f = col.field
    key = (f.rule, f.event or f.strict is not Any)
    if key not in _READERS:
        raise TypeError(f"strict builder: no reader for {col.name} ({f.rule}, strict type {f.strict})")
    return _READERS[key](f)


# Per table: (column, reader); the columns that intern come last, so that a miss leaves fewer
# strings behind.
_PLAN = {
    t: [(c.name, _reader(c)) for c in sorted(read_columns(t), key=lambda c: c.field.rule in STRING_RULES or c.field.rule == THREAD)]
    for t in COMPLETE_TABLES
}


_COLLECTIVE = getter(COLLECTIVE.attrs[0])


def _collective_named(s: _Slice, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Which of a table's rows have a Collective name (the comms table's rows): the GPU table
    reads the name itself; for ops, the args say."""
    if COLLECTIVE.name in cols:
        has: np.ndarray = cols[COLLECTIVE.name] != NONE
        return has
    names = _COLLECTIVE(s.args)
    if names.count(None) == s.m:
        return np.zeros(s.m, dtype=bool)
    return np.fromiter((n.__class__ is str for n in names), dtype=bool, count=s.m)


def _missing(x: float) -> float | None:
    return None if x != x else x  # NaN is the strict default of an absent time


_NO_POS = np.zeros(0, dtype=np.intp)


def add_strict(b: ColumnBuilder, events: list[Any]) -> None:
    """Append one strictly decoded slice to `b`; StrictMiss: `b` unchanged, redo it leniently."""
    n = len(events)
    if n == 0:
        b.commit(0, {})
        return
    # Codes are 0..MEM_CODE: bytes() packs them in one C loop, cheaper than np.fromiter.
    codes = np.frombuffer(bytes(map(CAT_CODES.__getitem__, [e.cat for e in events])), dtype=I8)
    group = GROUP[codes]
    present = np.bincount(group, minlength=G_MEM + 1).tolist()
    rows: dict[str, Rows] = {}
    try:
        named: list[np.ndarray] = []
        for table in COMPLETE_TABLES:
            if table == "comms":
                continue
            g = TABLE_GROUPS[table]
            if present[g]:
                idx = np.flatnonzero(group == g)
                s = _Slice(b, _take(events, idx), codes[idx])
                rows[table] = (idx, cols := {name: read(s) for name, read in _PLAN[table]})
                if table in COMMS_SOURCES:
                    named.append(idx[_collective_named(s, cols)])
        comms = np.sort(np.concatenate(named)) if named else _NO_POS
        if len(comms):
            s = _Slice(b, _take(events, comms), codes[comms])
            rows["comms"] = (comms, {name: read(s) for name, read in _PLAN["comms"]})
    except (OverflowError, ValueError, TypeError):
        raise StrictMiss from None
    if present[G_MEM]:
        # Instant events are decoded with the lenient field types: the lenient code reads them.
        keep = [i for i in np.flatnonzero(group == G_MEM).tolist() if events[i].name == "[memory]" and events[i].args is not None]
        if keep:
            idx = np.asarray(keep, dtype=np.intp)
            rows["memory"] = (idx, table_columns(b, "memory", list(_take(events, idx)), codes[idx]))
    counters: list[CounterRow] = []
    if present[G_CPR]:
        idx = np.flatnonzero(group == G_CPR)
        evs = _take(events, idx)
        names = _Slice(b, evs, codes[idx]).strings(_NAMES(evs)).tolist()
        counters = [(nm, _missing(e.ts), _missing(e.dur), i) for i, e, nm in zip(idx.tolist(), evs, names)]
    span = None
    for e in _take(events, np.flatnonzero(group == G_TRACE)) if present[G_TRACE] else ():
        # The profiler's own span: the TB plugin's counter series cover exactly it.
        if e.name.startswith("PyTorch Profiler"):
            span = span_of(_missing(e.ts), _missing(e.dur)) or span
    b.commit(n, rows, counters, span)


__all__ = ["StrictMiss", "add_strict"]
