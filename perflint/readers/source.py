"""Reading a trace file's bytes: plain or gzip, with errors that name the file."""

from __future__ import annotations

import mmap
import os
import stat
import zlib
from collections.abc import Callable
from typing import Any

from perflint.errors import InputError
from perflint.readers import archive
from perflint.readers.gzipped import GZIP as _gzip
from perflint.readers.gzipped import GZIP_ERRORS, GZIP_MAGIC, STREAM_ERRORS, Head, gunzip, head_of
from perflint.readers.gzipped import ZLIB as _zlib

MMAP_MIN_BYTES = 64 << 20
HEAD_BYTES = 64 << 10  # what sniffing a file reads of it
BLANK = b" \t\r\n\xef\xbb\xbf"  # whitespace and a UTF-8 byte-order mark


def read_bytes(path: str) -> bytes:
    """The uncompressed bytes of `path` (gzip detected by magic, not by extension); `path` may
    name an archive member (`archive.SEP`)."""
    member = False
    try:
        mode = os.stat(path).st_mode
        # A FIFO or device would block or never end: only regular files are traces.
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise InputError(path, "not a regular file (FIFO, socket or device)")
        with open(path, "rb") as fh:
            data = fh.read()
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a trace file") from None
    except FileNotFoundError:
        member = True  # read below: not an error raised while handling this one
    except PermissionError:
        raise InputError(path, "permission denied (unreadable file)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    if member:
        data = _member_bytes(path)
    return _content(path, data, member)


def _member_bytes(path: str) -> bytes:
    """The raw bytes of the archive member `path` names; InputError "no such file" when it names
    none."""
    if archive.split(path) is None:
        raise InputError(path, "no such file")
    return archive.read(path)


def _content(path: str, data: bytes, member: bool) -> bytes:
    """`data` decompressed when it is gzip (an archive `member`'s within the memory budget);
    InputError when that fails or nothing is left."""
    if data[:2] == GZIP_MAGIC:
        try:
            if member:
                data = archive.gunzip(path, data)
            else:
                data = gunzip(data)
        except EOFError:
            raise InputError(path, "truncated gzip stream (file ends before the compressed data does)") from None
        except GZIP_ERRORS as exc:
            raise InputError(path, f"corrupt gzip data: {exc}") from None
    if not data or data.isspace():  # not data.strip(): that copies a file ending in a newline
        raise InputError(path, "empty file")
    return data


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


class MappedFile(mmap.mmap):
    """A read-only map of a trace file that also keeps the file open: bulk ranges are read with
    pread (`read_range`), a copy without page faults; the map serves the few random looks."""

    fh: Any = None

    def read_range(self, lo: int, hi: int, out: memoryview) -> None:
        got = os.preadv(self.fh.fileno(), [out], lo) if hasattr(os, "preadv") else 0
        if got != hi - lo:
            out[:] = self[lo:hi]


class PendingRead:
    """A read begun (its slices may be decoding in worker processes): `result()` ends it and gives
    the Trace or raises the read's error; `cancel()` abandons it. Each is done at most once."""

    def __init__(self, finish: Callable[[], Any], cancel: Callable[[], None] | None = None) -> None:
        self._finish: Callable[[], Any] | None = finish
        self._cancel = cancel
        self.started = cancel is not None  # work under way (worker processes) until it ends

    def result(self) -> Any:
        finish, self._finish, self._cancel, self.started = self._finish, None, None, False
        if finish is None:
            raise RuntimeError("the read was already ended")
        return finish()

    def cancel(self) -> None:
        cancel, self._finish, self._cancel, self.started = self._cancel, None, None, False
        if cancel is not None:
            cancel()


class Unavailable(LookupError):
    """Bytes of a GzipStream that are no longer (or not yet) in its ring."""


class GzipStream:
    """A big single-member gzip file, decompressed on demand, so that forked workers decode its
    first slices while the parent decompresses the rest (kineto._read_parallel).

    Until `use_ring`, the bytes go to a small private buffer (format detection reads the head).
    In ring mode they go to a shared anonymous map (forked workers see what is written later)
    used as a ring: offset p lives at p % capacity, the memory is touched once and reused, and
    `make_room(floor)` (set by the reader) is asked to finish the work below `floor` before it is
    overwritten. Anything unexpected -- corrupt or truncated data, several members, a size the
    trailer did not announce (it is the size modulo 4 GiB) -- makes `fill` answer False, and
    `complete` then gives what `read_bytes` gives (or its error)."""

    def __init__(self, path: str, fh: Any, size: int) -> None:
        self.path = path
        self.fh = fh
        self.size = size
        self.buf: Any = bytearray(min(size, GZ_HEAD_BYTES))
        self.cap = len(self.buf)
        self.ring = False
        self.filled = 0
        self.floor = 0  # bytes below this may be overwritten
        self.make_room: Callable[[int], bool] | None = None
        self.ok = True
        self.head = b""  # the first bytes, kept when the ring starts (the metadata before the array)
        self._whole: bytes | bytearray | None = None
        self._rd = _gzip_reader(fh)

    def use_ring(self, capacity: int) -> bool:
        """From now on, decompress into a shared ring of `capacity` bytes; the head buffer is
        filled first and kept (the metadata before the array). False: too late, or bad data."""
        if self.ring or self._whole is not None or self.cap != min(self.size, GZ_HEAD_BYTES) or not self.fill(self.cap):
            return False
        cap = min(self.size, -(-max(capacity, 2 * self.cap) // mmap.PAGESIZE) * mmap.PAGESIZE)
        ring = mmap.mmap(-1, cap)  # MAP_SHARED
        ring[: self.filled] = self.buf[: self.filled]
        self.head = bytes(self.buf[: self.filled])
        self.buf, self.cap, self.ring = ring, cap, True
        return True

    def fill(self, upto: int) -> bool:
        """Decompress until `upto` bytes are there (at most the announced size)."""
        upto = min(upto, self.size)
        if not self.ring and upto > self.cap:
            self._go_private()
        while self.ok and self.filled < upto:
            room = self.size - self.filled + 1  # one byte more than announced is noticed
            p = self.filled % self.cap
            want = min(GZ_STEP_BYTES, room, self.cap - p)  # the ring's contiguous part
            if self.filled + want - self.floor > self.cap and not (
                self.ring and self.make_room is not None and self.make_room(self.filled + want - self.cap)
            ):
                self.ok = False  # would overwrite what is still needed
                break
            try:
                with memoryview(self.buf) as mv:
                    got = self._rd.readinto(mv[p : p + want])
            except STREAM_ERRORS:  # truncated, corrupt, a bad header or CRC
                self.ok = False
                break
            if not got or self.filled + got > self.size:
                self.ok = False  # shorter or longer than announced
                break
            self.filled += got
        return self.ok and self.filled >= upto

    def _go_private(self) -> None:
        """The whole content in one private buffer (no ring: `complete`, or a small trailer). An
        anonymous map, whose pages are zeroed as they are first written: the size comes from the
        trailer, which a truncated file does not have (its last four bytes are data, announcing
        up to 4 GB), and bytearray(size) would zero all of it before the read finds the end."""
        try:
            buf: Any = mmap.mmap(-1, self.size, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_NORESERVE", 0))
        except (OSError, ValueError, TypeError, AttributeError):  # no anonymous private maps (Windows)
            buf = bytearray(self.size)
        buf[: self.filled] = self.buf[: self.filled]
        self.buf, self.cap = buf, self.size

    def finish(self) -> bool:
        """All of it, and the stream ends right there: the reader checks the trailer (CRC and
        length) on reaching it; another member or trailing bytes make it False (then
        `read_bytes` decides)."""
        if not self.fill(self.size):
            return False
        try:
            more = self._rd.read(1) or self.fh.read(1)
        except STREAM_ERRORS:
            more = b"?"
        if more:
            self.ok = False
        return self.ok

    def complete(self) -> bytes | bytearray:
        """The whole content in memory: decompressed here, or `read_bytes` when the stream was
        not as announced (or its ring has moved on)."""
        if self._whole is None:
            try:
                if not self.ring and self.finish() and self._not_blank():
                    self._whole = self.buf
                else:
                    if self.ring:
                        self.buf.close()
                    self._whole = read_bytes(self.path)  # the reference path, and its one-line errors
            finally:
                self.fh.close()
                self._rd = None
            self.buf, self.cap, self.ring, self.head = self._whole, len(self._whole), False, b""
        return self._whole

    def _not_blank(self) -> bool:
        """Some text in the first KiB (else `read_bytes` decides whether the file is empty)."""
        return self.fill(_BLANK_PROBE) and not self.buf[: min(_BLANK_PROBE, self.filled)].isspace()

    def __del__(self) -> None:
        fh = getattr(self, "fh", None)
        if fh is not None:  # a stream dropped early (its format refused): no unclosed-file warning
            fh.close()

    def close(self) -> None:
        """Give the memory back (the trace's tables do not refer to it)."""
        self.fh.close()
        self._rd = None
        if self.ring:
            self.buf.close()
        self.buf = self._whole = None
        self.ring = False

    # -- reading absolute offsets (the chunked reader's buffer interface) ------------------------
    # In a forked worker `filled` is stale: nothing is checked, the parent keeps the bytes there.

    def __getitem__(self, key: Any) -> Any:
        if self._whole is not None:
            return self._whole[key]
        if isinstance(key, int):
            if self.ring or key < self.filled:
                return self.buf[key % self.cap]
            return self.complete()[key]
        lo, hi, _ = key.indices(self.size)
        if hi <= len(self.head):
            return self.head[lo:hi]
        if not self.ring:
            if self._not_blank() and self.fill(hi):
                return bytes(self.buf[lo:hi])  # the head (format detection) before the rest
            return self.complete()[key]
        if hi - lo > self.cap:
            raise Unavailable(lo, hi)
        out = bytearray(max(0, hi - lo))
        self.read_range(lo, hi, memoryview(out))
        return bytes(out)

    def read_range(self, lo: int, hi: int, out: memoryview) -> None:
        p = lo % self.cap
        k = min(hi - lo, self.cap - p)
        with memoryview(self.buf) as mv:
            out[:k] = mv[p : p + k]
            if k < hi - lo:
                out[k:] = mv[: hi - lo - k]

    def rfind(self, sub: bytes, lo: int, hi: int) -> int:
        """Last `sub` (one byte) in [lo, hi)."""
        if hi <= lo:
            return -1
        if hi - lo > self.cap:
            raise Unavailable(lo, hi)
        p, q = lo % self.cap, (hi - 1) % self.cap + 1
        if p < q:
            k: int = self.buf.rfind(sub, p, q)
            return -1 if k < 0 else lo + k - p
        k = self.buf.rfind(sub, 0, q)  # wrapped: the part at the ring's start holds the later bytes
        if k >= 0:
            return hi - q + k
        k = self.buf.rfind(sub, p, self.cap)
        return -1 if k < 0 else lo + k - p

    def __len__(self) -> int:
        return self.size if self.ring else len(self.complete())

    def __bytes__(self) -> bytes:
        return bytes(self.complete())


def _gzip_reader(fh: Any) -> Any:
    """A reader whose readinto decompresses straight into the caller's buffer. python-isal's C
    reader, fed 8 MB of compressed input at a time, holds the GIL only between calls: while the
    main thread loads the rules it decompressed 200 MB in 0.16 s, where a GzipFile (a read call
    into Python every 512 KiB, each waiting for the GIL) took 0.46-0.62 s, and 0.07-0.09 s
    against 0.13 s alone. zlib: GzipFile (a decompressobj's fresh outputs, each faulted in and
    copied into the ring, cost twice the CPU)."""
    if _C_GZIP_READER is not None:
        return _C_GZIP_READER(fh, GZ_INPUT_BYTES)
    return _gzip.GzipFile(fileobj=fh, mode="rb")


# A private name of python-isal (absent from zlib, and from isal releases before it was in C).
_C_GZIP_READER: Any = getattr(_zlib, "_GzipReader", None)


GZ_STREAM_MIN_BYTES = 64 << 20  # uncompressed size (the gzip trailer's) from which a .gz is streamed
MAX_DEFLATE_RATIO = 1032  # deflate cannot expand data more than about 1032 times
GZ_STEP_BYTES = 16 << 20  # one GIL hand-over per step in the reader thread
GZ_INPUT_BYTES = 8 << 20  # compressed input per read call (python-isal's reader)
GZ_HEAD_BYTES = 2 << 20  # decompressed before the reader picks ring or private buffer
_BLANK_PROBE = 1024


def _gzip_stream(path: str, fh: Any, st: os.stat_result) -> GzipStream | None:
    """A stream for a big gzip file, None for a small one (read whole)."""
    if st.st_size < 64:
        return None
    fh.seek(-4, os.SEEK_END)
    size = int.from_bytes(fh.read(4), "little")
    # Plausible: big, not smaller than the compressed file (JSON compresses 5-20x), and not more
    # than deflate can expand it: a damaged trailer must not make the stream reserve gigabytes.
    if size < GZ_STREAM_MIN_BYTES or size < st.st_size or size > MAX_DEFLATE_RATIO * st.st_size:
        return None
    fh.seek(0)
    return GzipStream(path, fh, size)


def open_source(path: str) -> bytes | mmap.mmap | GzipStream:
    """The uncompressed content of `path`: an mmap for a big plain file (pages are read on demand
    and can be released), a GzipStream for a big .gz, else bytes (`read_bytes`). Same errors as
    `read_bytes`."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode) and st.st_size >= MMAP_MIN_BYTES:
            fh = open(path, "rb")
            if fh.read(2) != GZIP_MAGIC:
                mm = MappedFile(fh.fileno(), 0, access=mmap.ACCESS_READ)
                mm.fh = fh
                return mm
            fh.close()
        elif stat.S_ISREG(st.st_mode):
            fh = open(path, "rb")
            stream = _gzip_stream(path, fh, st) if fh.read(2) == GZIP_MAGIC else None
            if stream is not None:
                return stream
            fh.close()
    except (OSError, ValueError):
        pass  # read_bytes words the problem
    return read_bytes(path)


def head(path: str, limit: int = HEAD_BYTES) -> Head | None:
    """The first `limit` bytes of the content and whether that is all of it; None when the file
    cannot be read or decompressed that far (the reader words the problem). `path` may name an
    archive member."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO or device would block: the reader words the problem
        with open(path, "rb") as fh:
            return head_of(fh, limit)
    except FileNotFoundError:
        return archive.member_head(path, limit) if archive.split(path) is not None else None
    except (OSError, zlib.error):
        return None
