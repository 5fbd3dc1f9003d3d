"""Telling a JSON file that is no profiler trace from one that is, by its first bytes.

A directory scan meets JSON a profiler run leaves next to its traces (execution traces, memory
timelines, tools' summaries). `not_a_trace` names what such a file is, from the first `HEAD_BYTES`
of its content (decompressed for gzip): the whole document when it is that small, else its
top-level keys. It answers None for anything it cannot rule out, broken files included: those are
read, and the reader reports their problem as an error.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from perflint.readers.source import BLANK as _BLANK
from perflint.readers.source import HEAD_BYTES, head

# A JSON string (a key when a colon follows) or a bracket: strings are matched whole, so brackets
# inside them do not count.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]')
_MEMORY_ROW = re.compile(rb"\[\s*\[\s*-?\d")  # export_memory_timeline: [[ts, action, bytes, category], ...]


def top_level_keys(text: bytes) -> list[str]:
    """Keys of the outermost JSON object in `text`, which may stop anywhere."""
    keys: list[str] = []
    depth = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[:1]
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        elif depth == 1 and tok.endswith(b":"):
            keys.append(tok.rstrip(b": \t\r\n")[1:-1].decode("utf-8", "replace"))
            if keys[-1] == "traceEvents":
                break  # a trace: nothing after it changes the answer
    return keys


def _about_keys(keys: list[str], complete: bool) -> str | None:
    names = set(keys)
    if "traceEvents" in names:
        return None
    if {"schema", "nodes"} <= names:
        return "PyTorch execution trace (top-level keys 'schema', 'nodes'), not a profiler trace"
    if "rocprofiler-sdk-tool" in names:
        return "rocprofiler-sdk tool output (top-level key 'rocprofiler-sdk-tool'), not a Chrome trace"
    if not complete:
        return None  # 'traceEvents' may come later
    shown = ", ".join(f"'{k}'" for k in keys[:4]) + (", ..." if len(names) > 4 else "")
    return f"JSON object without 'traceEvents' (keys: {shown or 'none'}), not a profiler trace"


def _about_list(doc: list[Any]) -> str | None:
    if not doc or isinstance(doc[0], dict):
        return None  # a bare list of trace events (or nothing to tell)
    first = doc[0]
    if isinstance(first, list) and len(first) == 4 and all(isinstance(v, (int, float)) for v in first):
        return "PyTorch memory timeline (rows of [ts, action, bytes, category]), not a profiler trace"
    return f"JSON list of {type(first).__name__} values, not trace events"


def not_a_trace(path: str) -> str | None:
    """Why `path` is recognizably not a profiler trace, or None (a trace, or not sure)."""
    got = head(path)
    if got is None:
        return None
    text, complete = got
    text = text.lstrip(_BLANK)
    if text[:1] not in (b"{", b"["):
        return None  # not JSON: the reader says so, as an error
    if complete:
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if isinstance(doc, dict):
            return _about_keys(list(doc), True)
        return _about_list(doc) if isinstance(doc, list) else None
    if text[:1] == b"{":
        return _about_keys(top_level_keys(text), False)
    if _MEMORY_ROW.match(text):
        return "PyTorch memory timeline (rows of [ts, action, bytes, category]), not a profiler trace"
    return None


__all__ = ["HEAD_BYTES", "head", "not_a_trace", "top_level_keys"]
