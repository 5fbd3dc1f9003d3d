"""Tar and zip archives of trace files, read like directories: listed, then read member by member
in memory. Nothing is extracted: no member name is ever used as a path to write to, and links,
devices and names that climb out of the archive (`..`, absolute) are never followed or read.

A member is named `ARCHIVE!/MEMBER` (the JAR-URL form): a member's directory stays a directory of
the name (`run.tgz!/rank0`), so that ranks of one run, files of one archive directory, group as
files of one directory do. Such a name resolves only when no file has that path and ARCHIVE is a
file.

A member is read whole into memory (an archive has no file to map), within the read's memory
budget (`budget.whole_in_memory`): a member, or a gzip member's content, above it is refused with
one line, so an archive bomb cannot exhaust the machine. SQLite, which reads only files, gets a
copy of the member in a private temporary directory, named `member.sqlite`, removed as soon as
the database is open (`local_copy`).

A tar's member table is kept per process once listed (`_tar_table`): a member is read by seeking
to its data. In a compressed tar of many files that seek resumes from a state saved where a
member starts or ends (`gzindex`), so reading them all decompresses the archive about once.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import io
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from perflint.errors import InputError
from perflint.readers import budget
from perflint.readers.gzindex import Index, IndexedGzip
from perflint.readers.gzipped import GZIP_MAGIC, GZIP_WBITS, STREAM_ERRORS, ZLIB, Head, gzip_reader, head_of
from perflint.readers.gzipped import gunzip as _gunzip_all

SEP = "!/"  # between an archive's path and a member's name
SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")  # what a directory scan opens as an archive
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end record
TAR_MAGIC_AT = 257  # "ustar" (POSIX and GNU tar) in the first header
TAR_MAGIC = b"ustar"
MAGIC_BYTES = 512  # what telling an archive by content reads: a tar's first header

FILE, DIR, LINK, SPECIAL = "file", "directory", "link", "special"
_CHUNK = 1 << 20
# Errors of a damaged tar or zip, or of a damaged gzip around a tar.
_DAMAGE: tuple[type[Exception], ...] = (tarfile.TarError, zipfile.BadZipFile, ValueError, *STREAM_ERRORS)
# And of a member that cannot be decompressed (a method zipfile lacks) or is encrypted.
_UNREADABLE: tuple[type[Exception], ...] = (NotImplementedError, RuntimeError, *_DAMAGE)


def is_archive_head(data: bytes) -> bool:
    """Whether content starting with `data` (decompressed when gzip) is a tar or zip archive."""
    return data.startswith(ZIP_MAGIC) or data[TAR_MAGIC_AT : TAR_MAGIC_AT + len(TAR_MAGIC)] == TAR_MAGIC


@dataclass(frozen=True)
class Entry:
    """One member: its name (`clean_name`; the stored name when unsafe), what it is, its size as
    the archive states it, and the first bytes of its content (a listing with heads)."""

    name: str
    kind: str
    size: int
    unsafe: bool = False
    head: Head | None = None


def clean_name(name: str) -> str | None:
    """A member name without `.` and empty parts (`./rank0//a.json` -> `rank0/a.json`); None when
    it is unsafe: absolute, with a drive, a `..` part (either separator), or control characters."""
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or any(ord(c) < 32 or c == "\x7f" for c in name):
        return None
    if ".." in name.replace("\\", "/").split("/"):
        return None
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def join(archive: str, name: str) -> str:
    return f"{archive}{SEP}{name}" if name else f"{archive}{SEP[0]}"  # the root: `ARCHIVE!`


def split(path: str) -> tuple[str, str] | None:
    """(archive, member name) of a member path, None for any other path (a file that exists
    under that name is itself, never a member)."""
    i = path.find(SEP)
    if i <= 0 or os.path.lexists(path):
        return None
    while i > 0:
        if os.path.isfile(path[:i]):
            return path[:i], path[i + len(SEP) :]
        i = path.find(SEP, i + 1)
    return None


# -- the read's memory budget, for the reads started by readers.start_read ---------------------

_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("perflint_member_budget", default=None)


def run_with_budget(memory_budget: int | None) -> contextvars.Context:
    """A context in which member reads use `memory_budget` (ReadOptions.memory_budget): the
    readers open a member by its path alone."""
    ctx = contextvars.copy_context()
    ctx.run(_BUDGET.set, memory_budget)
    return ctx


def limit() -> int | None:
    """The most bytes a member (or a gzip member's content) may hold in memory now."""
    return budget.whole_in_memory(_BUDGET.get())


def too_big(path: str, size: int | None, cap: int, verb: str = "holds") -> InputError:
    amount = _mib(size) if size is not None else f"more than {_mib(cap)}"
    return InputError(
        path,
        f"archive member {verb} {amount}: a member is read in memory, and the memory budget lets it hold "
        f"{_mib(cap)}; extract it and check the file, or raise --memory-budget",
    )


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


# -- opening -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _open(path: str) -> Iterator[tarfile.TarFile | zipfile.ZipFile]:
    """The archive at `path`: a zip, or a tar (gzip-wrapped or not), decided by content."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
        fh.seek(0)
        if magic.startswith(ZIP_MAGIC):
            with zipfile.ZipFile(fh) as zf:
                yield zf
            return
        if magic[:2] == GZIP_MAGIC:
            with gzip_reader(fh) as gz, tarfile.open(fileobj=gz, mode="r:") as tf:
                yield tf
            return
        with tarfile.open(fileobj=fh, mode="r:") as tf:
            yield tf


def _damaged(path: str, exc: BaseException) -> InputError:
    why = str(exc) or type(exc).__name__
    if isinstance(exc, EOFError) or any(w in why for w in ("unexpected end", "truncated", "empty header")):
        return InputError(path, f"truncated archive (it ends inside a member or a header: {why})")
    return InputError(path, f"corrupt archive ({why})")


def _tar_kind(ti: tarfile.TarInfo) -> str:
    if ti.isreg():
        return FILE
    if ti.isdir():
        return DIR
    if ti.issym() or ti.islnk():
        return LINK
    return SPECIAL


def _zip_kind(zi: zipfile.ZipInfo) -> str:
    if zi.is_dir():
        return DIR
    mode = zi.external_attr >> 16
    kind = stat.S_IFMT(mode) if zi.create_system == 3 else 0  # Unix attributes: the file type, if set
    if kind == stat.S_IFLNK:
        return LINK
    if kind not in (0, stat.S_IFREG):
        return SPECIAL
    return FILE


def _entry(stored: str, kind: str, size: int, head: Head | None) -> Entry:
    name = clean_name(stored)
    if name is None:
        return Entry(stored, kind, size, unsafe=True)
    return Entry(name, kind, size, head=head)


def listing(path: str, heads: int = 0) -> list[Entry]:
    """Every member of the archive at `path`, in archive order, with the first `heads` bytes of
    each file member's content (`source.head`'s). InputError when the archive is damaged. A
    tar's member table is kept for this process's reads of its members (`_tar_table`)."""
    try:
        key = _key(path)
        with _open(path) as ar:
            if isinstance(ar, zipfile.ZipFile):
                return [_zip_entry(ar, zi, heads) for zi in ar.infolist()]
            entries, table = _tar_listing(path, ar, heads)
        _remember(key, table)
        return entries
    except InputError:
        raise
    except _DAMAGE as exc:
        raise _damaged(path, exc) from None
    except OSError as exc:
        raise InputError(path, f"cannot read archive: {exc.strerror or exc}") from None


def _zip_entry(zf: zipfile.ZipFile, zi: zipfile.ZipInfo, heads: int) -> Entry:
    kind = _zip_kind(zi)
    head = None
    if heads and kind == FILE and clean_name(zi.filename) is not None:
        try:
            with zf.open(zi) as fh:
                head = head_of(fh, heads)
        except _UNREADABLE:
            head = None  # the member's own read says what is wrong
    return _entry(zi.filename, kind, zi.file_size, head)


def _tar_listing(path: str, tf: tarfile.TarFile, heads: int) -> tuple[list[Entry], _Table]:
    out = []
    table = _Table()
    while True:
        ti = tf.next()
        if ti is None:
            break
        kind = _tar_kind(ti)
        head = None
        name = clean_name(ti.name)
        if name is not None and kind != DIR and name not in table.members:
            table.members[name] = (ti.offset_data, ti.size, kind)
            table.files += kind == FILE
        if heads and kind == FILE and name is not None:
            fh = tf.extractfile(ti)
            head = head_of(fh, heads) if fh is not None else None
        out.append(_entry(ti.name, kind, ti.size, head))
    _check_tar_end(path, tf)
    return out, table


def _check_tar_end(path: str, tf: tarfile.TarFile) -> None:
    """tarfile ends a listing quietly at a damaged header or where a plain tar is cut: the data
    must be all there, and what follows the last member must be the end blocks."""
    fh: Any = tf.fileobj
    fh.seek(tf.offset)
    block = fh.read(tarfile.BLOCKSIZE)
    if block.strip(b"\x00"):
        raise InputError(path, f"corrupt archive (an invalid header at byte {tf.offset} of the tar)")
    members = tf.getmembers()  # those listed: the listing is at its end
    if not isinstance(fh, gzip.GzipFile):  # a plain tar (python-isal's reader is a GzipFile too)
        if members and members[-1].offset_data + members[-1].size > os.fstat(fh.fileno()).st_size:
            raise InputError(path, "truncated archive (it ends inside its last member)")
        return
    while fh.read(_CHUNK):  # to the gzip trailer: its length and CRC are checked there
        pass


# -- reading a member --------------------------------------------------------------------------


@contextlib.contextmanager
def open_member(path: str) -> Iterator[tuple[IO[bytes] | _Window, int]]:
    """The raw content of the member at `path` (`ARCHIVE!/MEMBER`) as a stream, and its stated
    size. InputError (naming `path`) when there is no such member or it may not be read."""
    where = split(path)
    if where is None:
        raise InputError(path, "no such file")
    archive, name = where
    want = clean_name(name)
    if want is None or want != name:
        raise InputError(path, "not a member name perflint reads (absolute, '..' or not in its plain form)")
    try:
        if _is_zip(archive):
            with zipfile.ZipFile(archive) as zf:
                zi = next((z for z in zf.infolist() if clean_name(z.filename) == want), None)
                if zi is None or _zip_kind(zi) == DIR:
                    raise InputError(path, "no such member in the archive")
                _refuse_kind(path, _zip_kind(zi))
                with zf.open(zi) as fh:
                    yield fh, zi.file_size
                return
        table = _tar_table(archive)
        found = table.members.get(want)
        if found is None:
            raise InputError(path, "no such member in the archive")
        offset, size, kind = found
        _refuse_kind(path, kind)
        with open(archive, "rb") as raw:
            stream: Any = raw
            gz = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            if gz:
                # Many members: resume from the nearest noted point; few: decompress up to it.
                stream = IndexedGzip(raw, table.index) if table.index is not None else gzip_reader(raw)
            stream.seek(offset)
            yield _Window(stream, size), size
    except InputError:
        raise
    except _DAMAGE as exc:
        why = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or "unexpected end" in why:
            raise InputError(path, f"truncated archive member (the archive ends inside it: {why})") from None
        raise InputError(path, f"corrupt archive member ({why})") from None
    except NotImplementedError as exc:
        raise InputError(path, f"archive member in a form perflint cannot decompress ({exc})") from None
    except RuntimeError as exc:  # zipfile: an encrypted member
        raise InputError(path, f"archive member cannot be read ({exc})") from None
    except OSError as exc:
        raise InputError(path, f"cannot read archive: {exc.strerror or exc}") from None


class _Window(io.RawIOBase):
    """The `size` bytes of a member from the current position of the archive's content."""

    def __init__(self, fh: Any, size: int) -> None:
        super().__init__()
        self.fh, self.left = fh, size

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1) -> bytes:
        want = self.left if n is None or n < 0 else min(n, self.left)
        data: bytes = self.fh.read(want) if want else b""
        if len(data) < want:
            raise EOFError("the archive ends inside this member")
        self.left -= len(data)
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


# -- what this process knows of a tar: its members, and where to resume in a compressed one ----

INDEXED_MIN_FILES = 8  # a compressed tar of this many files is read through an Index (fewer: isal, 5x faster, decompressing up to each)
INDEXED_MIN_BYTES = 4 << 20  # (and this big): below, decompressing up to a member costs little
_KEEP = 4  # archives remembered per process (an Index holds up to gzindex.MAX_MARKS states of 40 KB)


@dataclass
class _Table:
    members: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # name -> (data offset, size, kind); the first of a name
    files: int = 0
    index: Index | None = None


_TABLES: dict[tuple[str, int, int, int, int], _Table] = {}


def _key(path: str) -> tuple[str, int, int, int, int]:
    st = os.stat(path)
    return os.path.abspath(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def _remember(key: tuple[str, int, int, int, int], table: _Table) -> None:
    """Keep a tar's table (and its Index, when it has many files) for the reads of its members
    in this process, and in the worker processes forked from it."""
    old = _TABLES.pop(key, None)
    table.index = old.index if old is not None else None
    if table.index is None and table.files >= INDEXED_MIN_FILES and key[4] >= INDEXED_MIN_BYTES:
        # Points where members start and end: a member's read ends where the next one's head starts.
        table.index = Index([at for offset, size, kind in table.members.values() if kind == FILE for at in (offset, offset + size)])
    while len(_TABLES) >= _KEEP:
        del _TABLES[next(iter(_TABLES))]
    _TABLES[key] = table


def _tar_table(path: str) -> _Table:
    """The member table of the tar at `path`: the one this process listed, else listed now."""
    table = _TABLES.get(_key(path))
    if table is None:
        listing(path)
        table = _TABLES[_key(path)]
    return table


def _is_zip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4).startswith(ZIP_MAGIC)


def _refuse_kind(path: str, kind: str) -> None:
    if kind == LINK:
        raise InputError(path, "a link inside the archive: links are not followed")
    if kind == SPECIAL:
        raise InputError(path, "not a regular file inside the archive (device or FIFO)")


def read(path: str) -> bytes:
    """The raw bytes of the member at `path` (still gzip when it is), within `limit()`."""
    cap = limit()
    with open_member(path) as (fh, size):
        if cap is not None and size > cap:
            raise too_big(path, size, cap)
        return _read_all(path, fh, cap)


def _read_all(path: str, fh: IO[bytes] | _Window, cap: int | None) -> bytes:
    data = fh.read() if cap is None else fh.read(cap + 1)
    if cap is not None and len(data) > cap:
        raise too_big(path, None, cap)
    return data


def gunzip(path: str, data: bytes) -> bytes:
    """A gzip member's content, within `limit()`; the errors `source.read_bytes` words."""
    cap = limit()
    if cap is None:
        return _gunzip_all(data)
    parts: list[bytes] = []
    got = 0
    rest = data
    while rest:
        inflate = ZLIB.decompressobj(GZIP_WBITS)
        part = inflate.decompress(rest, cap + 1 - got)  # one call: the whole gzip member, unless too big
        got += len(part)
        parts.append(part)
        if got > cap:
            raise too_big(path, None, cap, "decompresses to")
        if not inflate.eof:
            raise EOFError("truncated gzip stream")
        rest = inflate.unused_data
        if rest[:2] != GZIP_MAGIC:
            break  # bytes after the last gzip member: ignored, as gzip.decompress ignores zero padding
    return parts[0] if len(parts) == 1 else b"".join(parts)


def member_head(path: str, n: int) -> Head | None:
    """`source.head` of a member: from the listing being scanned (`cached_heads`) when it holds
    enough, else read; None when it cannot be read."""
    got = _HEADS.get(path)
    if got is not None and (got[1] or n <= len(got[0])):
        data, complete = got
        return data[:n], complete and len(data) <= n
    try:
        with open_member(path) as (fh, _):
            return head_of(fh, n)
    except InputError:
        return None
    except _UNREADABLE:
        return None


_HEADS: dict[str, Head] = {}


@contextlib.contextmanager
def cached_heads(archive: str, entries: list[Entry]) -> Iterator[None]:
    """While a scan looks at the members of `archive`, their first bytes come from its listing
    (one pass over a compressed tar instead of one per member)."""
    heads = {join(archive, e.name): e.head for e in entries if e.head is not None}
    _HEADS.update(heads)
    try:
        yield
    finally:
        for k in heads:
            _HEADS.pop(k, None)


@contextlib.contextmanager
def local_copy(path: str) -> Iterator[str]:
    """The member at `path` copied into a private temporary directory (mode 0700), for a reader
    that reads only files (SQLite); the copy is named `member.sqlite`, never after the member,
    and removed when the block ends. Within `limit()`, like any member read."""
    cap = limit()
    try:
        tmp = tempfile.mkdtemp(prefix="perflint-member-")
    except OSError as exc:
        raise InputError(path, f"cannot make a temporary directory for the member's copy: {exc.strerror or exc}") from None
    try:
        copy = os.path.join(tmp, "member.sqlite")
        with open_member(path) as (fh, size):
            if cap is not None and size > cap:
                raise too_big(path, size, cap)
            try:
                _copy(path, fh, copy, cap)
            except OSError as exc:
                raise InputError(path, f"cannot copy the member to a temporary file: {exc.strerror or exc}") from None
        yield copy
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy(path: str, fh: IO[bytes] | _Window, copy: str, cap: int | None) -> None:
    with open(copy, "xb") as out:
        copied = 0
        while chunk := fh.read(_CHUNK):
            copied += len(chunk)
            if cap is not None and copied > cap:
                raise too_big(path, None, cap)
            out.write(chunk)


__all__ = [
    "SEP",
    "SUFFIXES",
    "Entry",
    "cached_heads",
    "clean_name",
    "gunzip",
    "is_archive_head",
    "join",
    "listing",
    "local_copy",
    "member_head",
    "open_member",
    "read",
    "run_with_budget",
    "split",
]
