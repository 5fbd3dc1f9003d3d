"""One copy of each string across the results that other processes send back.

A rank's result arrives pickled, and unpickling makes fresh copies of every string in it: the
keys of its dicts, rule codes and names, skip reasons, kernel names. Across the ranks of a job
they are nearly all the same strings (2.4 thousand distinct ones among 220 thousand in 256
ranks' results), and they are two thirds of the results' memory; on a 1024-rank job that is
70 MB held by the client for nothing. `Strings` swaps each for the first equal one it has seen.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Strings:
    """`strings(x)`: `x` with its strings replaced by the first equal ones seen by this object
    (dicts, lists, tuples and dataclasses walked; lists and dataclasses changed in place, dicts
    and tuples rebuilt; their subclasses, a named tuple or a defaultdict, are left as they
    came). An object reached twice in one call stays one object."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, x: Any) -> Any:
        return self._walk(x, {})

    def _walk(self, x: Any, done: dict[int, tuple[Any, Any]]) -> Any:
        """`done`: id -> (the object, what it became); the object is kept, so that its id is not
        reused by one made during the walk once a list no longer holds it."""
        if type(x) is str:
            return self.seen.setdefault(x, x)
        if x is None or isinstance(x, (int, float, bool)):
            return x
        key = id(x)
        if key in done:
            return done[key][1]
        kind = type(x)
        if kind is dict:
            out: dict[Any, Any] = {}
            done[key] = (x, out)
            for k, v in x.items():
                out[self._walk(k, done)] = self._walk(v, done)
            return out
        if kind is list:
            done[key] = (x, x)
            for i, v in enumerate(x):
                x[i] = self._walk(v, done)
            return x
        if kind is tuple:
            t = tuple(self._walk(v, done) for v in x)
            done[key] = (x, t)
            return t
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            done[key] = (x, x)
            for f in dataclasses.fields(x):
                object.__setattr__(x, f.name, self._walk(getattr(x, f.name), done))  # frozen ones too
            return x
        return x  # anything else (numpy, sets, user objects): as it came


__all__ = ["Strings"]
