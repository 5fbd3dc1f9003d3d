"""Columns of one device's trace, collected row by row from MindSpore's files (which are small:
per-op tables and timelines of a few thousand rows)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from perflint.model import COMM_GPU, KERNEL, NONE, OP_ANNOTATION, OP_CPU
from perflint.readers.tables import Strings, Threads

_OP_SUFFIX = re.compile(r"-op\d+(?:_\d+)?$")
COMM_KEYS = ("side", "ext_id", "correlation", "name", "dtype", "in_nelems", "out_nelems", "group_size", "seq", "rank_start",
             "rank_stride", "pg_name", "pg_desc", "pg_ranks")  # fmt: skip


def op_type(full_name: str) -> str:
    """`Default/network/Conv2D-op12` -> `Conv2D` (MindSpore's op type, as its op views group)."""
    return _OP_SUFFIX.sub("", full_name.rsplit("/", 1)[-1]) or full_name


@dataclass
class Columns:
    strings: Strings = field(default_factory=Strings)
    threads: Threads = field(default_factory=Threads)
    ops: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ("kind", "name", "thread", "ts", "dur", "dims", "types")})
    gpu: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ("kind", "name", "device", "stream", "ts", "dur", "grid", "block", "collective", "correlation")})
    comms: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in COMM_KEYS})

    def op(self, name: str, thread: tuple[str, str], ts: float, dur: float, dims: str | None = None,
           types: str | None = None, annotation: bool = False) -> None:  # fmt: skip
        o = self.ops
        o["kind"].append(OP_ANNOTATION if annotation else OP_CPU)
        o["name"].append(self.strings.id(name))
        o["thread"].append(self.threads.id(*thread))
        o["ts"].append(ts)
        o["dur"].append(dur)
        o["dims"].append(self.strings.id(dims))
        o["types"].append(self.strings.id(types))

    def kernel(self, name: str, device: int, stream: int, ts: float, dur: float, grid: tuple[int, int, int] = (0, 0, 0),
               block: tuple[int, int, int] = (0, 0, 0), collective: str | None = None, kind: int = KERNEL) -> None:  # fmt: skip
        g = self.gpu
        g["kind"].append(kind)
        g["name"].append(self.strings.id(name))
        g["device"].append(device)
        g["stream"].append(stream)
        g["ts"].append(ts)
        g["dur"].append(dur)
        g["grid"].append(grid)
        g["block"].append(block)
        g["collective"].append(self.strings.id(collective))
        g["correlation"].append(len(g["kind"]))  # a row's own number: what its collective record links to

    def message_bytes(self, name: str, nbytes: int) -> None:
        """The last kernel row's collective record: a message of `nbytes` bytes (as elements of
        one byte), everything else unknown."""
        c = self.comms
        row = dict.fromkeys(COMM_KEYS, NONE)
        row.update(side=COMM_GPU, correlation=self.gpu["correlation"][-1], name=self.strings.id(name), dtype=self.strings.id("Byte"),
                   in_nelems=nbytes, out_nelems=nbytes)  # fmt: skip
        for k in COMM_KEYS:
            c[k].append(row[k])
