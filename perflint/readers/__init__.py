"""Readers: turn trace files of any supported format into a linked `Trace`.

`READERS` is the explicit registry (name -> reader); third parties add formats through the
`perflint.readers` entry-point group.
"""

from __future__ import annotations

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


def discover(paths: list[str]) -> tuple[list[str], list[InputError]]:
    """Expand directories into trace files. A path that yields nothing is an error."""
    files: list[str] = []
    errors: list[InputError] = []
    for p in paths:
        if os.path.isdir(p):
            found = _scan_dir(p)
            if not found:
                errors.append(InputError(p, "no trace files (*.json, *.json.gz) in directory"))
            files.extend(found)
        elif os.path.exists(p):
            files.append(p)
        else:
            errors.append(InputError(p, "no such file or directory"))
    return files, errors


def _scan_dir(root: str) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(TRACE_SUFFIXES) and not f.startswith("."):
                found.append(os.path.join(dirpath, f))
    # tensorboard_trace_handler output: when rank files are present, other JSON is not a trace.
    pt = [f for f in found if ".pt.trace.json" in os.path.basename(f)]
    return pt or found


__all__ = ["READERS", "PendingRead", "detect_format", "discover", "read_bytes", "read_trace", "start_read"]
