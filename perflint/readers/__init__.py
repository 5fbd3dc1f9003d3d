"""Readers: turn trace files of any supported format into a linked `Trace`.

`READERS` is the explicit registry (name -> reader); third parties add formats through the
`perflint.readers` entry-point group.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable
from typing import Any

from perflint.errors import InputError
from perflint.model import Trace
from perflint.plugins import entry_points
from perflint.readers.kineto import read_kineto, start_kineto
from perflint.readers.source import PendingRead, open_source, read_bytes

Reader = Callable[[str, bytes], Trace]

READERS: dict[str, Reader] = {"kineto": read_kineto}

TRACE_SUFFIXES = (".json", ".json.gz")


def _plugin_readers() -> dict[str, Reader]:
    found: dict[str, Reader] = {}
    for ep in entry_points(group="perflint.readers"):
        found[ep.name] = ep.load()
    return found


def detect_format(path: str, data: bytes) -> str:
    head = data[:64].lstrip()
    if data.startswith(b"SQLite format 3\x00"):
        raise InputError(path, "SQLite database (Nsight Systems / nvprof export): no reader for it yet")
    if head[:1] in (b"{", b"["):
        return "kineto"
    raise InputError(path, "unrecognized format: not JSON (expected a PyTorch profiler / Kineto trace)")


def read_trace(path: str, fmt: str | None = None) -> Trace:
    """Read and decode one trace file into unlinked tables. Raises InputError with a one-line reason."""
    return start_read(path, fmt).result()  # type: ignore[no-any-return]


def start_read(path: str, fmt: str | None = None) -> PendingRead:
    """`read_trace` begun (see kineto.start_kineto): `.result()` gives the Trace or raises what
    `read_trace` raises, whenever the problem was found."""
    try:
        readers = READERS if fmt in (None, *READERS) else {**READERS, **_plugin_readers()}
        data = open_source(path)  # bytes, or an mmap of a big plain file
        name = fmt or detect_format(path, data[:64])
        reader = readers.get(name)
        if reader is None:
            raise InputError(path, f"unknown format '{name}' (known: {', '.join(sorted(readers))})")
        if reader is read_kineto:
            return start_kineto(path, data)
    except Exception as exc:  # raised by result(), like any other read error
        return PendingRead(functools.partial(_raise, exc))
    if not isinstance(data, bytes):
        data = bytes(data)  # plugin readers get bytes
    return PendingRead(functools.partial(reader, path, data))


def _raise(exc: BaseException) -> Any:
    raise exc


# Why a file under a scanned directory is not checked: (path, reason), in path order.
Skip = tuple[str, str]


def trace_suffixes() -> tuple[str, ...]:
    """File-name endings of trace files: JSON, and what a plugin reader declares (`suffixes`)."""
    extra = [s for r in _plugin_readers().values() for s in getattr(r, "suffixes", ()) if isinstance(s, str)]
    return TRACE_SUFFIXES + tuple(s for s in extra if s not in TRACE_SUFFIXES)


def discover(paths: list[str], exclude: list[str] | tuple[str, ...] = ()) -> tuple[list[str], list[InputError], list[Skip]]:
    """Expand directories into trace files. A file under a directory is skipped, with the reason,
    when `exclude` globs match it, when its name is not a trace file's, or when its content is
    recognizably not a profiler trace (`sniff`); a file named here is always read unless excluded.
    A path that yields no trace is an error."""
    files: list[str] = []
    errors: list[InputError] = []
    skipped: list[Skip] = []
    for p in paths:
        if os.path.isdir(p):
            found, skips = _scan_dir(p, tuple(exclude))
            if not found:
                what = f"{len(skips)} file{'s' if len(skips) != 1 else ''} skipped" if skips else "no files"
                errors.append(InputError(p, f"no trace files in directory ({what}; trace files are {', '.join(trace_suffixes())})"))
            files.extend(found)
            skipped.extend(skips)
        elif os.path.exists(p):
            glob = excluded_by(p, exclude, whole=True)
            if glob is None:
                files.append(p)
            else:
                skipped.append((p, f"excluded by pattern '{glob}'"))
        else:
            errors.append(InputError(p, "no such file or directory"))
    if paths and not files and not errors:  # everything excluded: a run that checks nothing must not pass
        errors.append(InputError(" ".join(paths), f"no trace to check ({len(skipped)} excluded)"))
    return files, errors, skipped


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


def _scan_dir(root: str, exclude: tuple[str, ...]) -> tuple[list[str], list[Skip]]:
    from perflint.readers.sniff import not_a_trace

    suffixes = trace_suffixes()
    found: list[str] = []
    skipped: list[Skip] = []
    # Hidden files and directories (.git, editor state) are not part of a profiler run's output.
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.startswith("."):
                continue
            path = os.path.join(dirpath, f)
            glob = excluded_by(os.path.relpath(path, root), exclude)
            if glob is not None:
                skipped.append((path, f"excluded by pattern '{glob}'"))
            elif not f.endswith(suffixes):
                skipped.append((path, f"not a trace file name ({', '.join(suffixes)})"))
            else:
                why = not_a_trace(path) if f.endswith(TRACE_SUFFIXES) else None
                if why is None:
                    found.append(path)
                else:
                    skipped.append((path, why))
    return found, skipped


__all__ = [
    "READERS",
    "PendingRead",
    "Skip",
    "detect_format",
    "discover",
    "excluded_by",
    "read_bytes",
    "read_trace",
    "start_read",
    "trace_suffixes",
]
