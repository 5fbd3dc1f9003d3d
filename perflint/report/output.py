"""Writing a report, summary or document to its file: one way, one error line per file."""

from __future__ import annotations

import codecs
import os
import sys
from typing import TextIO

from perflint.errors import UsageError
from perflint.findings import RunResult
from perflint.report import REPORTERS, ReportOptions


def write_file(path: str, text: str | bytes, what: str = "the output", append: bool = False) -> None:
    """`text` into `path` (its directory made), or onto stdout for "-". A file that cannot be
    written is a UsageError naming it: one line, never a traceback."""
    if path == "-":
        _write_all(sys.stdout, text)
        return
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as exc:
        why = f"{exc.filename} is not a directory" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
        raise UsageError(path, f"cannot write {what}: {why}") from None
    try:
        if isinstance(text, bytes):
            with open(path, "ab" if append else "wb") as fb:
                fb.write(text)
        else:
            with open(path, "a" if append else "w", encoding="utf-8") as fh:
                _write_all(fh, text)
    except OSError as exc:
        raise UsageError(path, f"cannot write {what}: {exc.strerror or exc}") from None


def render_output(fmt: str, result: RunResult, opts: ReportOptions) -> str | bytes:
    """The report in `fmt` as it is written out (`write_file`): the JSON report as the UTF-8
    bytes its encoder makes, never copied into a str (a thousand ranks' report is tens of MB);
    any other format as its reporter's text."""
    if fmt == "json" and REPORTERS.builtin(fmt):
        from perflint.report.json_report import json_bytes

        return json_bytes(result)
    return REPORTERS[fmt](result, opts)


_PIECE = 1 << 20  # characters or bytes


def _write_all(stream: TextIO, text: str | bytes) -> None:
    """`text` a piece at a time: a text stream encodes what it is given at once, and a report of
    a thousand ranks (tens of MB) would be held a second time, encoded. UTF-8 bytes go to the
    stream's own buffer when it has one that takes UTF-8, else are decoded a piece at a time."""
    if isinstance(text, bytes):
        buffer = getattr(stream, "buffer", None)
        if buffer is not None and codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "utf-8":
            stream.flush()
            buffer.write(text)
            buffer.flush()
            return
        decoder = codecs.getincrementaldecoder("utf-8")()
        for i in range(0, len(text), _PIECE):
            stream.write(decoder.decode(text[i : i + _PIECE]))
        stream.write(decoder.decode(b"", final=True))
        return
    for i in range(0, len(text), _PIECE):
        stream.write(text[i : i + _PIECE])


__all__ = ["render_output", "write_file"]
