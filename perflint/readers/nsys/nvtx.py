"""NVTX ranges as the op / annotation layer.

`NVTX_EVENTS` holds push/pop (eventType 59), start/end (60) and domain-scoped push/pop (70)
ranges; their text is inline (`text`) or a `StringIds` reference (`textId`). PyTorch's
`torch.autograd.profiler.emit_nvtx()` names each op's range
"aten::addmm, seq = 12, op_id = 3, sizes = [[32, 64], [64, 128]]" (older releases omit op_id,
newer add ", input_op_ids = [...]"): those become CPU ops with their sequence number and input
dims (the same JSON as Kineto's "Input Dims"); any other range is a user annotation, and
`ProfilerStep#N` ranges mark the steps. Text is parsed once per distinct string.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflint.errors import InputError
from perflint.model import NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.nsys import schema as S
from perflint.readers.nsys.queries import NULL, fetch
from perflint.readers.nsys.schema import Schema

RANGE_TYPES = (59, 60, 70)
_EMIT = re.compile(
    r"^(?P<name>.*?)(?:, seq = (?P<seq>-?\d+))?(?:, op_id = (?P<op>\d+))?(?:, sizes = (?P<sizes>\[.*?\]))?"
    r"(?:, input_op_ids = (?P<inputs>.*))?$",
    re.S,
)
_BACKWARD = re.compile(r"Backward\d*$|^autograd::engine::evaluate_function: ")


@dataclass(frozen=True)
class Parsed:
    name: str
    seq: int  # NONE when the range carries none
    dims: str | None  # JSON text of the input sizes
    is_op: bool  # an emit_nvtx op range (seq / op_id / sizes present)
    backward: bool


def parse(text: str) -> Parsed:
    """One NVTX range text, emit_nvtx's format or a plain annotation."""
    m = _EMIT.match(text)
    if m is None or not (m.group("seq") or m.group("op") or m.group("sizes")):
        return Parsed(text, NONE, None, False, False)
    name = m.group("name")
    seq = int(m.group("seq")) if m.group("seq") else NONE
    return Parsed(name, seq if seq >= 0 else NONE, m.group("sizes"), True, bool(_BACKWARD.search(name)))


@dataclass
class Ranges:
    """NVTX ranges, one entry per row: integer columns and the text of each (an index into `texts`)."""

    start: np.ndarray
    end: np.ndarray
    tid: np.ndarray  # globalTid
    text: np.ndarray  # index into texts
    texts: list[str]

    def __len__(self) -> int:
        return len(self.start)


def read_ranges(path: str, con: sqlite3.Connection, sc: Schema, strings: dict[int, str]) -> Ranges | None:
    """The export's NVTX ranges; None without an NVTX table. `strings` gives StringIds text; ids
    it lacks are fetched."""
    t = S.NVTX
    cols = sc.cols(t)
    if not {"start", "end"} <= cols:
        return None
    where = 'WHERE "end" IS NOT NULL AND "end" >= "start"'
    if "eventType" in cols:
        where += f' AND "eventType" IN {RANGE_TYPES}'
    tid = f'COALESCE("globalTid", {NULL})' if "globalTid" in cols else str(NULL)
    text_id = f'COALESCE("textId", {NULL})' if "textId" in cols else str(NULL)
    has_text = "text" in cols
    inline = 'CASE WHEN "text" IS NULL THEN 0 ELSE 1 END' if has_text else "0"
    start, end, gtid, ids, is_inline = fetch(
        path, con, f'SELECT "start", "end", {tid}, {text_id}, {inline} FROM "{t}" {where} ORDER BY rowid', [np.int64] * 5
    )
    texts: list[str] = []
    index: dict[str, int] = {}

    def intern(s: str) -> int:
        i = index.get(s)
        if i is None:
            i = index[s] = len(texts)
            texts.append(s)
        return i

    text = np.full(len(start), intern(""), dtype=np.int64)
    by_id = ids >= 0
    if by_id.any():
        uniq, inv = np.unique(ids[by_id], return_inverse=True)
        missing = [int(u) for u in uniq.tolist() if int(u) not in strings]
        if missing:
            from perflint.readers.nsys.queries import strings as fetch_strings

            strings = {**strings, **fetch_strings(path, con, sc, np.asarray(missing))}
        local = np.asarray([intern(strings.get(int(u), "")) for u in uniq.tolist()], dtype=np.int64)
        text[by_id] = local[inv.reshape(-1)]
    inl = is_inline == 1
    if inl.any():
        try:
            rows = con.execute(f'SELECT "text" FROM "{t}" {where} AND "text" IS NOT NULL ORDER BY rowid')
            text[inl] = np.fromiter((intern(str(r[0])) for r in rows), dtype=np.int64, count=int(inl.sum()))
        except sqlite3.DatabaseError as exc:
            raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
        except ValueError:
            raise InputError(path, f"{t} changed while it was read") from None
    return Ranges(start, end, gtid, text, texts)


def op_columns(
    ranges: Ranges, rows: np.ndarray, sid: Callable[[str], int], thread: np.ndarray, os_tid: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> dict[str, np.ndarray]:
    """The OpTable columns of the ranges `rows`: `thread` (trace thread index), `os_tid`, `ts`
    and `dur` per row are mapped by the reader; `sid` interns a string into the trace's table."""
    used, inv = np.unique(ranges.text[rows], return_inverse=True)
    parsed = [parse(ranges.texts[int(u)]) for u in used.tolist()]
    inv = inv.reshape(-1)

    def per(values: list[int], dtype: type) -> np.ndarray:
        return np.asarray(values, dtype=dtype)[inv] if len(rows) else np.zeros(0, dtype=dtype)

    kind = per([OP_CPU if p.is_op else OP_ANNOTATION for p in parsed], np.int8)
    seq = per([p.seq for p in parsed], np.int64)
    backward = per([int(p.backward) for p in parsed], np.int64).astype(bool)
    # A backward op names its forward op's thread (`Fwd thread id` in Kineto); emit_nvtx does not
    # record it, so the thread holding most forward op ranges stands in.
    fwd_tid = np.full(len(rows), NONE, dtype=np.int64)
    if backward.any():
        fwd = (kind == OP_CPU) & ~backward & (seq != NONE)
        tids, counts = np.unique(os_tid[fwd] if fwd.any() else os_tid[backward], return_counts=True)
        fwd_tid[backward & (seq != NONE)] = max(int(tids[int(np.argmax(counts))]), 1)
    return {
        "kind": kind,
        "name": per([sid(p.name) for p in parsed], np.int32),
        "thread": thread,
        "ts": ts,
        "dur": dur,
        "seq": seq,
        "fwd_tid": fwd_tid,
        "dims": per([sid(p.dims) if p.dims is not None else NONE for p in parsed], np.int32),
    }


__all__ = ["Parsed", "Ranges", "op_columns", "parse", "read_ranges"]
