"""NVTX ranges from nvprof's MARKER table, and what pyprof and emit_nvtx wrote into their names.

nvprof stores a range as two rows with the same `id`: its start (flags 2) with the name and the
thread (`objectId`: process id, 4 bytes, then thread id, 8 bytes, little-endian), and its end
(flags 4). Range names are read, never run: pyprof's Python-literal dicts go through
`ast.literal_eval` only, once per distinct name.

What a name can be:
- pyprof's argument marker `{'mod': 'torch.nn.functional', 'op': 'linear', 'args': [...]}` (ARG);
- pyprof's call trace `{'traceMarker': ['file.py:LINE', ...]}` (TRACE), outermost frame first;
- pyprof's module marker `{'mod': 'Linear', 'strRepr': '...'}` (REPR);
- torch.autograd.profiler.emit_nvtx's `name, seq = N[, op_id = K][, sizes = [[...], ...]]` (SEQ);
- anything else: a user range (`layer:NAME` for pyprof's layer markers), kept by its name (OTHER).
"""

from __future__ import annotations

import ast
import re
import sqlite3
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MARKER_T = "CUPTI_ACTIVITY_KIND_MARKER"
_START, _END = 2, 4  # CUpti_ActivityFlag MARKER_START / MARKER_END

ARG, TRACE, REPR, SEQ, OTHER = 0, 1, 2, 3, 4

_SEQ = re.compile(r"^(?P<name>.*?), seq = (?P<seq>-?\d+)(?:, op_id = -?\d+)?(?:, sizes = (?P<sizes>\[.*?\]))?(?:, input_op_ids = .*)?$", re.S)
# Autograd graph nodes run in the backward pass (their ops carry the forward op's sequence number).
BACKWARD_NAME = re.compile(r"(?:Backward\d*|Backwards|_backward|AccumulateGrad)$")


@dataclass(frozen=True)
class Parsed:
    """One distinct range name, classified."""

    kind: int
    name: str  # the range name for SEQ (before ", seq"), else the whole text
    seq: int = -1
    payload: Any = None  # ARG: the marker dict; TRACE: the frame list; SEQ: the sizes list (or None)
    malformed: bool = False  # looked like a pyprof dict but is not a Python literal


def parse_name(text: str) -> Parsed:
    """Classify one range name. Never raises and never executes the text."""
    if text.startswith("{") and text.endswith("}"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return Parsed(OTHER, text, malformed=True)
        if isinstance(value, dict):
            if isinstance(value.get("traceMarker"), list):
                return Parsed(TRACE, text, payload=[str(f) for f in value["traceMarker"]])
            if "strRepr" in value:
                return Parsed(REPR, text, payload=value)
            if isinstance(value.get("op"), str) and isinstance(value.get("args"), list):
                return Parsed(ARG, text, payload=value)
        return Parsed(OTHER, text)
    m = _SEQ.match(text)
    if m:
        sizes: Any = None
        if m.group("sizes"):
            try:
                sizes = ast.literal_eval(m.group("sizes"))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                sizes = None
        return Parsed(SEQ, m.group("name"), seq=int(m.group("seq")), payload=sizes if isinstance(sizes, list) else None)
    return Parsed(OTHER, text)


@dataclass
class Ranges:
    """Closed NVTX ranges, sorted by (thread, start, end descending): outer before inner."""

    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray  # ns
    end: np.ndarray
    name: np.ndarray  # StringTable id
    parsed: dict[int, Parsed] = field(default_factory=dict)  # StringTable id -> its classification
    unclosed: int = 0

    def __len__(self) -> int:
        return len(self.start)

    def kinds(self) -> np.ndarray:
        return _per_name(self.name, {k: p.kind for k, p in self.parsed.items()}, OTHER)


def _per_name(name: np.ndarray, table: dict[int, int], missing: int) -> np.ndarray:
    if len(name) == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inv = np.unique(name, return_inverse=True)
    return np.asarray([table.get(int(u), missing) for u in uniq.tolist()], dtype=np.int64)[inv.reshape(-1)]


def _thread(blob: Any) -> tuple[int, int]:
    """(pid, tid) of a marker's objectId (objectKind thread); (0, 0) when it is not 12 bytes."""
    if isinstance(blob, (bytes, bytearray)) and len(blob) >= 12:
        pid, tid = struct.unpack_from("<iq", blob)
        return pid, tid & 0xFFFFFFFF
    return 0, 0


def read_ranges(con: sqlite3.Connection, present: dict[str, set[str]], texts: dict[int, str]) -> Ranges:
    """The closed ranges of the MARKER table (a start without an end is dropped and counted)."""
    cols = ("flags", "timestamp", "id", "objectId", "name")
    empty = np.zeros(0, dtype=np.int64)
    if MARKER_T not in present or not set(cols) <= present[MARKER_T]:
        return Ranges(empty, empty, empty, empty, empty)
    rows = con.execute(f"SELECT flags, timestamp, id, name, objectId FROM {MARKER_T} WHERE flags IN ({_START}, {_END})").fetchall()
    if not rows:
        return Ranges(empty, empty, empty, empty, empty)
    num = np.asarray([r[:4] for r in rows], dtype=np.int64)
    flags, ts, mid, name = num[:, 0], num[:, 1], num[:, 2], num[:, 3]
    starts = np.flatnonzero(flags == _START)
    ends = np.flatnonzero(flags == _END)
    e_order = ends[np.argsort(mid[ends], kind="stable")]
    e_ids = mid[e_order]
    pos = np.minimum(np.searchsorted(e_ids, mid[starts]), max(len(e_ids) - 1, 0))
    closed = (len(e_ids) > 0) & (e_ids[pos] == mid[starts]) if len(e_ids) else np.zeros(len(starts), dtype=bool)
    s = starts[closed]
    e = e_order[pos[closed]]
    threads = {}
    for i in s.tolist():  # one unpack per distinct object id
        blob = rows[i][4]
        key = bytes(blob) if isinstance(blob, (bytes, bytearray)) else b""
        if key not in threads:
            threads[key] = _thread(blob)
    pt = np.asarray([threads[bytes(rows[i][4]) if isinstance(rows[i][4], (bytes, bytearray)) else b""] for i in s.tolist()], dtype=np.int64).reshape(len(s), 2)
    start, end = ts[s], np.maximum(ts[e], ts[s])
    order = np.lexsort((-end, start, pt[:, 1], pt[:, 0]))
    out = Ranges(pt[order, 0], pt[order, 1], start[order], end[order], name[s][order], unclosed=int(len(starts) - len(s)))
    out.parsed = {int(u): parse_name(texts.get(int(u), "")) for u in np.unique(out.name).tolist()}
    return out


def inside(group: np.ndarray, start: np.ndarray, end: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Per range (sorted by group, start, end descending): it is flagged or lies within a flagged
    range of its group that started earlier. One running maximum, no walk: the flagged ends seen
    so far per group, offset so that groups never mix."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=bool)
    span = int(end.max() - start.min()) + 2
    base = (group - group.min()) * span - int(start.min())  # group-major keys, groups sorted ascending
    key = np.where(flag, base + end, base - 1)
    prev = np.maximum.accumulate(key)
    out: np.ndarray = flag | (prev >= base + end)
    return out


def group_ids(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """A dense, ascending id per (pid, tid) for arrays sorted by (pid, tid)."""
    if len(pid) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.concatenate(([False], (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])))
    return np.cumsum(change)


__all__ = ["ARG", "BACKWARD_NAME", "OTHER", "REPR", "SEQ", "TRACE", "Parsed", "Ranges", "group_ids", "inside", "parse_name", "read_ranges"]
