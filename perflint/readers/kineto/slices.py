"""A slice of events, in whichever form it was decoded (chunked.Events), added to a builder by the
slice builder for that form: the C scanner's columns (native_scan), strictly typed structs
(strict, redone leniently when it misses) or lenient structs (lenient).
"""

from __future__ import annotations

from collections.abc import Callable

from perflint.readers.kineto.builder import ColumnBuilder
from perflint.readers.kineto.chunked import Events
from perflint.readers.kineto.lenient import add_lenient
from perflint.readers.kineto.native_scan import NativeSlice, Parts, add_native
from perflint.readers.kineto.schema import StrictSlice
from perflint.readers.kineto.strict import StrictMiss, add_strict


def add_slice(b: ColumnBuilder, events: Events) -> None:
    """Append one slice's events to `b`."""
    if isinstance(events, NativeSlice):
        add_native(b, events)
    elif isinstance(events, Parts):
        for part in events:
            add_slice(b, part)
    elif isinstance(events, StrictSlice):
        try:
            add_strict(b, events.events)
        except StrictMiss:
            add_lenient(b, events.redo())
    else:
        add_lenient(b, events)


def adder(b: ColumnBuilder) -> Callable[[Events], None]:
    """`add_slice` into `b`: the callback the slicers feed."""
    return lambda events: add_slice(b, events)


__all__ = ["add_slice", "adder"]
