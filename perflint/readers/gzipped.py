"""gzip content: the decompressor (python-isal's where installed), its errors, and the first bytes
of a stream whose content may be gzip. Below `source` (files) and `archive` (members), which
both read gzip content."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

# python-isal (Intel's ISA-L) decompresses gzip 2.5x faster than zlib with zlib's API; where it
# has no wheel, zlib does the same work.
try:
    from isal import igzip as GZIP
    from isal import isal_zlib as ZLIB

    # isal's stub declares `error` an instance of Exception; it is the module's exception class.
    ZLIB_ERRORS: tuple[type[Exception], ...] = (zlib.error, ZLIB.error)  # type: ignore[assignment]
except ImportError:  # pragma: no cover - platforms without an isal wheel
    GZIP, ZLIB = gzip, zlib  # type: ignore[misc]
    ZLIB_ERRORS = (zlib.error,)
# Named tuples of classes: mypy does not read a starred name inside an `except (...)` tuple.
GZIP_ERRORS: tuple[type[Exception], ...] = (OSError, *ZLIB_ERRORS)
STREAM_ERRORS: tuple[type[Exception], ...] = (EOFError, *GZIP_ERRORS)  # truncated, corrupt, a bad header or CRC
HEAD_ERRORS: tuple[type[Exception], ...] = (ValueError, *STREAM_ERRORS)  # and a stream closed under the reader

GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + zlib.MAX_WBITS

# The first bytes of a content and whether that is all of it.
Head = tuple[bytes, bool]


def head_of(fh: Any, limit: int) -> Head | None:
    """The first `limit` bytes of the content read from the binary stream `fh` (decompressed when
    gzip) and whether that is all of it; None when it cannot be decompressed that far."""
    try:
        raw = fh.read(limit + 1)
        if raw[:2] != GZIP_MAGIC:
            return raw[:limit], len(raw) <= limit
        inflate = zlib.decompressobj(GZIP_WBITS)
        out = bytearray()
        while raw and len(out) <= limit:
            out += inflate.decompress(raw, limit + 1 - len(out))
            if inflate.unconsumed_tail:
                raw = inflate.unconsumed_tail
            elif inflate.eof:
                break
            else:
                raw = fh.read(1 << 16)
        if len(out) <= limit and not inflate.eof:
            return None  # truncated inside the head
        # A second gzip member after the first would be more content: rare enough to read it as "more".
        complete = len(out) <= limit and not inflate.unused_data and not fh.read(1)
        return bytes(out[:limit]), complete
    except HEAD_ERRORS:
        return None


def gzip_reader(fh: Any) -> Any:
    """A seekable GzipFile over the binary stream `fh`."""
    return GZIP.GzipFile(fileobj=fh, mode="rb")


def gunzip(data: bytes) -> bytes:
    """The content of gzip `data` (every member); EOFError or GZIP_ERRORS when it is damaged."""
    return bytes(GZIP.decompress(data))


__all__ = ["GZIP", "GZIP_ERRORS", "GZIP_MAGIC", "GZIP_WBITS", "HEAD_ERRORS", "STREAM_ERRORS", "ZLIB", "ZLIB_ERRORS", "Head", "gunzip", "gzip_reader", "head_of"]
