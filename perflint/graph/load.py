"""Reading plus linking: the entry point from a file to a ready kernel/operator graph."""

from __future__ import annotations

from perflint.graph.build import link
from perflint.model import Trace
from perflint.readers import ReadOptions, read_trace, read_traces


def load_trace(path: str, fmt: str | None = None, options: ReadOptions | None = None) -> Trace:
    """Read, decode and link the one trace in `path`. Raises InputError with a one-line reason."""
    return link(read_trace(path, fmt, options))


def load_traces(path: str, fmt: str | None = None, options: ReadOptions | None = None) -> list[Trace]:
    """Every trace in `path` (one per rank), read and linked. Raises InputError."""
    return [link(t) for t in read_traces(path, fmt, options)]
