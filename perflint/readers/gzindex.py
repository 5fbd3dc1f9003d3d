"""Reading a gzip file's content at chosen offsets without decompressing it from the start each
time.

gzip has no index: reading the members of a compressed tar one by one would decompress the
archive up to each of them, which grows with the square of the member count. An `Index` names
the content offsets a caller will read from (`marks`: where members start); an `IndexedGzip`
decompressing past a mark saves a point there (the file offset and a copy of zlib's decompressor
state, about 40 KB), and a later seek, by the same or another reader of the same Index, resumes
from the nearest point before its offset. Reading every member of an archive then decompresses it
about once, in any order.

zlib's decompressor is used because its state can be copied (python-isal's cannot): it is about
five times slower, so `archive` uses this only where the members are many enough to gain.
"""

from __future__ import annotations

import bisect
import io
import threading
import zlib
from typing import Any

from perflint.readers.gzipped import GZIP_MAGIC, GZIP_WBITS

MAX_MARKS = 512  # saved states per file at most (about 20 MB)
_INPUT_BYTES = 256 << 10
_OUTPUT_BYTES = 4 << 20  # content decoded per step: what one read holds beyond what is asked


class Index:
    """The points of one gzip file at `marks` (content offsets, at most MAX_MARKS of them: every
    k-th when there are more), as readers reach them: (content offset, file offset of the input
    that follows, the decompressor's state there). Shared by the readers of the file in one
    process."""

    def __init__(self, marks: list[int]) -> None:
        marks = sorted(set(marks))
        step = -(-len(marks) // MAX_MARKS) or 1
        self.marks = marks[::step]
        self.points: list[tuple[int, int, Any]] = []
        self._lock = threading.Lock()

    def before(self, pos: int) -> tuple[int, int, Any] | None:
        """The last point at or before content offset `pos`."""
        with self._lock:
            i = bisect.bisect_right(self.points, pos, key=lambda p: p[0])
            return self.points[i - 1] if i else None

    def next_mark(self, pos: int) -> int | None:
        """The first mark after content offset `pos`."""
        i = bisect.bisect_right(self.marks, pos)
        return self.marks[i] if i < len(self.marks) else None

    def add(self, out: int, raw: int, state: Any) -> None:
        with self._lock:
            i = bisect.bisect_left(self.points, out, key=lambda p: p[0])
            if i == len(self.points) or self.points[i][0] != out:  # else another reader saved it
                self.points.insert(i, (out, raw, state))


class IndexedGzip(io.RawIOBase):
    """The content of the gzip file `fh` (a binary file, seekable), read forward from any offset
    with the help of `index`. Several gzip members one after the other are one content, as gzip
    reads them. Damaged data raises EOFError (truncated) or zlib.error (corrupt, a bad CRC)."""

    def __init__(self, fh: Any, index: Index) -> None:
        super().__init__()
        self.fh = fh
        self.index = index
        self.pos = 0
        self._resume(None)

    def _resume(self, point: tuple[int, int, Any] | None) -> None:
        if point is None:
            self.out, raw, self.d = 0, 0, zlib.decompressobj(GZIP_WBITS)
        else:
            self.out, raw, state = point
            self.d = state.copy()
        self.fh.seek(raw)
        self.raw = raw  # file offset of `tail`'s first byte
        self.tail = b""  # input read, not yet given to the decompressor
        self.buf = b""  # content decoded, starting at content offset buf_at
        self.buf_at = self.out
        self.done = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            pos += self.pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end of a gzip stream")
        point = self.index.before(pos)
        if pos < self.buf_at or (point is not None and point[0] > self.out):
            self._resume(point)  # behind what is decoded, or a point ahead saves decoding
        self.pos = pos
        return pos

    def read(self, n: int | None = -1) -> bytes:
        want = -1 if n is None else n
        parts: list[bytes] = []
        while want != 0:
            k = self.pos - self.buf_at
            if 0 <= k < len(self.buf):
                piece = self.buf[k:] if want < 0 else self.buf[k : k + want]
                parts.append(piece)
                self.pos += len(piece)
                want -= len(piece) if want > 0 else 0
            elif not self._decode():
                break
        return b"".join(parts)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _decode(self) -> bool:
        """The next piece of content into `buf`; False at the end of the content."""
        while not self.done:
            if not self.tail:
                self.tail = self.fh.read(_INPUT_BYTES)
                if not self.tail:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            mark = self.index.next_mark(self.out)
            room = _OUTPUT_BYTES if mark is None else min(_OUTPUT_BYTES, mark - self.out)
            piece = self.d.decompress(self.tail, room)  # never past a mark: a point is saved there
            rest = self.d.unused_data if self.d.eof else self.d.unconsumed_tail
            self.raw += len(self.tail) - len(rest)
            self.tail = rest
            if self.d.eof:
                self._next_member()
            self.buf, self.buf_at = piece, self.out
            self.out += len(piece)
            if mark == self.out and not self.done:
                self.index.add(self.out, self.raw, self.d.copy())
            if piece:
                return True
        return False

    def _next_member(self) -> None:
        """After a gzip member: another one, or the end (trailing bytes that are no gzip member
        are ignored, as gzip ignores zero padding)."""
        if len(self.tail) < 2:
            self.tail += self.fh.read(_INPUT_BYTES)
        if self.tail[:2] == GZIP_MAGIC:
            self.d = zlib.decompressobj(GZIP_WBITS)
        else:
            self.done = True


__all__ = ["Index", "IndexedGzip"]
