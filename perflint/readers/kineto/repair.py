"""Repairs of known writer bugs, tried only on a document that does not parse.

Some PyTorch profiler releases write a Python frame's name without escaping its quotes (a frame
whose source line is a docstring's `\"\"\"`), which makes the whole file invalid JSON. Kineto writes
one key per line, so the name's line can be escaped alone.
"""

from __future__ import annotations

import re

_NAME_LINE = re.compile(rb'^([ \t]*"name": ")(.*)(",?[ \t\r]*)$', re.M)
_BARE_QUOTE = re.compile(rb'(?<!\\)"')


def escape_name_quotes(data: bytes) -> tuple[bytes, int] | None:
    """`data` with the unescaped quotes inside `"name"` values escaped, and how many names were
    repaired; None when no name needed it."""
    repaired = 0

    def fix(m: re.Match[bytes]) -> bytes:
        nonlocal repaired
        inner = _BARE_QUOTE.sub(rb'\\"', m.group(2))
        if inner == m.group(2):
            return m.group(0)
        repaired += 1
        return m.group(1) + inner + m.group(3)

    out = _NAME_LINE.sub(fix, data)
    return (out, repaired) if repaired else None
