"""Column sizing for perflint's text tables: the one place that decides how wide a column is and
how a text cell too long for it is cut.

Columns are sized to their content. When the line must fit a width, the widest columns give up
characters first (the long headers of number columns, then text); numbers are never cut. A cut keeps the head and the tail of the text (the
tail of a kernel or layer name is what tells it from its neighbours) with "…" between; values
of a column whose cuts would read alike show where they differ instead, or else end in a short
hash of the full text.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

ELLIPSIS = "…"
MIN_TEXT = 8  # text is cut below this (or its header) only when the width leaves no other way


def is_number(text: str) -> bool:
    """A cell that is a number, or several ("640,1,1": a grid), never to be cut."""
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters: head, "…", tail (the tail about 2/5)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    tail = keep * 2 // 5
    return text[: keep - tail] + ELLIPSIS + (text[len(text) - tail :] if tail else "")


def cut_column(values: Sequence[str], width: int) -> list[str]:
    """Every value cut to `width`. Distinct values whose cuts would read alike show, after their
    head, the stretch where they differ from their closest look-alike; any still alike end in a
    short hash of the full text."""
    out = [cut(v, width) for v in values]
    if width < MIN_TEXT:
        return out
    fixed: dict[str, str] = {}
    for group in _clashes(values, out):
        fixed.update((v, _around(v, at, width)) for v, at in _differ_at(group).items())
    if not fixed:
        return out
    out = [fixed.get(v, c) for v, c in zip(values, out)]
    still = set().union(*_clashes(values, out))
    return [_tagged(v, width) if v in still else c for v, c in zip(values, out)]


def _clashes(values: Sequence[str], shown: Sequence[str]) -> list[set[str]]:
    """Sets of distinct values that are shown alike."""
    seen: dict[str, set[str]] = {}
    for v, c in zip(values, shown):
        seen.setdefault(c, set()).add(v)
    return [full for full in seen.values() if len(full) > 1]


def _differ_at(group: set[str]) -> dict[str, int]:
    """Per value: where it stops matching its closest other value (its neighbours, sorted)."""
    ordered = sorted(group)
    lcp = [len(os.path.commonprefix([a, b])) for a, b in zip(ordered, ordered[1:])]
    return {v: max(lcp[i - 1] if i else 0, lcp[i] if i < len(lcp) else 0) for i, v in enumerate(ordered)}


def _around(text: str, at: int, width: int) -> str:
    """`text` in `width` characters showing position `at`: its head, "…", a stretch starting a
    little before `at`, and "…" when more follows."""
    if len(text) <= width:
        return text
    head = max(1, width // 4)
    room = width - head - 1
    if at + room // 4 < width - 1:  # the difference is near the start anyway
        return text[: width - 1] + ELLIPSIS
    start = max(head, at - room // 4)
    if start + room >= len(text):
        return text[:head] + ELLIPSIS + text[len(text) - room :]
    return text[:head] + ELLIPSIS + text[start : start + room - 1] + ELLIPSIS


def _tagged(text: str, width: int) -> str:
    tag = "~" + hashlib.blake2s(text.encode(), digest_size=2).hexdigest()
    return cut(text, width - len(tag)) + tag


def fit_widths(headers: Sequence[str], cells: Sequence[Sequence[str]], width: int | None, sep: int = 2) -> list[int]:
    """Per column: its content width (header included), narrowed so the line fits `width`, the
    widest first: the long headers of number columns down to MIN_TEXT, then text columns down to
    MIN_TEXT (or their header), then both down to 3 characters. Numbers are never cut, so a line
    of many number columns can still overflow."""
    n = len(headers)
    values = [max([0, *(len(r[i]) for r in cells)]) for i in range(n)]
    widths = [max(len(h), v) for h, v in zip(headers, values)]
    if width is None:
        return widths
    text = {i for i in range(n) if any(r[i] and not is_number(r[i]) for r in cells)}

    def floors(least: int, texts: bool) -> dict[int, int]:
        if texts:
            return {i: max(least, 3 if least < MIN_TEXT else len(headers[i])) for i in text}
        # A number column's header may take two lines (split at an underscore) before it is cut.
        return {i: max(values[i], min(len(headers[i]), least, _split_width(headers[i]))) for i in range(n) if i not in text}

    excess = sum(widths) + sep * (n - 1) - width
    passes = (floors(MIN_TEXT, False), floors(MIN_TEXT, True), {**floors(3, False), **floors(3, True)})
    for least in passes:
        floor = {i: min(widths[i], f) for i, f in least.items()}
        while excess > 0:
            room = [i for i in floor if widths[i] > floor[i]]
            if not room:
                break
            top = max(widths[i] for i in room)
            widest = [i for i in room if widths[i] == top]
            below = max([floor[i] for i in widest] + [widths[i] for i in room if widths[i] < top])
            step = min(top - below, -(-excess // len(widest)))
            for i in widest:
                d = min(step, excess)
                widths[i] -= d
                excess -= d
    return widths


def cut_headers(headers: Sequence[str], widths: Sequence[int]) -> list[str]:
    """Headers cut to their column's width; one whose cut head would not reach where it differs
    from the others shows that place instead (counter names share long prefixes)."""
    at = _differ_at(set(headers))
    out = []
    for h, w in zip(headers, widths):
        head = (w - 1) - (w - 1) * 2 // 5  # what `cut` keeps of the head
        out.append(_around(h, at[h], w) if len(h) > w and at[h] >= head and w >= MIN_TEXT else cut(h, w))
    return out


def _two_lines(header: str, width: int) -> tuple[str, str] | None:
    """`header` split after one of its underscores into two lines of at most `width`, the most
    even such split; None when none fits."""
    splits = [(header[: i + 1], header[i + 1 :]) for i, ch in enumerate(header[:-1]) if ch == "_" and i > 0]
    fitting = [sp for sp in splits if max(map(len, sp)) <= width]
    return min(fitting, key=lambda sp: max(map(len, sp))) if fitting else None


def _split_width(header: str) -> int:
    """How narrow `header` gets on two lines (its length when it has no underscore to split at)."""
    widths = [max(i + 1, len(header) - i - 1) for i, ch in enumerate(header[:-1]) if ch == "_" and i > 0]
    return min(widths, default=len(header))


def render(headers: Sequence[str], cells: Sequence[Sequence[str]], width: int | None, sep: int = 2) -> list[str]:
    """The table's lines: the header (on two lines when a narrowed column's name splits at an
    underscore rather than be cut), text left-aligned, numbers right-aligned."""
    widths = fit_widths(headers, cells, width, sep)
    cols = [cut_column([r[i] for r in cells], widths[i]) for i in range(len(headers))]
    numeric = [bool(cells) and all(not r[i] or is_number(r[i]) for r in cells) for i in range(len(headers))]

    def line(vals: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)]
        return (" " * sep).join(parts).rstrip()

    cut = cut_headers(headers, widths)
    split = [_two_lines(h, w) if len(h) > w else None for h, w in zip(headers, widths)]
    if any(split):
        top = [sp[0] if sp else "" for sp in split]
        bottom = [sp[1] if sp else c for sp, c in zip(split, cut)]
        head = [line(top), line(bottom)]
    else:
        head = [line(cut)]
    return [*head, *(line(list(r)) for r in zip(*cols))]


__all__ = ["ELLIPSIS", "MIN_TEXT", "cut", "cut_column", "cut_headers", "fit_widths", "is_number", "render"]
