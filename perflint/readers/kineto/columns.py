"""The Kineto reader's column specification: each column it fills, the trace key(s) its value comes
from, the rule that reads it, its dtype and its default.

Everything else follows from this module: the structs msgspec decodes events into (schema.py),
the event-by-event reference builder (reference.py), the columnar builders (lenient.py,
strict.py, native_scan.py), the tables the builder hands over (builder.py) and the order of the
rows the C scanner fills (SCANNER_ROWS; the extension reports its own and a test compares). A new
Kineto value is a Field here, its Column in a table below and in the model's table, and its
reading in _kscan.c; each Python builder reads it by its rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from perflint.model import NONE, CommTable, GpuTable, MemoryTable, OpTable, PyFnTable, RuntimeTable, Table

# How a value becomes a column's entry. Each builder implements every rule: the reference one value
# at a time, the others a column at a time; the equality tests hold them to the same result.
KIND = "kind"  # the event's class, from its category (ops: OP_CPU / OP_ANNOTATION; gpu: KERNEL, ...)
SIDE = "side"  # the table the event's class fills: model.COMM_OP for ops, COMM_GPU for GPU activities
NAME = "name"  # the event's name (str() of any other value), interned
THREAD = "thread"  # the event's (pid, tid), interned
TIME = "time"  # a number as float64; anything else is bad input (a missing one is NaN, refused later)
ID = "id"  # an int; a float's whole part or a string's first digits (codes.int_or); else the default
COUNT = "count"  # a JSON integer >= 0 (within int64); anything else (text, a float, negative, bool) is NONE
NUMBER = "number"  # an int or float as float64; anything else NaN
DIM3 = "dim3"  # three ints [x, y, z]; anything else (0, 0, 0)
STREAM = "stream"  # as HTA reads a stream (codes.stream_of)
DEVICE = "device"  # an int (codes.int_or); missing or unreadable: the event's pid read so, else 0
RAW = "raw"  # the value's JSON text, interned; absent: NONE
TEXT = "text"  # a string, interned; anything else NONE
NONEMPTY_TEXT = "nonempty text"  # as TEXT, and "" is NONE too
DEFAULT = "default"  # not in a trace: every row starts at the default (the graph step fills some)

# Rules whose entries are ids into Trace.strings.
STRING_RULES = frozenset({NAME, RAW, TEXT, NONEMPTY_TEXT})
# Rules whose missing value is not a constant (it depends on the event, or on the value's type):
# the strict schema gives None for a missing key.
_MISSING_IS_NONE = frozenset({DEVICE, STREAM, TEXT, NONEMPTY_TEXT})


@dataclass(frozen=True)
class Field:
    """One value of an event, read the same way in every table that has it.

    `keys` are arg names (the first that is present and not null wins: old traces say "external
    id"), or with `event` the event's own keys. `strict` is its type in the strict schema, where
    Any leaves it untyped: a value read from GPU events only, which other events carry with
    other types (a runtime call's "stream": "0x0" on ROCm), so the builders check it themselves."""

    name: str
    keys: tuple[str, ...]
    rule: str
    dtype: Any
    default: Any = NONE
    strict: Any = Any
    event: bool = False
    sparse: bool = False  # usually absent: a column of only the default is kept as one value
    record: bool = False  # read from events with a Collective name only: the scanner's collective records

    @property
    def attrs(self) -> tuple[str, ...]:
        """The struct attribute of each key: the event's keys themselves; for args, the field's
        name, then name_1, name_2 ... for the other spellings."""
        if self.event:
            return self.keys
        return (self.name, *(f"{self.name}_{i}" for i in range(1, len(self.keys))))

    @property
    def missing(self) -> Any:
        """What the strict schema gives for a missing key (the lenient one gives None)."""
        if self.rule == RAW:
            return EMPTY_RAW
        if self.rule in _MISSING_IS_NONE:
            return None
        if self.rule == DIM3:
            return (self.default,) * 3
        return self.default

    @property
    def rows(self) -> tuple[str, ...]:
        """The scanner's rows of this field (three for a DIM3)."""
        if self.rule in (DEFAULT, SIDE):
            return ()
        if self.rule == DIM3:
            return tuple(f"{self.name}.{axis}" for axis in "xyz")
        return (self.name,)

    @property
    def storage(self) -> str | None:
        """The scanner's row type: f64 numbers, i64 ints, i32 string or thread ids (KIND: the
        category's string id)."""
        if self.rule in (TIME, NUMBER):
            return "f64"
        if self.rule in (ID, COUNT, DIM3, STREAM, DEVICE):
            return "i64"
        if self.rule in (DEFAULT, SIDE):
            return None
        return "i32"


EMPTY_RAW = msgspec.Raw()

F64, I64, I32, I16, I8 = np.float64, np.int64, np.int32, np.int16, np.int8
_NAN = float("nan")
_DIM3_TYPE = tuple[int, int, int]

KIND_F = Field("kind", ("cat",), KIND, I8, 0, event=True)
NAME_F = Field("name", ("name",), NAME, I32, event=True)
THREAD_F = Field("thread", ("pid", "tid"), THREAD, I32, event=True)
TS = Field("ts", ("ts",), TIME, F64, _NAN, event=True)
DUR = Field("dur", ("dur",), TIME, F64, _NAN, event=True)
EXT = Field("ext_id", ("External id", "external id"), ID, I64, strict=int)
DIMS_F = Field("dims", ("Input Dims",), RAW, I32, strict=msgspec.Raw)
TYPES = Field("types", ("Input type",), RAW, I32, strict=msgspec.Raw)
CONCRETE = Field("concrete", ("Concrete Inputs",), RAW, I32, strict=msgspec.Raw)
FWD_TID = Field("fwd_tid", ("Fwd thread id",), ID, I64, strict=int)
SEQ = Field("seq", ("Sequence number",), ID, I64, strict=int)
DEVICE_F = Field("device", ("device",), DEVICE, I32, 0)
STREAM_F = Field("stream", ("stream",), STREAM, I64)
CORRELATION = Field("correlation", ("correlation",), ID, I64, strict=int)
REGS = Field("regs", ("registers per thread",), ID, I32)
SHMEM = Field("shmem", ("shared memory",), ID, I64)
BLOCKS_PER_SM = Field("blocks_per_sm", ("blocks per SM",), NUMBER, F64, _NAN)
WARPS_PER_SM = Field("warps_per_sm", ("warps per SM",), NUMBER, F64, _NAN)
GRID = Field("grid", ("grid",), DIM3, I64, 0, strict=_DIM3_TYPE)
BLOCK = Field("block", ("block",), DIM3, I64, 0, strict=_DIM3_TYPE)
OCCUPANCY = Field("occupancy", ("est. achieved occupancy %",), NUMBER, F64, _NAN)
NBYTES = Field("nbytes", ("bytes",), ID, I64)
COLLECTIVE = Field("collective", ("Collective name",), TEXT, I32)
# The rest of PyTorch's collective metadata (record_param_comms ops and, from PyTorch 2.4, the
# collective's kernel): read into the comms table only, from the events that have a Collective
# name. Untyped in the strict schema: a damaged value is unknown, never a failed decode.
SIDE_F = Field("side", ("cat",), SIDE, I8, 0, event=True)
IN_NELEMS = Field("in_nelems", ("In msg nelems",), COUNT, I64, record=True)
OUT_NELEMS = Field("out_nelems", ("Out msg nelems",), COUNT, I64, record=True)
GROUP_SIZE = Field("group_size", ("Group size",), COUNT, I64, record=True)
COMM_DTYPE = Field("comm_dtype", ("dtype",), TEXT, I32, record=True)
PG_NAME = Field("pg_name", ("Process Group Name",), TEXT, I32, record=True)
PG_DESC = Field("pg_desc", ("Process Group Description",), TEXT, I32, record=True)
PG_RANKS = Field("pg_ranks", ("Process Group Ranks",), TEXT, I32, record=True)
COMM_SEQ = Field("comm_seq", ("Seq",), COUNT, I64, record=True)
RANK_START = Field("rank_start", ("Global rank start",), COUNT, I64, record=True)
RANK_STRIDE = Field("rank_stride", ("Global rank stride",), COUNT, I64, record=True)
STACK = Field("stack", ("Call stack",), NONEMPTY_TEXT, I32, strict=str)
# [memory] instant events' args
MEM_BYTES = Field("mem_bytes", ("Bytes",), ID, I64, 0)
TOTAL_ALLOCATED = Field("total_allocated", ("Total Allocated",), ID, I64)
TOTAL_RESERVED = Field("total_reserved", ("Total Reserved",), ID, I64)
DEVICE_TYPE = Field("device_type", ("Device Type",), ID, I16)
DEVICE_ID = Field("device_id", ("Device Id",), ID, I16)
# cuda_sync args of an event wait (cudaStreamWaitEvent, cudaEventSynchronize): the stream the
# event was recorded on and the correlation id of its cudaEventRecord call. Most traces hold
# none: the builders keep a column of only the default as one broadcast value.
WAIT_STREAM = Field("wait_stream", ("wait_on_stream",), ID, I64, sparse=True)
WAIT_CORR = Field("wait_corr", ("wait_on_cuda_event_record_corr_id",), ID, I64, sparse=True)

# Args in the order Kineto writes them (cpu_op args, then kernel args): the strict struct keeps
# this order, as msgspec matches a key against the field after the last one matched first. The
# scanner's rows follow it too (SCANNER_ROWS).
FIELDS: tuple[Field, ...] = (
    KIND_F, NAME_F, THREAD_F, TS, DUR,
    EXT, DIMS_F, TYPES, CONCRETE, FWD_TID, SEQ, DEVICE_F, STREAM_F, CORRELATION, REGS, SHMEM, BLOCKS_PER_SM, WARPS_PER_SM,
    GRID, BLOCK, OCCUPANCY, NBYTES, COLLECTIVE, IN_NELEMS, OUT_NELEMS, GROUP_SIZE, COMM_DTYPE, PG_NAME, PG_DESC,
    PG_RANKS, COMM_SEQ, RANK_START, RANK_STRIDE, STACK,
    MEM_BYTES, TOTAL_ALLOCATED, TOTAL_RESERVED, DEVICE_TYPE, DEVICE_ID, WAIT_STREAM, WAIT_CORR,
)  # fmt: skip


@dataclass(frozen=True)
class Column:
    """A table's column: the field it holds, and what an error about its values calls it."""

    name: str
    field: Field
    label: str


def _col(field: Field, label: str | None = None, name: str | None = None) -> Column:
    return Column(name or field.name, field, label or field.keys[0])


def _later(name: str, dtype: Any, default: Any = NONE) -> Column:
    return Column(name, Field(name, (), DEFAULT, dtype, default), name)


# Each table's columns. String columns are interned in this order within an event (the builders
# number strings by first use: event, then this order).
TABLES: dict[str, tuple[Column, ...]] = {
    "ops": (
        _col(KIND_F, "op kind"), _col(NAME_F, "op name"), _col(THREAD_F, "op thread"), _col(TS, "cpu_op ts"),
        _col(DUR, "cpu_op dur"), _col(EXT, "cpu_op External id"), _col(SEQ), _col(FWD_TID), _col(DIMS_F), _col(TYPES),
        _col(STACK), _col(CONCRETE),
        _later("pycall", I32), _later("parent", I32), _later("depth", I16, 0), _later("source", I32), _later("fwd_op", I32),
    ),
    "runtime": (
        _col(NAME_F, "runtime name"), _col(THREAD_F, "runtime thread"), _col(TS, "runtime ts"), _col(DUR, "runtime dur"),
        _col(CORRELATION, "runtime correlation"), _col(EXT, "runtime External id"),
        _later("op", I32),
    ),
    "gpu": (
        _col(KIND_F, "gpu kind"), _col(NAME_F, "kernel name"), _col(DEVICE_F, "kernel device"),
        _col(STREAM_F, "kernel stream"), _col(TS, "kernel ts"), _col(DUR, "kernel dur"),
        _col(CORRELATION, "kernel correlation"), _col(EXT, "kernel External id"), _col(GRID, "kernel grid"),
        _col(BLOCK, "kernel block"), _col(REGS), _col(SHMEM), _col(BLOCKS_PER_SM), _col(WARPS_PER_SM), _col(OCCUPANCY),
        _col(NBYTES), _col(COLLECTIVE), _col(WAIT_STREAM), _col(WAIT_CORR),
        _later("launch", I32),
    ),
    "pyfn": (
        _col(NAME_F, "python_function name"), _col(THREAD_F, "python_function thread"), _col(TS, "python_function ts"),
        _col(DUR, "python_function dur"),
    ),
    # Only the ops and GPU activities with a Collective name (comms_rows), in event order.
    "comms": (
        _col(SIDE_F, "comms side"), _col(EXT, "comms External id"), _col(CORRELATION, "comms correlation"),
        _col(COLLECTIVE, name="name"), _col(COMM_DTYPE, name="dtype"), _col(IN_NELEMS), _col(OUT_NELEMS), _col(GROUP_SIZE),
        _col(COMM_SEQ, name="seq"), _col(RANK_START), _col(RANK_STRIDE), _col(PG_NAME), _col(PG_DESC), _col(PG_RANKS),
    ),
    "memory": (
        _col(THREAD_F, "[memory] thread"), _col(TS, "[memory] ts"), _col(MEM_BYTES, "[memory] Bytes", "nbytes"),
        _col(TOTAL_ALLOCATED), _col(TOTAL_RESERVED), _col(DEVICE_TYPE), _col(DEVICE_ID),
    ),
}  # fmt: skip
TABLE_TYPES: dict[str, type[Table]] = {
    "ops": OpTable, "runtime": RuntimeTable, "gpu": GpuTable, "pyfn": PyFnTable, "comms": CommTable, "memory": MemoryTable,
}  # fmt: skip
# Tables of complete ("X") events; the memory table holds instant events, which keep the lenient
# schema's types (the strict struct has only the args of these).
COMPLETE_TABLES = ("ops", "runtime", "gpu", "pyfn", "comms")
# The tables whose events may also be comms rows, and the tables an event is a row of first.
COMMS_SOURCES = ("ops", "gpu")
EVENT_TABLES = ("ops", "runtime", "gpu", "pyfn", "memory")
# A comms row's strings are interned after its event's own (the reference builder reads the
# event's table first): its string columns rank after every other table's.
COMMS_RANK = max(len([c for c in TABLES[t] if c.field.rule in STRING_RULES]) for t in EVENT_TABLES)


def read_columns(table: str) -> tuple[Column, ...]:
    """The columns of `table` read from a trace (all but the DEFAULT ones)."""
    return tuple(c for c in TABLES[table] if c.field.rule != DEFAULT)


def string_columns(table: str) -> tuple[str, ...]:
    """Columns of `table` holding string ids, in the order an event's strings are interned."""
    return tuple(c.name for c in TABLES[table] if c.field.rule in STRING_RULES)


def thread_columns(table: str) -> tuple[str, ...]:
    return tuple(c.name for c in TABLES[table] if c.field.rule == THREAD)


def args_fields(complete_only: bool) -> tuple[Field, ...]:
    """The fields read from an event's args (of complete events only: the strict struct's), in
    FIELDS order."""
    tables = COMPLETE_TABLES if complete_only else tuple(TABLES)
    used = {c.field.name for t in tables for c in TABLES[t]}
    return tuple(f for f in FIELDS if not f.event and f.name in used)


def _scanner_rows(record: bool) -> tuple[tuple[str, ...], ...]:
    by: dict[str, list[str]] = {"f64": [], "i64": [], "i32": []}
    for f in FIELDS:
        if f.storage is not None and f.record == record:
            by[f.storage].extend(f.rows)
    if record:
        return (tuple(by["i64"]), tuple(by["i32"]))
    return (tuple(by["f64"]), tuple(by["i64"]), tuple(by["i32"]), SCANNER_FLAGS)


# The scanner's own per-event bytes: the phase class of the event (PH_* in native_scan) and
# whether a GPU event has a value the Python rules would convert (then msgspec reads it).
SCANNER_FLAGS = ("ph", "odd")
# The rows the C scanner fills, per type (f64, i64, i32, u8), in order: _kscan.ROWS must equal it.
SCANNER_ROWS = _scanner_rows(record=False)
# row name -> its index among the rows of its type
ROW: dict[str, int] = {name: i for rows in SCANNER_ROWS for i, name in enumerate(rows)}
# The values of the scanner's collective records (one per event with a Collective name), per type
# (i64, i32), in order: _kscan.COMM_ROWS must equal it; COMM_ROW: a value's index in its type's.
SCANNER_COMM_ROWS = _scanner_rows(record=True)
COMM_ROW: dict[str, int] = {name: i for rows in SCANNER_COMM_ROWS for i, name in enumerate(rows)}


__all__ = [
    "COMMS_RANK", "COMMS_SOURCES", "COMM_ROW", "COMPLETE_TABLES", "COUNT", "DEFAULT", "EVENT_TABLES", "SCANNER_COMM_ROWS", "SIDE", "DEVICE", "DIM3", "FIELDS", "ID", "KIND", "NAME", "NONEMPTY_TEXT", "NUMBER", "RAW", "ROW",
    "SCANNER_ROWS", "STREAM", "STRING_RULES", "TABLES", "TABLE_TYPES", "TEXT", "THREAD", "TIME", "Column", "Field",
    "args_fields", "read_columns", "string_columns", "thread_columns",
]  # fmt: skip
