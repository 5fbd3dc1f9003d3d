"""Columns of a slice of leniently decoded events (schema.Event: any value of any type), one column
at a time: each column's rule (columns.py) over a list of values, then numpy. The tables equal the
reference builder's for the same events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perflint.model import NONE
from perflint.readers.kineto.builder import ColumnBuilder, Rows
from perflint.readers.kineto.codes import (
    C_CPR,
    GROUP,
    KIND_OF,
    SIDE_OF,
    TABLE_GROUPS,
    TRACE_CODE,
    as_column,
    code_of,
    count_or_none,
    dim3,
    int_or,
    num_or_nan,
    stream_of,
)
from perflint.readers.kineto.columns import (
    COLLECTIVE,
    COMMS_SOURCES,
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
    TEXT,
    THREAD,
    TIME,
    Column,
    read_columns,
)
from perflint.readers.kineto.getters import getter
from perflint.readers.kineto.ranges import span_of
from perflint.readers.kineto.schema import DEFAULT_ARGS, Event

_NAN = float("nan")
_Z3 = (0, 0, 0)


def _ints(vals: list[Any], default: int = NONE) -> list[Any]:
    return [v if v.__class__ is int else default if v is None else int_or(v, default) for v in vals]


def _floats(vals: list[Any]) -> list[float]:
    try:
        return [float(v) if v.__class__ is float or v.__class__ is int else _NAN for v in vals]
    except OverflowError:  # an int beyond float64 (rare): unknown, as a value of another type is
        return [num_or_nan(v) for v in vals]


def _dims3(vals: list[Any]) -> list[Any]:
    return [
        g
        if g.__class__ is list and len(g) == 3 and g[0].__class__ is int and g[1].__class__ is int and g[2].__class__ is int
        else _Z3 if g is None else dim3(g)
        for g in vals
    ]


def _take(events: Sequence[Event], idx: np.ndarray) -> list[Event]:
    return [events[i] for i in idx.tolist()]


class _Slice:
    """One table's rows of a slice: its events, their args, and the builder's interners."""

    def __init__(self, b: ColumnBuilder, evs: list[Event], codes: np.ndarray) -> None:
        self.b, self.evs, self.codes = b, evs, codes
        self.args = [a if a is not None else DEFAULT_ARGS for a in [e.args for e in evs]]

    def values(self, col: Column) -> list[Any]:
        """The column's values as the events give them (the first spelling that is not None)."""
        attrs = col.field.attrs
        vals = getter(attrs[0])(self.args)
        for attr in attrs[1:]:
            vals = [v if v is not None else w for v, w in zip(vals, getter(attr)(self.args))]
        return vals

    def names(self) -> np.ndarray:
        names = [e.name for e in self.evs]
        if set(map(type, names)) - {str}:
            names = [n if isinstance(n, str) else str(n) for n in names]
        return self.b.intern(names)

    def threads(self) -> np.ndarray:
        keys = [(e.pid, e.tid) for e in self.evs]
        tids = self.b.thread_ids
        try:
            return np.fromiter(map(tids.__getitem__, keys), dtype=np.int32, count=len(keys))
        except TypeError:  # a list/object pid or tid (damaged trace): key by its text
            fixed = []
            for k in keys:
                try:
                    hash(k)
                except TypeError:
                    k = (str(k[0]), str(k[1]))
                fixed.append(k)
            return np.fromiter(map(tids.__getitem__, fixed), dtype=np.int32, count=len(fixed))

    def column(self, col: Column) -> np.ndarray:
        f, path = col.field, self.b.path
        rule = f.rule
        if rule == KIND:
            kinds: np.ndarray = KIND_OF[self.codes]
            return kinds
        if rule == SIDE:
            sides: np.ndarray = SIDE_OF[self.codes]
            return sides
        if rule == NAME:
            return self.names()
        if rule == THREAD:
            return self.threads()
        if rule == TIME:
            return as_column(path, col.label, getter(f.attrs[0])(self.evs), f.dtype)
        vals = self.values(col)
        if rule == ID:
            return as_column(path, col.label, _ints(vals, f.default), f.dtype)
        if rule == COUNT:
            return np.asarray([count_or_none(v) for v in vals], dtype=f.dtype)
        if rule == NUMBER:
            return np.asarray(_floats(vals), dtype=f.dtype)
        if rule == DIM3:
            return as_column(path, col.label, _dims3(vals), f.dtype, 2).reshape(len(vals), 3)
        if rule == STREAM:
            return as_column(path, col.label, [s if s.__class__ is int else stream_of(s) for s in vals], f.dtype)
        if rule == DEVICE:
            pids = [e.pid for e in self.evs]
            return as_column(path, col.label, [d if d.__class__ is int else int_or(d, int_or(p, f.default)) for d, p in zip(vals, pids)], f.dtype)
        if rule == RAW:
            return self.b.intern([bytes(r) if r else None for r in vals])
        if rule == TEXT:
            return self.b.intern([s if s.__class__ is str else None for s in vals])
        if rule == NONEMPTY_TEXT:
            return self.b.intern([s if s.__class__ is str and s else None for s in vals])
        raise ValueError(f"{col.name}: no lenient reading for rule {rule!r}")


def table_columns(b: ColumnBuilder, table: str, evs: list[Event], codes: np.ndarray) -> dict[str, np.ndarray]:
    """The columns of `table` for its events `evs` (of class `codes`)."""
    s = _Slice(b, evs, codes)
    return {c.name: s.column(c) for c in read_columns(table)}


_COLLECTIVE = getter(COLLECTIVE.attrs[0])


def comms_rows(events: Sequence[Any], candidates: list[np.ndarray]) -> np.ndarray:
    """The comms table's rows of a slice: its ops and GPU activities (`candidates`, their
    positions) with a Collective name, in event order. The name is read from the args struct of
    either schema (a missing args object is no name)."""
    if not candidates:
        return _NO_ROWS
    idx = np.sort(np.concatenate(candidates)) if len(candidates) > 1 else candidates[0]
    args = [events[i].args for i in idx.tolist()]
    has = [a is not None for a in args]
    names = _COLLECTIVE([a for a in args if a is not None])
    if all(n is None for n in names):
        return _NO_ROWS
    named = iter(n.__class__ is str for n in names)
    keep = [h and next(named) for h in has]
    rows: np.ndarray = idx[np.asarray(keep, dtype=bool)]
    return rows


_NO_ROWS = np.zeros(0, dtype=np.intp)


def _class_codes(events: list[Event]) -> np.ndarray:
    memo: dict[Any, int] = {}
    n = len(events)
    try:
        keys = [(e.ph, e.cat) for e in events]
        for k in dict.fromkeys(keys):
            memo[k] = code_of(*k)
        return np.fromiter(map(memo.__getitem__, keys), dtype=np.int8, count=n)
    except TypeError:  # an unhashable ph or cat
        return np.fromiter((code_of(e.ph, e.cat) for e in events), dtype=np.int8, count=n)


def add_lenient(b: ColumnBuilder, events: list[Event]) -> None:
    """Append a slice of leniently decoded events to `b`."""
    n = len(events)
    if n == 0:
        b.commit(0, {})
        return
    codes = _class_codes(events)
    group = GROUP[codes]
    present = np.bincount(group, minlength=GROUP.max() + 1)
    rows: dict[str, Rows] = {}
    for table, g in TABLE_GROUPS.items():
        if not present[g]:
            continue
        idx = np.flatnonzero(group == g)
        if table == "memory":  # instant events: only [memory] records with args
            idx = np.asarray([i for i in idx.tolist() if events[i].name == "[memory]" and events[i].args is not None], dtype=np.intp)
            if not len(idx):
                continue
        rows[table] = (idx, table_columns(b, table, _take(events, idx), codes[idx]))
    comms = comms_rows(events, [rows[t][0] for t in COMMS_SOURCES if t in rows])
    if len(comms):
        rows["comms"] = (comms, table_columns(b, "comms", _take(events, comms), codes[comms]))
    counters = []
    if (codes == C_CPR).any():
        idx = np.flatnonzero(codes == C_CPR)
        evs = _take(events, idx)
        names = _Slice(b, evs, codes[idx]).names().tolist()
        counters = [(nm, e.ts, e.dur, i) for i, e, nm in zip(idx.tolist(), evs, names)]
    span = None
    for e in _take(events, np.flatnonzero(codes == TRACE_CODE)):
        if isinstance(e.name, str) and e.name.startswith("PyTorch Profiler"):
            # The profiler's own span: the TB plugin's counter series cover exactly it.
            span = span_of(e.ts, e.dur) or span
    b.commit(n, rows, counters, span)


__all__ = ["add_lenient", "comms_rows", "table_columns"]
