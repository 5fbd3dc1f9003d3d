"""Reading plus linking: the entry point from a file to a ready kernel/operator graph."""

from __future__ import annotations

from perflint.graph.build import link
from perflint.model import Trace
from perflint.readers import read_trace


def load_trace(path: str, fmt: str | None = None) -> Trace:
    """Read, decode and link one trace file. Raises InputError with a one-line reason."""
    return link(read_trace(path, fmt))
