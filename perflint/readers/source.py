"""Reading a trace file's bytes: plain or gzip, with errors that name the file."""

from __future__ import annotations

import gzip
import mmap
import os
import stat
import zlib
from typing import Any

from perflint.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
MMAP_MIN_BYTES = 64 << 20  # plain files above this are mapped, not read: the chunked reader releases pages


def read_bytes(path: str) -> bytes:
    """The uncompressed bytes of `path` (gzip detected by magic, not by extension)."""
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
        raise InputError(path, "no such file") from None
    except PermissionError:
        raise InputError(path, "permission denied (unreadable file)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise InputError(path, "truncated gzip stream (file ends before the compressed data does)") from None
        except (OSError, zlib.error) as exc:
            raise InputError(path, f"corrupt gzip data: {exc}") from None
    if not data.strip():
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


def open_source(path: str) -> bytes | mmap.mmap:
    """The uncompressed content of `path`: an mmap for a big plain file (pages are read on demand
    and can be released), else bytes (`read_bytes`). Same errors as `read_bytes`."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode) and st.st_size >= MMAP_MIN_BYTES:
            fh = open(path, "rb")
            if fh.read(2) != GZIP_MAGIC:
                mm = MappedFile(fh.fileno(), 0, access=mmap.ACCESS_READ)
                mm.fh = fh
                return mm
            fh.close()
    except (OSError, ValueError):
        pass  # read_bytes words the problem
    return read_bytes(path)
