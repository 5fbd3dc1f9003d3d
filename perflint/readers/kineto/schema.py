"""msgspec structs for the Kineto / Chrome-trace JSON fields perflint reads.

The structs hold no references the cyclic GC must trace (`gc=False`: they are never
tracked, so millions of them cost the collector nothing). Decoding straight into these structs (unknown keys skipped in C) is several times
faster and smaller than building dicts. The args structs are made from the column
specification (columns.py): one attribute per arg key it names, across Kineto versions (old
traces say "external id", new "External id").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, Optional, Union

import msgspec
from msgspec import field

from perflint.readers.kineto.columns import EMPTY_RAW, RAW, Field, args_fields


def _args_struct(name: str, fields: tuple[Field, ...], strict: bool) -> type[msgspec.Struct]:
    """A struct of `fields`' args: untyped (Any, or Raw JSON text) and None when missing, or
    with `strict` typed as the field says, defaulting to what the lenient builder makes of a
    missing key. Every key but a field's last is Optional, so that a missing one is told from a
    value; the other spellings come after all first ones (they are rare)."""
    first: list[tuple[str, Any, Any]] = []
    others: list[tuple[str, Any, Any]] = []
    for f in fields:
        for i, (attr, key) in enumerate(zip(f.attrs, f.keys)):
            last = i == len(f.keys) - 1
            typ: Any
            if f.rule == RAW:
                typ, default = msgspec.Raw, EMPTY_RAW
            elif not strict:
                typ, default = Any, None
            else:
                default = f.missing if last else None
                typ = f.strict if default is not None or f.strict is Any else Optional[f.strict]
            (first if i == 0 else others).append((attr, typ, field(name=key, default=default)))
    return msgspec.defstruct(name, first + others, omit_defaults=True, gc=False)


# Every arg the tables read, as the lenient schema decodes it.
Args = _args_struct("Args", args_fields(complete_only=False), strict=False)
DEFAULT_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Union[Args, None] = None  # type: ignore[valid-type]


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


# --------------------------------------------------------------------------- the strict schema
# The common shape of a trace, typed so that decoding gives values ready for numpy: the reader
# tries it first and falls back to the Any-typed schema above when it raises ValidationError.
# Every value it accepts is one the lenient schema gives the same way (a JSON int in a float
# field is the float the lenient column conversion makes of it); anything odd (bools, strings
# or floats in id fields, nulls, a phase not listed, a missing ph) fails here and takes the
# lenient path. Defaults are what the lenient builder makes of a missing key (NONE ids, NaN
# times; columns.Field.missing).

_NAN = float("nan")


# The args of complete events, typed; GPU-only ones stay untyped (columns.Field.strict).
XArgs = _args_struct("XArgs", args_fields(complete_only=True), strict=True)


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
    args: XArgs = field(default_factory=XArgs)  # type: ignore[valid-type]


class IEvent(StrictEvent, tag="i", gc=False):
    """Instant events ([memory] records) keep the lenient field types: the lenient code reads them."""

    cat: Literal[1] = field(name=_CODE_KEY, default=INSTANT_CAT)
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    args: Union[Args, None] = None  # type: ignore[valid-type]


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
