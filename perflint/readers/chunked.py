"""Decode the traceEvents array of a big trace in slices, so memory stays below the file size.

The array is cut at event boundaries (`}` `,` `{`, whitespace allowed around the comma) and each
slice is decoded as `[slice]` into event structs, turned into columns and dropped before the next.
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
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from perflint.readers.kineto_schema import DECODER, EVENTS_DECODER, Event, TraceFile

DEFAULT_CHUNK_BYTES = 32 << 20
MIN_CHUNK_BYTES = 64
_WS = b" \t\r\n"
_KEY_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_HEAD_SCAN = 1 << 20  # traceEvents comes after device properties: well within the first MB
_TAIL_TRIES = 4096

# Called with (bytes done, bytes total) after each slice; the pipeline sets it for a TTY progress bar.
PROGRESS: Callable[[int, int], None] | None = None


def chunk_bytes() -> int:
    """Slice size; PERFLINT_CHUNK_BYTES forces small slices (the streaming path in tests)."""
    raw = os.environ.get("PERFLINT_CHUNK_BYTES")
    if raw:
        try:
            return max(MIN_CHUNK_BYTES, int(raw))
        except ValueError:
            pass
    return DEFAULT_CHUNK_BYTES


class _Fallback(Exception):
    """The slicing could not be trusted: decode the whole file instead."""


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
    k = buf.rfind(b"}", lo, hi)
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


def _wrap(buf: Any, lo: int, hi: int) -> bytearray:
    out = bytearray(hi - lo + 2)
    out[0] = 0x5B
    read_range = getattr(buf, "read_range", None)
    if read_range is not None:  # a mapped file: pread, no page faults, no file pages kept resident
        with memoryview(out) as mv:
            read_range(lo, hi, mv[1:-1])
    else:
        out[1:-1] = buf[lo:hi]
    out[-1] = 0x5D
    return out


def _decode_events(buf: Any, lo: int, hi: int) -> list[Event] | None:
    try:
        return EVENTS_DECODER.decode(_wrap(buf, lo, hi))
    except msgspec.ValidationError:
        raise _Fallback from None  # a real type error: the whole-file decode words it
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None  # a false boundary (or invalid JSON: the slice grows until the end decides)


class _Releaser:
    """Drops already-processed pages of an mmap from the resident set."""

    def __init__(self, buf: Any) -> None:
        self.mm = buf if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") else None
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


def iter_slices(buf: Any, size: int | None = None) -> Iterator[list[Event]] | None:
    """Event lists of consecutive slices of the traceEvents array; None if the layout is unknown.

    The generator raises `_Fallback` when the slicing fails; `read_sliced` handles it.
    """
    n = len(buf)
    start = _array_start(buf, n)
    if start is None:
        return None
    return _slices(buf, n, start, size or chunk_bytes())


def _slices(buf: Any, n: int, start: int, size: int) -> Iterator[Any]:
    rel = _Releaser(buf)
    pos = start + 1
    progress = PROGRESS
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
                    pos = k + 1
                    # skip the comma
                    while buf[pos] != 0x2C:
                        pos += 1
                    pos += 1
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


def plan(buf: Any, size: int) -> tuple[int, list[tuple[int, int]], int] | None:
    """For parallel decoding: (array start, [(lo, hi)] slices before the last, where the last begins).

    The cuts are found by scanning, not yet proven by decoding (the workers decode them; a slice that
    fails sends the caller back to `read_sliced`)."""
    n = len(buf)
    start = _array_start(buf, n)
    if start is None:
        return None
    pos = start + 1
    ranges: list[tuple[int, int]] = []
    while pos + size < n:
        k = _boundary(buf, pos, pos + size)
        if k < 0:
            return None
        ranges.append((pos, k + 1))
        pos = k + 1
        while buf[pos] != 0x2C:
            pos += 1
        pos += 1
    return start, ranges, pos


def decode_range(buf: Any, lo: int, hi: int) -> list[Event] | None:
    """The events of one planned slice, None if the cut was false (or the JSON invalid)."""
    try:
        return _decode_events(buf, lo, hi)
    except _Fallback:
        return None


def last_slice(buf: Any, start: int, pos: int) -> tuple[list[Event], TraceFile | None] | None:
    """The final slice and the metadata document; None: use the whole-file path."""
    try:
        _, events, doc = _last(buf, len(buf), start, pos)
    except _Fallback:
        return None
    return events, (None if isinstance(doc, list) else doc)


def read_sliced(buf: Any, add: Callable[[list[Event]], None], size: int | None = None) -> tuple[bool, TraceFile | None]:
    """Feed each slice's events to `add`. Returns (ok, metadata doc); ok False: use the whole-file path."""
    it = iter_slices(buf, size)
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


__all__ = ["DEFAULT_CHUNK_BYTES", "PROGRESS", "chunk_bytes", "decode_range", "last_slice", "plan", "read_sliced"]
