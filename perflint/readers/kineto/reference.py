"""The reference builder: a trace's tables from its decoded events, one event and one value at a
time, by each column's rule (columns.py). The columnar builders must give exactly its tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from perflint.model import NONE, Trace
from perflint.readers.kineto.codes import (
    C_ANN,
    C_CPR,
    C_PYFN,
    C_RT,
    CATEGORY_CODES,
    KIND_OF,
    SIDE_OF,
    as_column,
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
    DEFAULT,
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
    TABLE_TYPES,
    TABLES,
    TEXT,
    THREAD,
    TIME,
    Column,
)
from perflint.readers.kineto.finish import finish_trace
from perflint.readers.kineto.ranges import span_of
from perflint.readers.kineto.schema import DEFAULT_ARGS, Event, TraceFile


class _Interner:
    __slots__ = ("strings", "ids")

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.ids: dict[Any, int] = {}

    def __call__(self, s: Any) -> int:
        sid = self.ids.get(s)
        if sid is None:
            sid = len(self.strings)
            self.ids[s] = sid
            self.strings.append(s if isinstance(s, str) else s.decode("utf-8", "replace"))
        return sid


class _Threads:
    __slots__ = ("threads", "ids")

    def __init__(self) -> None:
        self.threads: list[tuple[str, str]] = []
        self.ids: dict[tuple[Any, Any], int] = {}

    def __call__(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        try:
            t = self.ids.get(key)
        except TypeError:  # a list/object pid or tid (damaged trace): key by its text
            key = (str(pid), str(tid))
            t = self.ids.get(key)
        if t is None:
            t = len(self.threads)
            self.ids[key] = t
            self.threads.append((str(pid), str(tid)))
        return t


# A value's reader: (event, its args, its class code, the event's name as text) -> the entry.
_Read = Callable[[Event, Any, int, str], Any]


def _reader(col: Column, intern: _Interner, thread: _Threads) -> _Read:
    f = col.field
    rule = f.rule
    if rule == KIND:
        kinds = KIND_OF.tolist()
        return lambda e, a, code, name: kinds[code]
    if rule == SIDE:
        sides = SIDE_OF.tolist()
        return lambda e, a, code, name: sides[code]
    if rule == NAME:
        return lambda e, a, code, name: intern(name)
    if rule == THREAD:
        return lambda e, a, code, name: thread(e.pid, e.tid)
    if rule == TIME:
        (key,) = f.attrs
        return lambda e, a, code, name: getattr(e, key)
    attrs, default = f.attrs, f.default
    if len(attrs) == 1:
        (attr,) = attrs

        def value(a: Any) -> Any:
            return getattr(a, attr)

    else:

        def value(a: Any) -> Any:
            for attr in attrs:  # the first spelling that is there
                v = getattr(a, attr)
                if v is not None:
                    return v
            return None

    if rule == ID:
        return lambda e, a, code, name: int_or(value(a), default)
    if rule == COUNT:
        return lambda e, a, code, name: count_or_none(value(a))
    if rule == NUMBER:
        return lambda e, a, code, name: num_or_nan(value(a))
    if rule == DIM3:
        return lambda e, a, code, name: dim3(value(a))
    if rule == STREAM:
        return lambda e, a, code, name: stream_of(value(a))
    if rule == DEVICE:
        return lambda e, a, code, name: int_or(value(a), int_or(e.pid, default))
    if rule == RAW:
        return lambda e, a, code, name: intern(bytes(v)) if (v := value(a)) else NONE
    if rule == TEXT:
        return lambda e, a, code, name: intern(v) if isinstance(v := value(a), str) else NONE
    if rule == NONEMPTY_TEXT:
        return lambda e, a, code, name: intern(v) if isinstance(v := value(a), str) and v else NONE
    raise ValueError(f"{col.name}: no reference reading for rule {rule!r}")


def build_trace_reference(path: str, events: list[Event], doc: TraceFile | None, data: bytes | None = None) -> Trace:
    """Columns from decoded events, one event at a time: the reference the fast builders must equal.

    `data` is only used for the rare CUPTI counter mode."""
    intern, thread = _Interner(), _Threads()
    # table -> the columns read from events, their readers and their values
    read = {t: [c for c in cols if c.field.rule != DEFAULT] for t, cols in TABLES.items()}
    readers = {t: [_reader(c, intern, thread) for c in cols] for t, cols in read.items()}
    values: dict[str, list[list[Any]]] = {t: [[] for _ in cols] for t, cols in read.items()}

    def add(table: str, e: Event, a: Any, code: int, name: str) -> None:
        for fn, out in zip(readers[table], values[table]):
            out.append(fn(e, a, code, name))

    cpr: list[tuple[int, Any, Any]] = []
    codes = CATEGORY_CODES
    collective = COLLECTIVE.attrs[0]
    profiler_span: tuple[float, float] | None = None
    for e in events:
        ph = e.ph
        if ph == "X":
            cat = e.cat
            if cat.__class__ is not str:  # None, or a list/object in a damaged trace (unhashable)
                continue
            code = codes.get(cat)
            if code is None:
                code = codes.get(cat.lower())
                if code is None:
                    if cat == "Trace" and isinstance(e.name, str) and e.name.startswith("PyTorch Profiler"):
                        # The profiler's own span: the TB plugin's counter series cover exactly it.
                        profiler_span = span_of(e.ts, e.dur) or profiler_span
                    continue
            a = e.args if e.args is not None else DEFAULT_ARGS
            name = e.name if isinstance(e.name, str) else str(e.name)
            if code == C_CPR:
                cpr.append((intern(name), e.ts, e.dur))
                continue
            table = "ops" if code <= C_ANN else "pyfn" if code == C_PYFN else "runtime" if code == C_RT else "gpu"
            add(table, e, a, code, name)
            if table in COMMS_SOURCES and isinstance(getattr(a, collective), str):
                add("comms", e, a, code, name)
        elif (ph == "i" or ph == "I") and e.name == "[memory]":
            if e.args is None:
                continue
            add("memory", e, e.args, 0, "")

    tables: dict[str, Any] = {}
    for t, cols in TABLES.items():
        n = len(values[t][0])
        got = dict(zip((c.name for c in read[t]), values[t]))
        built = {}
        for c in cols:
            f = c.field
            if f.rule == DEFAULT:
                built[c.name] = np.full(n, f.default, dtype=f.dtype)
            elif f.rule == DIM3:
                built[c.name] = as_column(path, c.label, got[c.name], f.dtype, 2).reshape(n, 3)
            else:
                built[c.name] = as_column(path, c.label, got[c.name], f.dtype)
        tables[t] = TABLE_TYPES[t](**built)
    trace = Trace(path=path, format="kineto", strings=intern.strings, threads=thread.threads, **tables)
    return finish_trace(path, trace, doc, profiler_span, cpr, lambda: data, had_events=bool(events))


__all__ = ["build_trace_reference"]
