"""The tables of one trace, accumulated a slice of events at a time (ColumnBuilder).

The slice builders (lenient.py, strict.py, native_scan.py) turn a slice into columns with the
builder's interners and hand them over with `commit`; a slice built in another process comes in
with `merge`. `finish` joins each table's columns and renumbers string and thread ids into the
reference builder's first-encounter order, so that every path gives identical tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from perflint.model import NONE, Trace
from perflint.readers.kineto.columns import COMMS_RANK, DEFAULT, DIM3, TABLE_TYPES, TABLES, string_columns, thread_columns
from perflint.readers.kineto.finish import finish_trace
from perflint.readers.kineto.schema import TraceFile

# A slice's rows of one table: each row's event position in the slice, and the columns by name.
Rows = tuple[np.ndarray, dict[str, np.ndarray]]
# String columns an event's strings are ranked by (its table's, then its comms row's).
_RANKS = 16
assert COMMS_RANK + len(string_columns("comms")) <= _RANKS
# A profiler range: its name's string id, time and duration (as the trace gives them), position.
CounterRow = tuple[int, Any, Any, int]


class _Table:
    """Per-slice numpy columns of one table, plus each row's event position (for id renumbering)."""

    def __init__(self) -> None:
        self.cols: dict[str, list[np.ndarray]] = {}
        self.pos: list[np.ndarray] = []

    def add(self, pos: np.ndarray, cols: Mapping[str, np.ndarray]) -> None:
        self.pos.append(pos)
        for k, v in cols.items():
            self.cols.setdefault(k, []).append(v)

    def col(self, name: str, dtype: Any, width: int = 0) -> np.ndarray:
        parts = self.cols.get(name)
        if not parts:
            return np.zeros((0, width) if width else 0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def compact(self) -> tuple[dict[str, list[np.ndarray]], list[np.ndarray]]:
        """The parts joined (one array per column: fewer, bigger objects to pickle)."""
        if len(self.pos) > 1:
            self.cols = {k: [np.concatenate(v)] for k, v in self.cols.items()}
            self.pos = [np.concatenate(self.pos)]
        return self.cols, self.pos

    def positions(self) -> np.ndarray:
        if not self.pos:
            return np.zeros(0, dtype=np.int64)
        return self.pos[0] if len(self.pos) == 1 else np.concatenate(self.pos)


class StringIds(dict):  # type: ignore[type-arg]
    """String id by key (str, or bytes of raw JSON); a new key gets the next id. None and b""
    (no value, an absent Input Dims) are seeded as NONE."""

    def __init__(self, strings: list[str]) -> None:
        super().__init__({None: NONE, b"": NONE})
        self.strings = strings

    def __missing__(self, k: Any) -> int:
        sid = self[k] = len(self.strings)
        self.strings.append(k if k.__class__ is str else k.decode("utf-8", "replace"))
        return sid


class ThreadIds(dict):  # type: ignore[type-arg]
    """Thread id by (pid, tid); a new key gets the next id and its text."""

    def __init__(self, threads: list[tuple[str, str]]) -> None:
        super().__init__()
        self.threads = threads

    def __missing__(self, k: Any) -> int:
        t = self[k] = len(self.threads)
        self.threads.append((str(k[0]), str(k[1])))
        return t


class ColumnBuilder:
    """Accumulates the tables of one trace from slices of its events, then `finish`.

    The slice builders read `string_ids` and `thread_ids` (a new key gets the next id) and give
    each slice's columns to `commit`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.strings: list[str] = []
        self.string_ids = StringIds(self.strings)
        self.threads: list[tuple[str, str]] = []
        self.thread_ids = ThreadIds(self.threads)
        self._n_events = 0
        self._tables = {t: _Table() for t in TABLES}
        self._cpr: list[tuple[int, Any, Any]] = []
        self._cpr_pos: list[int] = []
        self._profiler_span: tuple[float, float] | None = None

    @property
    def n_events(self) -> int:
        """Events committed so far (the position of the next slice's first)."""
        return self._n_events

    def intern(self, keys: list[Any]) -> np.ndarray:
        """String ids of `keys` (None = missing -> NONE)."""
        ids = self.string_ids
        return np.fromiter(map(ids.__getitem__, keys), dtype=np.int32, count=len(keys))

    def commit(
        self,
        n: int,
        rows: Mapping[str, Rows],
        counters: Iterable[CounterRow] = (),
        profiler_span: tuple[float, float] | None = None,
    ) -> None:
        """Append a slice of `n` events: `rows` by table (positions within the slice), its
        profiler ranges, and the profiler's own span when the slice has one."""
        base = self._n_events
        for table, (positions, cols) in rows.items():
            self._tables[table].add(positions + base, cols)
        for name, ts, dur, pos in counters:
            self._cpr.append((name, ts, dur))
            self._cpr_pos.append(pos + base)
        if profiler_span is not None:
            self._profiler_span = profiler_span
        self._n_events += n

    # -- slices built in other processes -----------------------------------------------------
    def export(self) -> dict[str, Any]:
        """Picklable state of a builder that saw one slice (local string and thread ids)."""
        keys: list[Any] = [None] * len(self.strings)
        for k, v in self.string_ids.items():
            if v >= 0:  # not the seeded "missing" keys
                keys[v] = k
        tkeys: list[Any] = [None] * len(self.threads)
        for k, v in self.thread_ids.items():
            tkeys[v] = k
        tables = {t: tbl.compact() for t, tbl in self._tables.items()}
        return {
            "keys": keys, "strings": self.strings, "tkeys": tkeys, "threads": self.threads, "tables": tables,
            "cpr": self._cpr, "cpr_pos": self._cpr_pos, "span": self._profiler_span, "n": self._n_events,
        }  # fmt: skip

    def merge(self, st: dict[str, Any]) -> None:
        """Append an exported slice after the events seen so far (ids mapped into this builder's)."""
        base = self._n_events
        lut = np.empty(len(st["keys"]) + 1, dtype=np.int32)
        lut[-1] = NONE
        for i, (k, text) in enumerate(zip(st["keys"], st["strings"])):
            g = self.string_ids.get(k)
            if g is None:
                g = self.string_ids[k] = len(self.strings)
                self.strings.append(text)
            lut[i] = g
        tlut = np.empty(len(st["tkeys"]) + 1, dtype=np.int32)
        for i, (k, t) in enumerate(zip(st["tkeys"], st["threads"])):
            g = self.thread_ids.get(k)
            if g is None:
                g = self.thread_ids[k] = len(self.threads)
                self.threads.append(t)
            tlut[i] = g
        for name, (cols, pos) in st["tables"].items():
            tbl = self._tables[name]
            strings, threads = string_columns(name), thread_columns(name)
            for p in pos:
                tbl.pos.append(p + base)
            for c, parts in cols.items():
                if c in strings:
                    parts = [lut[x] for x in parts]
                elif c in threads:
                    parts = [tlut[x] for x in parts]
                tbl.cols.setdefault(c, []).extend(parts)
        for (nm, ts, dur), p in zip(st["cpr"], st["cpr_pos"]):
            self._cpr.append((int(lut[nm]), ts, dur))
            self._cpr_pos.append(p + base)
        if st["span"] is not None:
            self._profiler_span = st["span"]
        self._n_events += st["n"]

    # -- the trace -------------------------------------------------------------------------
    @staticmethod
    def _renumber(cols: list[tuple[np.ndarray, np.ndarray, int]], n: int) -> np.ndarray | None:
        """Map old id -> id in first-encounter order over (event position, field rank < _RANKS); None if unchanged."""
        if n == 0:
            return None
        # One slot more: the NONE (-1) ids land in it, and it is dropped.
        first = np.full(n + 1, np.iinfo(np.int64).max, dtype=np.int64)
        for ids, pos, rank in cols:
            if len(ids):
                np.minimum.at(first, ids, pos * _RANKS + rank)
        order = np.argsort(first[:n], kind="stable")
        if (order == np.arange(n)).all():
            return None
        lut = np.empty(n + 1, dtype=np.int32)
        lut[order] = np.arange(n, dtype=np.int32)
        lut[n] = NONE  # index -1 (NONE) lands here
        return lut

    def finish(self, doc: TraceFile | None, counter_data: Callable[[], bytes] | None = None) -> Trace:
        path = self.path
        positions = {t: tbl.positions() for t, tbl in self._tables.items()}
        tables: dict[str, Any] = {}
        for t, tbl in self._tables.items():
            n = len(positions[t])
            cols = {}
            for c in TABLES[t]:
                f = c.field
                if f.rule == DEFAULT:
                    cols[c.name] = np.full(n, f.default, dtype=f.dtype)
                else:
                    cols[c.name] = col = tbl.col(c.name, f.dtype, 3 if f.rule == DIM3 else 0)
                    if f.sparse and not (col != f.default).any():
                        cols[c.name] = np.broadcast_to(np.asarray(f.default, dtype=f.dtype), col.shape)
            tables[t] = TABLE_TYPES[t](**cols)
        cpr_ids = np.asarray([c[0] for c in self._cpr], dtype=np.int32)
        cpr_pos = np.asarray(self._cpr_pos, dtype=np.int64)
        strings = self.strings
        # An event that is a comms row too interns its comms strings after its own table's.
        ranked = [
            (getattr(tables[t], name), positions[t], rank + (COMMS_RANK if t == "comms" else 0))
            for t in TABLES for rank, name in enumerate(string_columns(t))
        ]  # fmt: skip
        lut = self._renumber([*ranked, (cpr_ids, cpr_pos, 0)], len(strings))
        cpr = self._cpr
        if lut is not None:
            for t in TABLES:
                for name in string_columns(t):
                    setattr(tables[t], name, lut[getattr(tables[t], name)])
            new = [""] * len(strings)
            for old, s in enumerate(strings):
                new[lut[old]] = s
            strings = new
            cpr = [(int(lut[c[0]]), c[1], c[2]) for c in cpr]
        threads = self.threads
        tlut = self._renumber([(getattr(tables[t], name), positions[t], 0) for t in TABLES for name in thread_columns(t)], len(threads))
        if tlut is not None:
            for t in TABLES:
                for name in thread_columns(t):
                    setattr(tables[t], name, tlut[getattr(tables[t], name)])
            newt: list[tuple[str, str]] = [("", "")] * len(threads)
            for old, th in enumerate(threads):
                newt[tlut[old]] = th
            threads = newt
        trace = Trace(path=path, format="kineto", strings=strings, threads=threads, **tables)
        return finish_trace(path, trace, doc, self._profiler_span, cpr, counter_data, had_events=bool(self._n_events))


__all__ = ["ColumnBuilder", "CounterRow", "Rows", "StringIds", "ThreadIds"]
