"""msgspec structs for the Kineto / Chrome-trace JSON fields perflint reads.

The structs hold no references the cyclic GC must trace (`gc=False`: they are never
tracked, so millions of them cost the collector nothing). Decoding straight into these structs (unknown keys skipped in C) is several times
faster and smaller than building dicts. Field names are the Kineto
arg names across versions (old traces say "external id", new "External id").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, Union

import msgspec
from msgspec import field

EMPTY_RAW = msgspec.Raw()


class Args(msgspec.Struct, omit_defaults=True, gc=False):
    ext: Any = field(name="External id", default=None)
    ext_lc: Any = field(name="external id", default=None)
    correlation: Any = None
    seq: Any = field(name="Sequence number", default=None)
    fwd_tid: Any = field(name="Fwd thread id", default=None)
    dims: msgspec.Raw = field(name="Input Dims", default=EMPTY_RAW)
    types: msgspec.Raw = field(name="Input type", default=EMPTY_RAW)
    concrete: msgspec.Raw = field(name="Concrete Inputs", default=EMPTY_RAW)
    stack: Any = field(name="Call stack", default=None)
    grid: Any = None
    block: Any = None
    grid_dim: Any = None  # MindSpore GPU timeline ("8,1,1")
    block_dim: Any = None
    regs: Any = field(name="registers per thread", default=None)
    shmem: Any = field(name="shared memory", default=None)
    blocks_per_sm: Any = field(name="blocks per SM", default=None)
    warps_per_sm: Any = field(name="warps per SM", default=None)
    occupancy: Any = field(name="est. achieved occupancy %", default=None)
    stream: Any = None
    device: Any = None
    nbytes: Any = field(name="bytes", default=None)
    collective: Any = field(name="Collective name", default=None)
    # [memory] instant events
    mem_bytes: Any = field(name="Bytes", default=None)
    total_allocated: Any = field(name="Total Allocated", default=None)
    total_reserved: Any = field(name="Total Reserved", default=None)
    device_type: Any = field(name="Device Type", default=None)
    device_id: Any = field(name="Device Id", default=None)


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Union[Args, None] = None


class _TraceMeta(msgspec.Struct, kw_only=True, gc=False):
    """The document's keys around traceEvents, the same for the lenient and the strict schema."""

    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    schemaVersion: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    cupti_version: Any = None


class TraceFile(_TraceMeta, kw_only=True, gc=False):
    traceEvents: list[Event]


TraceDoc = Union[TraceFile, list[Event]]
DECODER: msgspec.json.Decoder[TraceDoc] = msgspec.json.Decoder(TraceDoc)
# One slice of the traceEvents array, wrapped in brackets (the chunked reader).
EVENTS_DECODER: msgspec.json.Decoder[list[Event]] = msgspec.json.Decoder(list[Event])
DEFAULT_ARGS = Args()


# --------------------------------------------------------------------------- the strict schema
# The common shape of a trace, typed so that decoding gives values ready for numpy: the reader
# tries it first and falls back to the Any-typed schema above when it raises ValidationError.
# Every value it accepts is one the lenient schema gives the same way (a JSON int in a float
# field is the float the lenient column conversion makes of it); anything odd (bools, strings
# or floats in id fields, nulls, a phase not listed, a missing ph) fails here and takes the
# lenient path. Defaults are what the lenient builder makes of a missing key (NONE ids, NaN
# times); the Optional ones are those whose missing value depends on another field.

_NONE = -1
_NAN = float("nan")


class XArgs(msgspec.Struct, gc=False):
    # In the order Kineto writes them (cpu_op, then kernel args): msgspec matches a key against
    # the field after the last one matched first.
    ext: Union[int, None] = field(name="External id", default=None)
    dims: msgspec.Raw = field(name="Input Dims", default=EMPTY_RAW)
    types: msgspec.Raw = field(name="Input type", default=EMPTY_RAW)
    concrete: msgspec.Raw = field(name="Concrete Inputs", default=EMPTY_RAW)
    fwd_tid: int = field(name="Fwd thread id", default=_NONE)
    seq: int = field(name="Sequence number", default=_NONE)
    # Read from GPU events only, and other events carry them with other types (a runtime call's
    # "stream": "0x0" on ROCm): untyped, and the GPU columns check the types they get.
    device: Any = None
    stream: Any = None
    correlation: int = _NONE
    regs: Any = field(name="registers per thread", default=_NONE)
    shmem: Any = field(name="shared memory", default=_NONE)
    blocks_per_sm: Any = field(name="blocks per SM", default=_NAN)
    warps_per_sm: Any = field(name="warps per SM", default=_NAN)
    grid: tuple[int, int, int] = (0, 0, 0)
    block: tuple[int, int, int] = (0, 0, 0)
    occupancy: Any = field(name="est. achieved occupancy %", default=_NAN)
    nbytes: Any = field(name="bytes", default=_NONE)
    collective: Any = field(name="Collective name", default=None)
    stack: Union[str, None] = field(name="Call stack", default=None)
    ext_lc: int = field(name="external id", default=_NONE)


class _AnyArgs(msgspec.Struct, gc=False):
    """Unused args: only checked to be an object (or null), as the lenient schema does."""


class StrictEvent(msgspec.Struct, tag_field="ph", gc=False):
    """Base of the strict event union; `cat` is the category of a complete event and a constant
    of the others (SKIP_CAT, INSTANT_CAT), so one attribute read classifies any event. The
    constant is a field, not a class variable: CPython reads a slot several times faster. Its
    JSON name is one no trace uses, and any value but the default fails the strict decode."""


SKIP_CAT: Final = 0
INSTANT_CAT: Final = 1
_CODE_KEY = "perflint: event class"


class XEvent(StrictEvent, tag="X", gc=False):
    cat: str = ""
    name: str = "None"  # the lenient builder names a nameless event str(None)
    pid: Union[int, str, None] = None
    tid: Union[int, str, None] = None
    ts: float = _NAN
    dur: float = _NAN
    args: XArgs = field(default_factory=XArgs)


class IEvent(StrictEvent, tag="i", gc=False):
    """Instant events ([memory] records) keep the lenient field types: the lenient code reads them."""

    cat: Literal[1] = field(name=_CODE_KEY, default=INSTANT_CAT)
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    args: Union[Args, None] = None


class IEventUpper(IEvent, tag="I", gc=False):
    pass


class SkipEvent(StrictEvent, gc=False):
    cat: Literal[0] = field(name=_CODE_KEY, default=SKIP_CAT)
    args: Union[_AnyArgs, None] = None


# The other Chrome trace phases (flows, metadata, counters, async, ...): nothing is read from them.
_SKIP_PHASES = ("B", "E", "C", "b", "n", "e", "S", "T", "p", "F", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v", "R", "c", "(", ")")
_SKIPS = tuple(msgspec.defstruct(f"Skip{i}", [], bases=(SkipEvent,), tag=ph, gc=False) for i, ph in enumerate(_SKIP_PHASES))
# A union built at run time: the skip classes are made above. Named first: mypy reads a starred
# subscript as Python 3.11's syntax.
_STRICT_EVENTS = (XEvent, IEvent, IEventUpper, *_SKIPS)
AnyStrictEvent = Union[_STRICT_EVENTS]  # type: ignore[valid-type]


class StrictTraceFile(_TraceMeta, kw_only=True, gc=False):
    traceEvents: list[AnyStrictEvent]


STRICT_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[StrictTraceFile, list[AnyStrictEvent]])
STRICT_EVENTS_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(list[AnyStrictEvent])


class StrictSlice:
    """Events decoded with the strict schema, and how to decode the same bytes leniently (for a
    value the strict columns cannot take, e.g. an id beyond int64: the lenient path words it)."""

    __slots__ = ("events", "redo")

    def __init__(self, events: list[Any], redo: Callable[[], list[Event]]) -> None:
        self.events = events
        self.redo = redo

    def __len__(self) -> int:
        return len(self.events)
