"""PyTorch profiler / Kineto Chrome-trace JSON (plain or gzip), every vintage.

`columns` is the column specification the rest follows. `reader` holds the read paths;
`chunked` and `procs` make big files fast (slices, forked workers); each slice is decoded into
structs (`schema`) or scanned by the optional C scanner (`native_scan`), turned into columns by
`lenient`, `strict` or `native_scan` (`slices` picks) and gathered by `builder`, which `finish`
validates and `metadata` completes; `reference` is the event-by-event builder they must equal.
`codes` and `ranges` are the event classes and the value checks; `sniff` tells JSON that is no
profiler trace from a trace by its first bytes.
"""

from __future__ import annotations

from perflint.model import Trace
from perflint.readers.kineto.metadata import parse_devices
from perflint.readers.kineto.reader import read_kineto, start_kineto
from perflint.readers.kineto.sniff import not_a_trace
from perflint.readers.protocol import Reader, ReadOptions
from perflint.readers.source import BLANK, PendingRead


class KinetoReader(Reader):
    name = "kineto"
    title = "PyTorch profiler / Kineto trace"
    suffixes = (".json", ".json.gz")

    def sniff(self, path: str, head: bytes) -> bool:
        return head.lstrip(BLANK)[:1] in (b"{", b"[")

    def skip_reason(self, path: str) -> str | None:
        return not_a_trace(path)

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        return [read_kineto(path, options=options)]

    def start(self, path: str, options: ReadOptions) -> PendingRead:
        pending = start_kineto(path, options=options)
        return PendingRead(lambda: [pending.result()], pending.cancel)


__all__ = ["KinetoReader", "parse_devices", "read_kineto", "start_kineto"]
