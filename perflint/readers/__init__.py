"""Readers: turn trace files of any supported format into a linked `Trace`.

`READERS` is the explicit registry (name -> reader); third parties add formats through the
`perflint.readers` entry-point group.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from typing import Any

from perflint.errors import NOTHING_TO_CHECK, InputError
from perflint.model import Trace
from perflint.plugins import entry_points
from perflint.readers import archive, sqlite
from perflint.readers.archive import SEP
from perflint.readers.kineto import KinetoReader
from perflint.readers.mindspore import MindSporeReader
from perflint.readers.nsys import NsysReader
from perflint.readers.nvprof import NvprofReader
from perflint.readers.protocol import CallableReader, Reader, ReadOptions
from perflint.readers.source import BLANK, HEAD_BYTES, PendingRead, head, open_source, read_bytes

# Sniffed in this order: formats with a distinctive signature first, Kineto's JSON last.
READERS: dict[str, Reader] = {r.name: r for r in (NsysReader(), NvprofReader(), MindSporeReader(), KinetoReader())}

# Files that are traces perflint cannot read as they are, with what to do instead.
CONVERT_HINTS = {
    ".nsys-rep": "Nsight Systems report: export it with `nsys export --type sqlite {name}` and check the .sqlite file",
    ".qdrep": "Nsight Systems report: export it with `nsys export --type sqlite {name}` and check the .sqlite file",
}


def _plugin_readers() -> dict[str, Reader]:
    found: dict[str, Reader] = {}
    for ep in entry_points(group="perflint.readers"):
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, Reader):
            obj = obj()
        found[ep.name] = obj if isinstance(obj, Reader) else CallableReader(ep.name, obj)
    return found


def _readers(fmt: str | None) -> dict[str, Reader]:
    return READERS if fmt in (None, *READERS) else {**READERS, **_plugin_readers()}


def detect_format(path: str, data: bytes) -> str:
    """The name of the reader whose `sniff` takes `path` (its first bytes `data`); InputError with
    what the file is instead when none does."""
    for name, reader in READERS.items():
        if reader.sniff(path, data):
            return name
    raise InputError(path, _unrecognized(path, data))


def _unrecognized(path: str, data: bytes) -> str:
    if not data.strip(BLANK):
        return "empty file"
    if sqlite.is_sqlite(data):
        return sqlite.describe_other(path)
    if archive.is_archive_head(data):
        return f"a tar or zip archive: `perflint check` reads its members; name one as ARCHIVE{archive.SEP}MEMBER"
    for suffix, hint in CONVERT_HINTS.items():
        if path.endswith(suffix):
            return hint.format(name=os.path.basename(path))
    known = ", ".join(r.title for r in READERS.values())
    return f"unrecognized format: neither JSON nor a SQLite database (perflint reads: {known})"


def _claiming(path: str, names: list[str] | None = None) -> Reader | None:
    """The reader that reads the directory `path` (holding `names`, listed here when not given)
    as one trace, if any."""
    if names is None:
        try:
            names = os.listdir(path)
        except OSError:
            return None
    names = sorted(names)
    return next((r for r in READERS.values() if r.claims_dir(path, names)), None)


def _head(path: str) -> bytes:
    """The first bytes of `path` for sniffing; InputError (the reader's words) when it cannot be read."""
    got = head(path, HEAD_BYTES)
    if got is not None:
        return got[0]
    data = open_source(path)  # raises what is wrong (missing, unreadable, truncated gzip, empty)
    return bytes(data[:HEAD_BYTES])


def reader_for(path: str, fmt: str | None = None) -> Reader:
    """The reader for `path`: the one named by `fmt`, else the one that claims the directory or
    sniffs the file's content. InputError when there is none."""
    readers = _readers(fmt)
    if fmt is not None:
        reader = readers.get(fmt)
        if reader is None:
            raise InputError(path, f"unknown format '{fmt}' (known: {', '.join(sorted(readers))})")
        return reader
    if os.path.isdir(path):
        claimed = _claiming(path)
        if claimed is None:
            raise InputError(path, "is a directory, expected a trace file or a profiler output directory")
        return claimed
    return readers[detect_format(path, _head(path))]


def start_read(path: str, fmt: str | None = None, options: ReadOptions | None = None) -> PendingRead:
    """The read of `path` begun (a big Kineto file decodes in worker processes meanwhile):
    `.result()` gives its traces (one per rank) or raises the InputError that says what is wrong,
    whenever the problem was found."""
    options = options or ReadOptions()
    if SEP in path and archive.split(path) is not None:  # an archive member: read with this budget
        ctx = archive.run_with_budget(options.memory_budget)
        pending = ctx.run(_start, path, fmt, options)
        return PendingRead(lambda: ctx.run(pending.result), pending.cancel if pending.started else None)
    return _start(path, fmt, options)


def _start(path: str, fmt: str | None, options: ReadOptions) -> PendingRead:
    try:
        return reader_for(path, fmt).start(path, options)
    except Exception as exc:  # raised by result(), like any other read error
        return PendingRead(functools.partial(_raise, exc))


def read_traces(path: str, fmt: str | None = None, options: ReadOptions | None = None) -> list[Trace]:
    """Every trace in `path` (a file or a profiler output directory), unlinked, one per rank."""
    return start_read(path, fmt, options).result()  # type: ignore[no-any-return]


def read_trace(path: str, fmt: str | None = None, options: ReadOptions | None = None) -> Trace:
    """The one trace in `path`; InputError when it holds several (use `read_traces`)."""
    traces = read_traces(path, fmt, options)
    if len(traces) != 1:
        raise InputError(path, f"holds {len(traces)} traces (ranks); read them with read_traces")
    return traces[0]


def _raise(exc: BaseException) -> Any:
    raise exc


# Why a file under a scanned directory is not checked: (path, reason), in path order.
Skip = tuple[str, str]
EXCLUDED = "excluded by pattern"  # the reason of a file an --exclude glob matched


def trace_suffixes() -> tuple[str, ...]:
    """File-name endings a directory scan offers the readers: every reader's `suffixes`, a
    plugin's included."""
    out: list[str] = []
    for r in (*READERS.values(), *_plugin_readers().values()):
        sfx = r.plugin_suffixes if isinstance(r, CallableReader) else r.suffixes
        out.extend(s for s in sfx if s not in out)
    return tuple(out)


def discover(paths: list[str], exclude: list[str] | tuple[str, ...] = ()) -> tuple[list[str], list[InputError], list[Skip]]:
    """Expand directories and archives into traces: trace files, archive members
    (`ARCHIVE!/MEMBER`), and the profiler output directories a reader reads whole. A file under
    a directory or in an archive is skipped, with the reason, when `exclude` globs match it, when
    its name is no reader's, or when its content is recognizably not a profiler trace; a path
    named here is always read unless excluded. A path that yields no trace is an error."""
    files: list[str] = []
    errors: list[InputError] = []
    skipped: list[Skip] = []
    for p in paths:
        if os.path.isdir(p) and _claiming(p) is None:
            found, skips, errs = _scan_dir(p, tuple(exclude))
            errors.extend(errs or _none_found(p, "directory", found, skips))
            files.extend(found)
            skipped.extend(skips)
        elif os.path.exists(p):
            glob = excluded_by(p, exclude, whole=True)
            if glob is not None:
                skipped.append((p, f"{EXCLUDED} '{glob}'"))
            elif not os.path.isdir(p) and _is_archive(p):
                found, skips, err = _scan_archive(p, "", tuple(exclude))
                errors.extend([err] if err is not None else _none_found(p, "archive", found, skips))
                files.extend(found)
                skipped.extend(skips)
            else:
                files.append(p)
        elif archive.split(p) is not None:  # one member, named as a report names it
            files.append(p)
        else:
            errors.append(InputError(p, "no such file or directory"))
    if paths and not files and not errors:  # everything excluded: a run that checks nothing must not pass
        n = sum(why.startswith(EXCLUDED) for _, why in skipped)
        errors.append(InputError(" ".join(paths), f"{NOTHING_TO_CHECK}: --exclude excludes every trace ({n} excluded)"))
    return files, errors, skipped


def _none_found(p: str, what: str, found: list[str], skips: list[Skip]) -> list[InputError]:
    """The error of a directory or archive named on the command line that yields no trace (none
    when its traces were excluded: the user's choice)."""
    if found or any(why.startswith(EXCLUDED) for _, why in skips):
        return []
    many = f"{len(skips)} file{'s' if len(skips) != 1 else ''} skipped" if skips else "no files"
    return [InputError(p, f"no trace files in {what} ({many}; trace files are {', '.join(trace_suffixes())})")]


def _is_archive(path: str) -> bool:
    """A tar (plain or gzip) or zip archive by content; or by its name, unless its content is a
    format some reader takes (a damaged archive: its listing says what is wrong)."""
    got = head(path, archive.MAGIC_BYTES)
    data = got[0] if got is not None else b""
    if archive.is_archive_head(data):
        return True
    return path.endswith(archive.SUFFIXES) and not any(r.sniff(path, data) for r in READERS.values())


def excluded_by(rel: str, globs: tuple[str, ...] | list[str], whole: bool = False) -> str | None:
    """The first glob matching `rel` (a path relative to the scanned directory), its base name,
    or one of its parent directories; with `whole`, `rel` is a path as given (a file named on
    the command line) and only it and its base name count. None when no glob matches."""
    if not globs:
        return None
    parts = rel.replace(os.sep, "/").split("/")
    if whole:
        candidates = ["/".join(parts), parts[-1]]
    else:
        candidates = ["/".join(parts[:i]) for i in range(len(parts), 0, -1)] + [parts[-1]]
    for g in globs:
        pattern = g.replace(os.sep, "/").rstrip("/")
        patterns = (pattern, pattern[3:]) if pattern.startswith("**/") else (pattern,)  # ** also matches no directory
        if any(fnmatch.fnmatchcase(c, pat) for c in candidates for pat in patterns):
            return g
    return None


def _scan_dir(root: str, exclude: tuple[str, ...]) -> tuple[list[str], list[Skip], list[InputError]]:
    found: list[str] = []
    skipped: list[Skip] = []
    errors: list[InputError] = []
    # Hidden files and directories (.git, editor state) are not part of a profiler run's output.
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        if dirpath != root:
            claimed = _claiming(dirpath, dirnames + filenames)
            if claimed is not None:
                dirnames[:] = []  # read whole, by its reader
                glob = excluded_by(os.path.relpath(dirpath, root), exclude)
                if glob is None:
                    found.append(dirpath)
                else:
                    skipped.append((dirpath, f"{EXCLUDED} '{glob}'"))
                continue
        for f in sorted(filenames):
            if _hidden(f):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if f.endswith(archive.SUFFIXES) and excluded_by(rel, exclude) is None:
                got, skips, err = _scan_archive(path, rel, exclude)  # an archive is a directory
                found.extend(got)
                skipped.extend(skips)
                if err is not None:
                    errors.append(err)
                continue
            why = _skip_reason(path, rel, f, exclude)
            if why is None:
                found.append(path)
            else:
                skipped.append((path, why))
    return found, skipped, errors


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _skip_reason(path: str, rel: str, name: str, exclude: tuple[str, ...], in_archive: bool = False) -> str | None:
    """Why a file a scan meets (`rel`: its path in the scanned directory or archive, `name`: its
    base name) is not checked; None: read it. The same rules for files and archive members."""
    suffixes = trace_suffixes()
    glob = excluded_by(rel, exclude)
    if glob is not None:
        return f"{EXCLUDED} '{glob}'"
    if name.endswith(tuple(CONVERT_HINTS)):
        return CONVERT_HINTS[next(s for s in CONVERT_HINTS if name.endswith(s))].format(name=name)
    if in_archive and name.endswith(archive.SUFFIXES):
        return NESTED
    if not name.endswith(suffixes):
        return f"not a trace file name ({', '.join(suffixes)})"
    return _not_a_trace(path)


NESTED = "an archive inside the archive: nested archives are not opened"


def _scan_archive(path: str, rel: str, exclude: tuple[str, ...]) -> tuple[list[str], list[Skip], InputError | None]:
    """The members of the archive at `path` as a directory scan would find them (`rel`: the
    archive's path in the scanned directory, "" when named itself), the skipped ones with the
    reason, or the one error of a damaged archive. Members that are links, devices or named
    outside the archive are never read; directories a reader reads whole (profiler output
    directories of several files) are not read from an archive: one line says so."""
    try:
        entries = archive.listing(path, heads=HEAD_BYTES)
    except InputError as exc:
        return [], [], exc
    found: list[str] = []
    skipped: list[Skip] = []
    files: dict[str, archive.Entry] = {}
    for e in entries:
        if e.unsafe:
            skipped.append((path, f"member {e.name!r}: a name outside the archive (absolute or '..') or with control characters is never read"))
        elif e.kind == archive.DIR or not e.name or any(_hidden(part) for part in e.name.split("/")):
            continue  # directories are not listed; hidden files are not looked at, as in a directory
        elif e.name in files:
            skipped.append((archive.join(path, e.name), "a second member of the same name: the first is read"))
        else:
            files[e.name] = e
    with archive.cached_heads(path, entries):
        claimed = _claimed_in_archive(path, sorted(files))
        for name in sorted(files, key=_walk_order):
            e = files[name]
            parts = name.split("/")
            if any(d == "" or name.startswith(d + "/") for d in claimed):
                continue
            member = archive.join(path, name)
            sub = f"{rel}/{name}" if rel else name
            glob = excluded_by(sub, exclude)
            if glob is not None:
                why: str | None = f"{EXCLUDED} '{glob}'"
            elif e.kind != archive.FILE:
                why = f"a {'link' if e.kind == archive.LINK else 'device or FIFO'} inside the archive: not followed"
            elif e.head is not None and archive.is_archive_head(e.head[0]):
                why = NESTED
            else:
                why = _skip_reason(member, sub, parts[-1], exclude, in_archive=True)
            if why is None:
                found.append(member)
            else:
                skipped.append((member, why))
    if claimed:
        title = next(iter(claimed.values()))
        dirs = ", ".join(d or "at its root" for d in sorted(claimed)[:3]) + (", ..." if len(claimed) > 3 else "")
        skipped.append((path, f"{title} inside the archive ({dirs}): read from a directory only; extract it and check the directory"))
    return found, skipped, None


def _walk_order(name: str) -> tuple[tuple[int, str], ...]:
    """Members in the order a directory scan walks the same files: by name, a directory's files
    before its subdirectories."""
    parts = name.split("/")
    return (*((1, d) for d in parts[:-1]), (0, parts[-1]))


def _claimed_in_archive(path: str, names: list[str]) -> dict[str, str]:
    """Directories of the archive (`` for its root) that a reader would read whole, outermost
    only, with the reader's title."""
    children: dict[str, set[str]] = {}
    for name in names:
        parts = name.split("/")
        for i in range(len(parts)):
            children.setdefault("/".join(parts[:i]), set()).add(parts[i])
    out: dict[str, str] = {}
    for d in sorted(children):  # outer directories first
        if any(c == "" or d.startswith(c + "/") for c in out):
            continue
        reader = _claiming(archive.join(path, d), sorted(children[d]))
        if reader is not None:
            out[d] = reader.title
    return out


def _not_a_trace(path: str) -> str | None:
    """Why a file met in a scan is recognizably not a trace to check; None: read it (a file that
    cannot be sniffed is read too, so that its problem is reported as an error)."""
    if not path.endswith(tuple(s for r in READERS.values() for s in r.suffixes)):
        return None  # a plugin's file: read as it is
    got = head(path, HEAD_BYTES)
    if got is None:
        return None
    data = got[0]
    for reader in READERS.values():
        if reader.sniff(path, data):
            return reader.skip_reason(path)
    if sqlite.is_sqlite(data):
        return None if sqlite.tables(path) is None else sqlite.describe_other(path)  # corrupt: an error
    if path.endswith(READERS["kineto"].suffixes):
        return None  # broken JSON: the reader says what is wrong
    return "content is no trace format perflint reads"


__all__ = [
    "CONVERT_HINTS",
    "READERS",
    "PendingRead",
    "ReadOptions",
    "Reader",
    "Skip",
    "detect_format",
    "discover",
    "excluded_by",
    "read_bytes",
    "read_trace",
    "read_traces",
    "reader_for",
    "start_read",
    "trace_suffixes",
]
