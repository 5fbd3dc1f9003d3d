"""Decode the traceEvents array of a big trace in slices, so memory stays below the file size.

The array is cut at event boundaries (`}` `,` `{`, whitespace allowed around the comma) and each
slice is read by the C scanner straight into columns when it is built (native_scan.py; the events
it does not take go to msgspec), else decoded as `[slice]` into event structs, turned into
columns and dropped before the next. msgspec's slices are small (SUB_BYTES, a few thousand
events: their objects are still in the CPU cache when the columns are read) and decoded with the
strict schema first (schema.StrictEvent), the lenient one when it refuses. For the parallel reader, `plan_iter` cuts the array into a few big
slices per worker (each decoded as sub-slices by `decode_range`), also for a buffer still being
filled (a streamed .gz).

A cut that falls inside an event (the pattern inside a string or a nested object) leaves an
unbalanced slice that cannot decode, so the slice is grown to the next boundary and retried: a
slice that decodes is exactly a run of whole events. Anything unexpected (no traceEvents key found
by the scan, a slice that never decodes, a value of the wrong type) returns None and the caller
decodes the whole file the reference way, which also gives the one-line error of bad input.

For a plain file the buffer is an mmap: processed pages are released with MADV_DONTNEED, so the
file's pages never accumulate in the resident set.
"""

from __future__ import annotations

import mmap
import os
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any, Union

import msgspec

from perflint.readers.kineto import native_scan
from perflint.readers.kineto.schema import DECODER, EVENTS_DECODER, STRICT_EVENTS_DECODER, Event, StrictSlice, TraceFile
from perflint.readers.source import MappedFile

DEFAULT_CHUNK_BYTES = 32 << 20
# Slices are decoded this small, whatever the chunk size: a slice's event objects are still in
# the CPU cache when its columns are read, and the allocator reuses the same memory for the next.
SUB_BYTES = 256 << 10
# The C scanner makes no object per event, so the cache argument does not hold for it; bigger
# slices spread its per-slice numpy work over more events.
NATIVE_SUB_BYTES = 4 << 20
MIN_CHUNK_BYTES = 64
_WS = b" \t\r\n"
_KEY_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_HEAD_SCAN = 1 << 20  # traceEvents comes after device properties: well within the first MB
_TAIL_TRIES = 4096

# A slice's events: scanned into columns, strictly typed, or the lenient structs (slices.add_slice takes all three).
Events = Union[list[Event], StrictSlice, native_scan.NativeSlice, native_scan.Parts]

def chunk_bytes() -> int:
    """Slice size; PERFLINT_CHUNK_BYTES forces small slices (the streaming path in tests)."""
    raw = os.environ.get("PERFLINT_CHUNK_BYTES")
    if raw:
        try:
            return max(MIN_CHUNK_BYTES, int(raw))
        except ValueError:
            pass
    return DEFAULT_CHUNK_BYTES


def sub_bytes() -> int:
    """The size slices are decoded at (see SUB_BYTES)."""
    return NATIVE_SUB_BYTES if native_scan.available() else SUB_BYTES


class _Fallback(Exception):
    """The slicing could not be trusted: decode the whole file instead."""


Fallback = _Fallback  # for the parallel reader, which drives `plan_iter` itself


def _array_start(buf: Any, n: int) -> int | None:
    """Offset of the traceEvents array's '[' (a bare event list is its own array)."""
    i = 0
    while i < n and buf[i : i + 1] in (b" ", b"\t", b"\r", b"\n"):
        i += 1
    first = buf[i : i + 1]
    if first == b"[":
        return i
    if first != b"{":
        return None
    m = _KEY_RE.search(buf[i : min(n, i + _HEAD_SCAN)])
    if m is None:
        return None
    return i + m.end() - 1


def _boundary(buf: Any, lo: int, hi: int) -> int:
    """The last `}` in [lo, hi) followed by `,` and then `{` (whitespace between); -1 if none."""
    k: int = buf.rfind(b"}", lo, hi)
    while k >= lo:
        j = k + 1
        while j < hi and buf[j] in _WS:
            j += 1
        if j < hi and buf[j] == 0x2C:  # ","
            j += 1
            while j < hi and buf[j] in _WS:
                j += 1
            if j < hi and buf[j] == 0x7B:  # "{"
                return k
        k = buf.rfind(b"}", lo, k)
    return -1


def _wrap(buf: Any, lo: int, hi: int, out: bytearray | None = None) -> bytearray:
    """buf[lo:hi] in brackets, in `out` (its first hi - lo + 2 bytes) or a new bytearray."""
    n = hi - lo
    if out is None:
        out = bytearray(n + 2)
    out[0] = 0x5B
    read_range = getattr(buf, "read_range", None)
    with memoryview(out) as dst:
        if read_range is not None:  # a mapped file: pread, no page faults, no file pages kept resident
            read_range(lo, hi, dst[1 : n + 1])
        else:
            with memoryview(buf) as mv:  # one copy, not a slice and then a copy of it
                dst[1 : n + 1] = mv[lo:hi]
    out[n + 1] = 0x5D
    return out


# The scanner copies out all it keeps, so its input can be one buffer per thread, reused: fresh
# megabytes per slice cost page faults.
_SCRATCH = threading.local()


def _scratch(n: int) -> bytearray:
    buf: bytearray | None = getattr(_SCRATCH, "buf", None)
    if buf is None or len(buf) < n:
        buf = _SCRATCH.buf = bytearray(n)
    return buf


def _decode_events(buf: Any, lo: int, hi: int) -> Events | None:
    """The slice's events: scanned into columns by the C scanner when it is built (events it
    leaves go to msgspec), else strictly typed when the strict schema takes them (see schema.py)."""
    if native_scan.available():
        n = hi - lo + 2
        data = _wrap(buf, lo, hi, _scratch(n))
        scanned = native_scan.scan(data, 1, n - 1, lambda a, b: _msgspec_events(_wrap(data, a, b)))
        if scanned is not None:
            return scanned
        return _msgspec_events(data[:n])  # msgspec's values may keep their input: a copy of its own
    return _msgspec_events(_wrap(buf, lo, hi))


def _msgspec_events(data: bytearray) -> Events | None:
    """`data` (a bracketed slice) decoded by msgspec; None: not JSON (a false boundary, or bad input)."""
    try:
        return StrictSlice(STRICT_EVENTS_DECODER.decode(data), lambda: EVENTS_DECODER.decode(data))
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        pass  # the lenient decode decides: odd values, a false boundary or bad JSON
    try:
        return EVENTS_DECODER.decode(data)
    except msgspec.ValidationError:
        raise _Fallback from None  # a real type error: the whole-file decode words it
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None  # a false boundary (or invalid JSON: the slice grows until the end decides)


class _Releaser:
    """Drops already-processed pages of an mmap from the resident set."""

    def __init__(self, buf: Any) -> None:
        # Only a mapped file: its released pages read back from the file; an anonymous map's are lost.
        self.mm = buf if isinstance(buf, MappedFile) and hasattr(mmap, "MADV_DONTNEED") else None
        self.done = 0

    def upto(self, pos: int) -> None:
        if self.mm is None:
            return
        end = pos - pos % mmap.PAGESIZE
        if end > self.done:
            try:
                self.mm.madvise(mmap.MADV_DONTNEED, self.done, end - self.done)
            except (OSError, ValueError):
                self.mm = None
                return
            self.done = end


def iter_slices(buf: Any, size: int | None = None, progress: Callable[[int, int], None] | None = None) -> Iterator[Events] | None:
    """Event lists of consecutive slices of the traceEvents array; None if the layout is unknown.

    The generator raises `_Fallback` when the slicing fails; `read_sliced` handles it.
    """
    n = len(buf)
    start = _array_start(buf, n)
    if start is None:
        return None
    return _slices(buf, n, start, min(size or chunk_bytes(), sub_bytes()), progress)


def _slices(buf: Any, n: int, start: int, size: int, progress: Callable[[int, int], None] | None = None) -> Iterator[Any]:
    rel = _Releaser(buf)
    pos = start + 1
    while True:
        hi = pos + size
        events = None
        while hi < n:
            k = _boundary(buf, pos, hi)
            if k >= 0:
                events = _decode_events(buf, pos, k + 1)
                if events is not None:
                    yield events
                    del events
                    pos = after(buf, k + 1)
                    rel.upto(pos)
                    if progress is not None:
                        progress(pos, n)
                    break
            hi += size  # no boundary, or a false one: grow the slice
        else:
            last = _last(buf, n, start, pos)
            rel.upto(n)
            if progress is not None:
                progress(n, n)
            yield last
            return


def _last(buf: Any, n: int, start: int, pos: int) -> Any:
    """The final slice up to the array's `]`, then the metadata around the array."""
    c = n
    head = bytes(buf[:start])
    for _ in range(_TAIL_TRIES):
        c = buf.rfind(b"]", pos, c)
        if c < 0:
            break
        # The metadata after the array is small and checked first: a `]` inside it (a string,
        # a trailing WARNING list) fails here without decoding the events.
        try:
            doc = DECODER.decode(head + b"[]" + bytes(buf[c + 1 :]))
        except msgspec.ValidationError:
            raise _Fallback from None
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue
        events = _decode_events(buf, pos, c) if buf[pos:c].strip() else []
        if events is None:
            continue  # the end of a trailing top-level list (WARNING: [...]) also leaves a valid tail
        return ("last", events, doc)
    raise _Fallback


def plan(buf: Any, size: int, parts: int = 0) -> tuple[int, list[tuple[int, int]], int] | None:
    """For parallel decoding: (array start, [(lo, hi)] slices before the last, where the last begins).

    The slices are about equal, at most `size` bytes and at least `parts` of them (so that
    workers finish together); the last, decoded with the metadata by the caller, is at most
    one sub-slice. The cuts are found by scanning, not yet proven by decoding (the workers
    decode them; a slice that fails sends the caller back to `read_sliced`)."""
    planned = plan_iter(buf, size, parts)
    if planned is None:
        return None
    start, cuts = planned
    try:
        ranges = list(cuts)
    except _Fallback:
        return None
    return start, ranges, after(buf, ranges[-1][1]) if ranges else start + 1


def plan_iter(
    buf: Any, size: int, parts: int = 0, n: int | None = None, fill: Callable[[int], bool] | None = None
) -> tuple[int, Iterator[tuple[int, int]]] | None:
    """`plan` one cut at a time, for a buffer still being filled: `n` is its final length and
    `fill(upto)` makes the first `upto` bytes available (False: they never will be). The
    iterator raises _Fallback when no cut can be made."""
    if n is None:
        n = len(buf)
    if fill is not None and not fill(min(n, _HEAD_SCAN + 64)):
        return None
    try:
        start = _array_start(buf, n if fill is None else min(n, _HEAD_SCAN + 64))
    except LookupError:  # a stream's ring too small for the head scan
        return None
    if start is None:
        return None
    return start, _cuts(buf, n, start, size, parts, fill)


def _cuts(buf: Any, n: int, start: int, size: int, parts: int, fill: Callable[[int], bool] | None) -> Iterator[tuple[int, int]]:
    pos = start + 1
    end = n - min(size, SUB_BYTES)
    if end <= pos:
        return
    count = max(parts, -(-(end - pos) // size))
    step = (end - pos) / count
    for i in range(1, count + 1):
        target = min(end, start + 1 + int(step * i))
        if fill is not None and not fill(target):
            raise _Fallback
        k = _boundary(buf, pos, target)
        if k < 0:
            if pos > start + 1:
                return  # an event longer than a slice: the last slice takes the rest
            raise _Fallback
        yield pos, k + 1
        pos = after(buf, k + 1)


def after(buf: Any, hi: int) -> int:
    """Where the slice after one ending at `hi` begins: past the comma."""
    while buf[hi] != 0x2C:
        hi += 1
    return hi + 1


def _range_slices(buf: Any, lo: int, hi: int, size: int) -> Iterator[Events]:
    """The sub-slices of one planned slice [lo, hi); _Fallback if a piece never decodes."""
    pos = lo
    while True:
        cut = pos + size
        while True:
            if cut >= hi:
                events = _decode_events(buf, pos, hi)
                if events is None:
                    raise _Fallback  # the planned cut itself was false
                yield events
                return
            k = _boundary(buf, pos, cut)
            if k >= 0:
                events = _decode_events(buf, pos, k + 1)
                if events is not None:
                    yield events
                    del events
                    pos = after(buf, k + 1)
                    break
            cut += size  # no boundary, or a false one: grow the piece


def decode_range(buf: Any, lo: int, hi: int, add: Callable[[Events], None]) -> bool:
    """Feed the events of one planned slice to `add`, a sub-slice at a time; False if the cut
    was false (or the JSON invalid)."""
    try:
        for events in _range_slices(buf, lo, hi, sub_bytes()):
            add(events)
            del events
    except _Fallback:
        return False
    return True


def last_slice(buf: Any, start: int, pos: int, n: int | None = None) -> tuple[Events, TraceFile | None] | None:
    """The final slice and the metadata document; None: use the whole-file path."""
    try:
        _, events, doc = _last(buf, len(buf) if n is None else n, start, pos)
    except _Fallback:
        return None
    return events, (None if isinstance(doc, list) else doc)


def read_sliced(
    buf: Any, add: Callable[[Events], None], size: int | None = None, progress: Callable[[int, int], None] | None = None
) -> tuple[bool, TraceFile | None]:
    """Feed each slice's events to `add`, calling `progress(done, total)` (bytes) as it goes.
    Returns (ok, metadata doc); ok False: use the whole-file path."""
    it = iter_slices(buf, size, progress)
    if it is None:
        return False, None
    try:
        for item in it:
            if isinstance(item, tuple):
                _, events, doc = item
                add(events)
                return True, (None if isinstance(doc, list) else doc)
            add(item)
    except _Fallback:
        return False, None
    return False, None


__all__ = ["DEFAULT_CHUNK_BYTES", "Fallback", "after", "chunk_bytes", "decode_range", "last_slice", "plan", "plan_iter", "read_sliced"]
