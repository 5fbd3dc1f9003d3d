"""Columns from events decoded with the strict schema (kineto_schema.StrictEvent), one field at a time.

The strict decode already gives each field its final Python type (floats for times, ints for ids,
defaults for missing keys), so a column is a list comprehension and one `np.fromiter`: no
per-value conversion in Python. Interning is one dict lookup per value (a new key is added by
the dict's __missing__). The few untyped fields (GPU-only args that other events carry with other
types) get a type check and, when odd, the lenient builder's per-value rule.

The tables equal what the lenient builder gives for the same bytes; a value the columns cannot
hold (an id beyond the column's dtype) raises `StrictMiss` before the tables change, and the
caller redoes the slice the lenient way, which words the error. Interning may have run by then:
it added strings and threads the lenient pass adds anyway (ids are renumbered at the end, so
their order does not matter).
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from perflint.model import GPU_SYNC, KERNEL, MEMCPY, MEMSET, NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.kineto.codes import (
    C_ANN,
    C_CPR,
    C_KERNEL,
    C_MEMCPY,
    C_MEMSET,
    C_OP,
    C_PYFN,
    C_RT,
    C_SYNC,
    MEM_CODE,
    TRACE_CODE,
    code_of,
    int_or,
    stream_of,
)
from perflint.readers.kineto.ranges import span_of
from perflint.readers.kineto.schema import INSTANT_CAT, SKIP_CAT

if TYPE_CHECKING:
    from perflint.readers.kineto.reader import ColumnBuilder

I8, I32, I64, F64 = np.int8, np.int32, np.int64, np.float64
_NAN = float("nan")


class StrictMiss(Exception):
    """A strictly decoded slice has a value only the lenient path handles (or words as an error)."""


class _CatCodes(dict):  # type: ignore[type-arg]
    """Class code of an event's `cat` attribute (a category string, or the SKIP/INSTANT constant)."""

    def __missing__(self, cat: Any) -> int:
        code = self[cat] = code_of("X", cat)
        return code


_CODES = _CatCodes({SKIP_CAT: 0, INSTANT_CAT: MEM_CODE})

_GPU_KIND = np.zeros(C_SYNC + 1, dtype=I8)
_GPU_KIND[C_KERNEL], _GPU_KIND[C_MEMCPY], _GPU_KIND[C_MEMSET], _GPU_KIND[C_SYNC] = KERNEL, MEMCPY, MEMSET, GPU_SYNC

# Attributes are read with list comprehensions: CPython specializes `e.ts` on a struct's slot,
# several times faster than an attrgetter, and np.fromiter over the list adds one C loop.


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


def _ints(vals: list[Any], dtype: Any, m: int) -> np.ndarray:
    """An untyped id field as the lenient builder reads it (missing: the NONE default)."""
    if not _only(vals, _INT):
        vals = [v if v.__class__ is int else NONE if v is None else int_or(v) for v in vals]
    return _col(vals, dtype, m)


def _floats(vals: list[Any], m: int) -> np.ndarray:
    """An untyped number field as the lenient builder reads it (missing: the NaN default)."""
    if not _only(vals, _NUM):
        vals = [float(v) if v.__class__ is float or v.__class__ is int else _NAN for v in vals]
    return _col(vals, F64, m)


def _ids(vals: list[Any], m: int) -> np.ndarray:
    """A typed id field that is often absent: all defaults (the one _NONE object, counted by
    identity in C) skip the conversion."""
    if vals.count(NONE) == m:
        return np.full(m, NONE, dtype=I64)
    return _col(vals, I64, m)


def _ext(A: Any, m: int) -> np.ndarray:
    try:
        return _col([a.ext for a in A], I64, m)
    except TypeError:  # some have no "External id": old traces spell it "external id"
        return _col([a.ext if a.ext is not None else a.ext_lc for a in A], I64, m)


class _Slice:
    """The columns of one strictly decoded slice, built before anything is committed."""

    def __init__(self, b: ColumnBuilder) -> None:
        self.b = b
        self.sid = b.ids.__getitem__  # a new string gets an id in _StringIds.__missing__
        self.tid = b.thread_ids.__getitem__

    def names(self, evs: Any, m: int) -> np.ndarray:
        return _col(map(self.sid, [e.name for e in evs]), I32, m)

    def threads(self, evs: Any, m: int) -> np.ndarray:
        # zip reuses its result tuple when the lookup dropped it: no (pid, tid) tuple per event.
        return _col(map(self.tid, zip([e.pid for e in evs], [e.tid for e in evs])), I32, m)

    def raw_ids(self, raws: list[Any], m: int) -> np.ndarray:
        """String ids of raw JSON values (b"", no value, is seeded as NONE). One join and one
        split copy them out faster than bytes() of each; JSON text holds no NUL byte, so the
        split gives back exactly the values (checked by the count)."""
        parts = b"\0".join(raws).split(b"\0")
        if len(parts) != m:  # pragma: no cover - msgspec rejects a raw NUL in JSON
            parts = [bytes(r) for r in raws]
        return _col(map(self.sid, parts), I32, m)

    def ops(self, evs: Any, codes: np.ndarray) -> dict[str, np.ndarray]:
        m = len(evs)
        A = [e.args for e in evs]
        cols = {
            "kind": np.where(codes == C_OP, OP_CPU, OP_ANNOTATION).astype(I8),
            "ts": _col([e.ts for e in evs], F64, m),
            "dur": _col([e.dur for e in evs], F64, m),
            "ext_id": _ext(A, m),
            "seq": _ids([a.seq for a in A], m),
            "fwd_tid": _ids([a.fwd_tid for a in A], m),
        }
        cols["name"] = self.names(evs, m)
        cols["thread"] = self.threads(evs, m)
        cols["dims"] = self.raw_ids([a.dims for a in A], m)
        cols["types"] = self.raw_ids([a.types for a in A], m)
        cols["concrete"] = self.raw_ids([a.concrete for a in A], m)
        stacks = [a.stack for a in A]
        if stacks.count(None) == m:
            cols["stack"] = np.full(m, NONE, dtype=I32)
        else:  # "" is a name's string but no stack
            cols["stack"] = self.b._intern([s if s else None for s in stacks])
        return cols

    def runtime(self, evs: Any) -> dict[str, np.ndarray]:
        m = len(evs)
        A = [e.args for e in evs]
        cols = {
            "ts": _col([e.ts for e in evs], F64, m),
            "dur": _col([e.dur for e in evs], F64, m),
            "correlation": _col([a.correlation for a in A], I64, m),
            "ext_id": _ext(A, m),
        }
        cols["name"] = self.names(evs, m)
        cols["thread"] = self.threads(evs, m)
        return cols

    def gpu(self, evs: Any, codes: np.ndarray) -> dict[str, np.ndarray]:
        m = len(evs)
        A = [e.args for e in evs]
        vals = [a.device for a in A]
        if not _only(vals, _INT):  # no device arg (the pid says it), or an odd one
            vals = [d if d.__class__ is int else int_or(d, int_or(e.pid, 0)) for d, e in zip(vals, evs)]
        device = _col(vals, I32, m)
        vals = [a.stream for a in A]
        if not _only(vals, _INT):  # no stream arg (no stream: NONE, as HTA has it), or an odd one
            vals = [s if s.__class__ is int else stream_of(s) for s in vals]
        stream = _col(vals, I64, m)
        cols = {
            "kind": _GPU_KIND[codes],
            "device": device,
            "stream": stream,
            "ts": _col([e.ts for e in evs], F64, m),
            "dur": _col([e.dur for e in evs], F64, m),
            "correlation": _col([a.correlation for a in A], I64, m),
            "ext_id": _ext(A, m),
            "grid": _col(chain.from_iterable([a.grid for a in A]), I64, 3 * m).reshape(m, 3),
            "block": _col(chain.from_iterable([a.block for a in A]), I64, 3 * m).reshape(m, 3),
            "regs": _ints([a.regs for a in A], I32, m),
            "shmem": _ints([a.shmem for a in A], I64, m),
            "blocks_per_sm": _floats([a.blocks_per_sm for a in A], m),
            "warps_per_sm": _floats([a.warps_per_sm for a in A], m),
            "occupancy": _floats([a.occupancy for a in A], m),
            "nbytes": _ints([a.nbytes for a in A], I64, m),
        }
        cols["name"] = self.names(evs, m)
        vals = [a.collective for a in A]
        if vals.count(None) == m:
            cols["collective"] = np.full(m, NONE, dtype=I32)
        else:
            cols["collective"] = _col(map(self.sid, [c if c.__class__ is str else None for c in vals]), I32, m)
        return cols

    def pyfn(self, evs: Any) -> dict[str, np.ndarray]:
        m = len(evs)
        cols = {"ts": _col([e.ts for e in evs], F64, m), "dur": _col([e.dur for e in evs], F64, m)}
        cols["name"] = self.names(evs, m)
        cols["thread"] = self.threads(evs, m)
        return cols


def _missing(x: float) -> float | None:
    return None if x != x else x  # NaN is the strict default of an absent time


# Event class code -> the group of events read together (a table, or one of the rarer kinds).
G_OPS, G_RT, G_GPU, G_PYFN, G_CPR, G_TRACE, G_MEM = range(1, 8)
_GROUP = np.zeros(MEM_CODE + 1, dtype=I8)
_GROUP[[C_OP, C_ANN]] = G_OPS
_GROUP[C_RT] = G_RT
_GROUP[[C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC]] = G_GPU
_GROUP[C_PYFN], _GROUP[C_CPR], _GROUP[TRACE_CODE], _GROUP[MEM_CODE] = G_PYFN, G_CPR, G_TRACE, G_MEM


_NO_POS = np.zeros(0, dtype=np.intp)


def add_strict(b: ColumnBuilder, events: list[Any]) -> None:
    """Append one strictly decoded slice to `b`; StrictMiss: `b` unchanged, redo it leniently."""
    n = len(events)
    if n == 0:
        return
    base = b.n_events
    # Codes are 0..MEM_CODE: bytes() packs them in one C loop, cheaper than np.fromiter.
    codes = np.frombuffer(bytes(map(_CODES.__getitem__, [e.cat for e in events])), dtype=I8)
    group = _GROUP[codes]
    present = np.bincount(group, minlength=G_MEM + 1).tolist()
    ops, rt, gpu, pyfn, cpr, trace, mem = (np.flatnonzero(group == g) if present[g] else _NO_POS for g in range(1, G_MEM + 1))
    s = _Slice(b)
    pending: list[tuple[Any, np.ndarray, dict[str, np.ndarray]]] = []
    try:
        if len(ops):
            pending.append((b.ops, ops + base, s.ops(_take(events, ops), codes[ops])))
        if len(rt):
            pending.append((b.rt, rt + base, s.runtime(_take(events, rt))))
        if len(gpu):
            pending.append((b.gpu, gpu + base, s.gpu(_take(events, gpu), codes[gpu])))
        if len(pyfn):
            pending.append((b.pyfn, pyfn + base, s.pyfn(_take(events, pyfn))))
    except (OverflowError, ValueError, TypeError):
        raise StrictMiss from None
    b.n_events += n
    for tbl, pos, cols in pending:
        tbl.add(pos, **cols)
    if len(cpr):
        evs = _take(events, cpr)
        for i, e, nm in zip(cpr.tolist(), evs, s.names(evs, len(evs)).tolist()):
            b.cpr.append((nm, _missing(e.ts), _missing(e.dur)))
            b.cpr_pos.append(i + base)
    for e in _take(events, trace) if len(trace) else ():
        # The profiler's own span: the TB plugin's counter series cover exactly it.
        if e.name.startswith("PyTorch Profiler"):
            b.profiler_span = span_of(_missing(e.ts), _missing(e.dur)) or b.profiler_span
    if len(mem):
        # Instant events are decoded with the lenient field types: the lenient code reads them.
        keep = [i for i in mem.tolist() if events[i].name == "[memory]" and events[i].args is not None]
        if keep:
            b._memory(_take(events, np.asarray(keep)), np.asarray(keep, dtype=I64) + base)


__all__ = ["StrictMiss", "add_strict"]
