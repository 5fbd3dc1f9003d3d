"""The reader protocol: what every input format provides, so that formats are peers.

A format is one `Reader` subclass (in its own package under `perflint/readers/`) and one entry in
`perflint.readers.READERS`. Discovery offers a reader the files whose names it lists and the
directories it claims; its `sniff` decides by content; `read` turns one file or directory into one
or more `Trace`s (several processes or devices in one file are several ranks). Nothing below the
readers (graph, metrics, facts, engine, report) knows which format a trace came from except through
`Trace.format` and what the tables hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from perflint.model import Trace
from perflint.readers.source import PendingRead


@dataclass(frozen=True)
class ReadOptions:
    """How one read may use the machine. Passed to every reader; never module state.

    workers: processes a big file's decode may use (0: all cores).
    memory_budget: bytes the read may hold at once (None: PERFLINT_MEMORY_BUDGET, else what the
    machine has available).
    progress: called with (done, total) as a long read advances, for the progress line.
    """

    workers: int = 0
    memory_budget: int | None = None
    progress: Callable[[int, int], None] | None = None


class Reader:
    """One input format. Subclasses set `name` and `title` and implement `sniff` and `read`."""

    name: ClassVar[str] = ""  # the --input-format value
    title: ClassVar[str] = ""  # what users call the format, in messages
    # File-name endings a directory scan offers this reader (its content still decides).
    suffixes: ClassVar[tuple[str, ...]] = ()

    def sniff(self, path: str, head: bytes) -> bool:
        """Whether the file at `path`, whose first bytes (decompressed when gzip) are `head`, is
        this format. Decides by content; may open the file (a database's tables). Never raises."""
        raise NotImplementedError

    def claims_dir(self, path: str, files: list[str]) -> bool:
        """Whether the directory `path` (holding the file names `files`) is one trace of this
        format, read whole rather than file by file. Never raises."""
        return False

    def skip_reason(self, path: str) -> str | None:
        """Why a file this reader sniffed as its own, met in a directory scan, holds nothing to
        check (a tool's summary beside the traces); None: read it."""
        return None

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        """The traces in `path`, unlinked: one per rank. Raises `InputError` (or `NotATrace`)
        with a one-line reason for bad input, never anything else for a bad file."""
        raise NotImplementedError

    def start(self, path: str, options: ReadOptions) -> PendingRead:
        """`read` begun: a reader that can decode in the background while the caller loads its
        rules overrides this. `.result()` gives `read`'s list or raises its errors."""
        return PendingRead(lambda: self.read(path, options))


class CallableReader(Reader):
    """A plugin reader given as a function `(path, data: bytes) -> Trace` (with an optional
    `suffixes` attribute): it is only used when named with --input-format or by its suffixes."""

    def __init__(self, name: str, fn: Callable[[str, bytes], Trace]) -> None:
        self.fn = fn
        self.plugin_name = name
        sfx = getattr(fn, "suffixes", ())
        self.plugin_suffixes = tuple(s for s in sfx if isinstance(s, str)) if isinstance(sfx, (list, tuple)) else ()

    def sniff(self, path: str, head: bytes) -> bool:
        return path.endswith(self.plugin_suffixes) if self.plugin_suffixes else False

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        from perflint.readers.source import read_bytes

        return [self.fn(path, read_bytes(path))]


__all__ = ["CallableReader", "ReadOptions", "Reader"]
