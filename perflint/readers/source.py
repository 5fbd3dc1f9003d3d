"""Reading a trace file's bytes: plain or gzip, with errors that name the file."""

from __future__ import annotations

import gzip
import os
import stat
import zlib

from perflint.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


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
