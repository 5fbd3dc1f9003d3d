"""Durations, sizes and counts as a person reads them: the unit chosen by magnitude."""

from __future__ import annotations


def fmt_duration(us: float) -> str:
    a = abs(us)
    if a >= 1e6:
        return f"{us / 1e6:.2f} s"
    if a >= 1e3:
        return f"{us / 1e3:.1f} ms" if a < 1e5 else f"{us / 1e3:.0f} ms"
    if a >= 100:
        return f"{us:.0f} µs"
    return f"{us:.1f} µs"


def fmt_size(nbytes: float) -> str:
    a = abs(nbytes)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if a >= scale:
            v = nbytes / scale
            return f"{v:.1f} {unit}" if abs(v) < 100 else f"{v:.0f} {unit}"
    return f"{int(nbytes)} B"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n` and `word`, with an s (or as `many` says) unless n is 1 ("1 trace", "3 traces")."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


__all__ = ["fmt_duration", "fmt_size", "plural"]
