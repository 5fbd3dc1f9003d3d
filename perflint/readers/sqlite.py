"""What the SQLite-based readers share: opening a database read-only and telling what it holds.

Nsight Systems exports and nvprof databases are both SQLite files; their tables tell them apart
(and from another application's database).
"""

from __future__ import annotations

import functools
import os
import sqlite3

from perflint.errors import InputError
from perflint.readers import archive

MAGIC = b"SQLite format 3\x00"


def connect(path: str) -> sqlite3.Connection:
    """The database at `path`, read-only (a trace is never written); InputError when it cannot be
    opened as SQLite. An archive member is opened from a private copy (`archive.local_copy`),
    removed once the database is open: the connection keeps reading the open file."""
    if not os.path.lexists(path):
        member = _member_version(path)
        if member is not None:
            with archive.local_copy(path) as copy:
                return _connect(path, copy, "&immutable=1")  # a private copy: no locks, no journal
    return _connect(path, path)


def _connect(path: str, file: str, flags: str = "") -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"file:{_quote(file)}?mode=ro{flags}", uri=True, check_same_thread=False)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"corrupt or truncated SQLite database ({exc})") from None
    return con


def _member_version(path: str) -> tuple[int, int] | None:
    """(mtime, size) of the archive holding the member `path`; None when `path` is no member."""
    where = archive.split(path)
    if where is None:
        return None
    try:
        st = os.stat(where[0])
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


def tables(path: str) -> dict[str, set[str]] | None:
    """Table name -> column names of the database at `path`; None when it cannot be opened or
    its schema cannot be read (corrupt, truncated, not SQLite). Read once per version of the
    file: every SQLite reader's sniff, the read and the error message ask for it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        version = _member_version(path)  # an archive member: the archive's version
        return None if version is None else _tables(path, *version)
    except OSError:
        return None
    return _tables(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=16)
def _tables(path: str, mtime_ns: int, size: int) -> dict[str, set[str]] | None:
    try:
        con = connect(path)
    except InputError:  # a member too big for the budget too: its read says so
        return None
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        out: dict[str, set[str]] = {}
        for name in names:
            out[name] = {r[1] for r in con.execute(f'PRAGMA table_info("{name}")')}
        return out
    except sqlite3.DatabaseError:
        return None
    finally:
        con.close()


def is_sqlite(head: bytes) -> bool:
    return head.startswith(MAGIC)


def describe_other(path: str) -> str:
    """Why a SQLite file is not a trace perflint reads, for the one-line error."""
    found = tables(path)
    if found is None and _member_version(path) is not None:
        try:  # a member: its copy may be what failed (too big for the memory budget)
            connect(path).close()
        except InputError as exc:
            return exc.problem
    if found is None:
        return "corrupt or truncated SQLite database (its schema cannot be read)"
    names = sorted(found)
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return (
        f"SQLite database that is neither an Nsight Systems export nor an nvprof database "
        f"(tables: {shown or 'none'})"
    )


__all__ = ["MAGIC", "connect", "describe_other", "is_sqlite", "tables"]
