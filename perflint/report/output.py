"""Writing a report, summary or document to its file: one way, one error line per file."""

from __future__ import annotations

import os
import sys

from perflint.errors import UsageError


def write_file(path: str, text: str, what: str = "the output", append: bool = False) -> None:
    """`text` into `path` (its directory made), or onto stdout for "-". A file that cannot be
    written is a UsageError naming it: one line, never a traceback."""
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as exc:
        why = f"{exc.filename} is not a directory" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
        raise UsageError(path, f"cannot write {what}: {why}") from None
    try:
        with open(path, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(path, f"cannot write {what}: {exc.strerror or exc}") from None


__all__ = ["write_file"]
