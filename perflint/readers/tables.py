"""Building a `Trace` from columns: what every reader other than Kineto's shares.

A reader collects plain lists (or numpy arrays) per column and calls `build_trace`; columns it
does not have are filled with the model's "unknown" values, and the graph-step columns start
empty. Strings go through one `Strings` interner per trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from perflint.errors import InputError
from perflint.model import (
    NONE,
    CommTable,
    Device,
    GpuTable,
    MemoryTable,
    OpTable,
    PyFnTable,
    RuntimeTable,
    Trace,
)


class Strings:
    """The trace's string table: `id(text)` interns, `list` is `Trace.strings`."""

    def __init__(self) -> None:
        self.list: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, text: str | None) -> int:
        if text is None:
            return NONE
        sid = self._ids.get(text)
        if sid is None:
            sid = self._ids[text] = len(self.list)
            self.list.append(text)
        return sid

    def map(self, keys: np.ndarray, text: Callable[[int], str]) -> np.ndarray:
        """String ids of integer `keys` (a column of a format's own name ids): `text(key)` is
        asked once per distinct key."""
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int32)
        uniq, inv = np.unique(keys, return_inverse=True)
        ids = np.asarray([self.id(text(int(u))) for u in uniq.tolist()], dtype=np.int32)
        return ids[inv.reshape(-1)]

    def remap(self, keys: np.ndarray, text: Callable[[int], str]) -> None:
        """`map` written over `keys` (an int32 column), a slice at a time: a big column is never
        held twice, nor sorted whole."""
        if len(keys) == 0:
            return
        uniq = distinct(keys)
        ids = np.asarray([self.id(text(int(u))) for u in uniq.tolist()], dtype=np.int32)
        for i in range(0, len(keys), _STEP):
            part = keys[i : i + _STEP]
            part[:] = ids[np.searchsorted(uniq, part)]


_STEP = 1 << 20


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a big column, a slice at a time (a few distinct values in
    millions of rows: no full-size sort or copy)."""
    parts = [np.unique(values[i : i + _STEP]) for i in range(0, len(values), _STEP)]
    return np.unique(np.concatenate(parts)) if parts else values[:0].copy()


class Threads:
    """The trace's thread table: `id(pid, tid)` interns, `list` is `Trace.threads`."""

    def __init__(self) -> None:
        self.list: list[tuple[str, str]] = []
        self._ids: dict[tuple[str, str], int] = {}

    def id(self, pid: Any, tid: Any) -> int:
        key = (str(pid), str(tid))
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self.list)
            self.list.append(key)
        return i


# column -> (dtype, value when unknown, width for (n, 3) columns)
_OPS: dict[str, tuple[Any, Any]] = {
    "kind": (np.int8, 0), "name": (np.int32, NONE), "thread": (np.int32, 0), "ts": (np.float64, 0.0),
    "dur": (np.float64, 0.0), "ext_id": (np.int64, NONE), "seq": (np.int64, NONE), "fwd_tid": (np.int64, NONE),
    "dims": (np.int32, NONE), "types": (np.int32, NONE), "concrete": (np.int32, NONE), "stack": (np.int32, NONE),
    "pycall": (np.int32, NONE), "parent": (np.int32, NONE), "depth": (np.int16, 0), "source": (np.int32, NONE), "fwd_op": (np.int32, NONE),
}  # fmt: skip
_RUNTIME: dict[str, tuple[Any, Any]] = {
    "name": (np.int32, NONE), "thread": (np.int32, 0), "ts": (np.float64, 0.0), "dur": (np.float64, 0.0),
    "correlation": (np.int64, NONE), "ext_id": (np.int64, NONE), "op": (np.int32, NONE),
}  # fmt: skip
_GPU: dict[str, tuple[Any, Any]] = {
    "kind": (np.int8, 0), "name": (np.int32, NONE), "device": (np.int32, 0), "stream": (np.int64, NONE),
    "ts": (np.float64, 0.0), "dur": (np.float64, 0.0), "correlation": (np.int64, NONE), "ext_id": (np.int64, NONE),
    "grid": (np.int32, 0), "block": (np.int32, 0), "regs": (np.int32, NONE), "shmem": (np.int32, NONE),
    "blocks_per_sm": (np.float64, np.nan), "warps_per_sm": (np.float64, np.nan), "occupancy": (np.float64, np.nan),
    "nbytes": (np.int64, 0), "collective": (np.int32, NONE), "wait_stream": (np.int64, NONE), "wait_corr": (np.int64, NONE),
    "launch": (np.int32, NONE),
}  # fmt: skip
_PYFN: dict[str, tuple[Any, Any]] = {
    "name": (np.int32, NONE), "thread": (np.int32, 0), "ts": (np.float64, 0.0), "dur": (np.float64, 0.0),
}  # fmt: skip
_MEMORY: dict[str, tuple[Any, Any]] = {
    "thread": (np.int32, 0), "ts": (np.float64, 0.0), "nbytes": (np.int64, 0), "total_allocated": (np.int64, -1),
    "total_reserved": (np.int64, -1), "device_type": (np.int16, -1), "device_id": (np.int16, -1),
}  # fmt: skip
# Collective metadata (model.CommTable): a reader that knows a collective's size, type or process
# group gives one row per event that records it.
_COMMS: dict[str, tuple[Any, Any]] = {
    "side": (np.int8, 0), "ext_id": (np.int64, NONE), "correlation": (np.int64, NONE), "name": (np.int32, NONE),
    "dtype": (np.int32, NONE), "in_nelems": (np.int64, NONE), "out_nelems": (np.int64, NONE),
    "group_size": (np.int64, NONE), "seq": (np.int64, NONE), "rank_start": (np.int64, NONE),
    "rank_stride": (np.int64, NONE), "pg_name": (np.int32, NONE), "pg_desc": (np.int32, NONE), "pg_ranks": (np.int32, NONE),
}  # fmt: skip
_WIDE = {"grid", "block"}  # (n, 3)
# Ids a format records as 32-bit integers (CUPTI's correlation and stream ids) may stay int32 when a
# reader hands them over so: every use compares or looks them up, none does arithmetic on them.
ID32_COLUMNS = frozenset({"correlation", "stream"})
# Columns the graph step fills in: the only ones written after a reader is done.
_FILLED = {"parent", "depth", "source", "fwd_op", "op", "launch"}


def _columns(path: str, what: str, spec: dict[str, tuple[Any, Any]], cols: dict[str, Any]) -> dict[str, np.ndarray]:
    unknown = set(cols) - set(spec)
    if unknown:
        raise ValueError(f"{what}: no such column(s) {sorted(unknown)}")  # a reader bug, not bad input
    n = None
    for k, v in cols.items():
        m = len(v)
        if n is not None and m != n:
            raise ValueError(f"{what}: column {k} has {m} rows, others {n}")
        n = m
    n = n or 0
    out: dict[str, np.ndarray] = {}
    for k, (dtype, missing) in spec.items():
        shape: tuple[int, ...] = (n, 3) if k in _WIDE else (n,)
        if k in cols:
            try:
                given = cols[k]
                if isinstance(given, np.ndarray) and given.dtype.kind in "iu" and np.dtype(dtype).kind == "i":
                    _fits(path, what, k, given, np.iinfo(dtype))
                keep = k in ID32_COLUMNS and isinstance(given, np.ndarray) and given.dtype == np.int32
                arr = given if keep else np.asarray(given, dtype=dtype)
            except (TypeError, ValueError, OverflowError):
                raise InputError(path, f"{what} {k}: values of the wrong type") from None
            if arr.shape != shape:
                arr = arr.reshape(shape)
            out[k] = arr
        elif k in _FILLED:
            out[k] = np.full(shape, missing, dtype=dtype)
        else:
            # A column the format does not record holds one value: a read-only view of it costs
            # no memory (a big export would otherwise carry megabytes of "unknown" per column).
            out[k] = np.broadcast_to(np.asarray(missing, dtype=dtype), shape)
    return out


def _fits(path: str, what: str, col: str, values: np.ndarray, dtype: np.iinfo) -> None:
    """Integers about to be narrowed to the column's type: one beyond it is bad input, not a wrap."""
    if len(values) and values.dtype.itemsize > dtype.bits // 8 and (values.min() < dtype.min or values.max() > dtype.max):
        raise InputError(path, f"{what} {col}: values beyond {dtype.bits} bits")


# A column as a reader hands it over: a list, or an array already of the column's type.
Column = Sequence[Any] | np.ndarray


def build_trace(
    path: str,
    fmt: str,
    strings: Strings,
    threads: Threads,
    *,
    ops: Mapping[str, Column] | None = None,
    runtime: Mapping[str, Column] | None = None,
    gpu: Mapping[str, Column] | None = None,
    pyfn: Mapping[str, Column] | None = None,
    memory: Mapping[str, Column] | None = None,
    comms: Mapping[str, Column] | None = None,
    devices: dict[int, Device] | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    meta: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    recording: dict[str, str] | None = None,
) -> Trace:
    """A `Trace` from the columns a reader has; every other column holds its "unknown" value.
    Raises `InputError` when a column cannot hold its values (text where numbers belong)."""
    return Trace(
        path=path,
        format=fmt,
        strings=strings.list,
        threads=threads.list,
        ops=OpTable(**_columns(path, "op", _OPS, dict(ops or {}))),
        runtime=RuntimeTable(**_columns(path, "runtime call", _RUNTIME, dict(runtime or {}))),
        gpu=GpuTable(**_columns(path, "GPU activity", _GPU, dict(gpu or {}))),
        pyfn=PyFnTable(**_columns(path, "python function", _PYFN, dict(pyfn or {}))),
        memory=MemoryTable(**_columns(path, "memory event", _MEMORY, dict(memory or {}))),
        comms=CommTable(**_columns(path, "collective record", _COMMS, dict(comms or {}))),
        devices=dict(devices or {}),
        rank=rank,
        world_size=world_size,
        meta=dict(meta or {}),
        warnings=list(warnings or []),
        recording=dict(recording or {}),
    )


__all__ = ["ID32_COLUMNS", "Strings", "Threads", "build_trace", "distinct"]
