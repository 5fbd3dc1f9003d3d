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
        self.fields: dict[type, tuple[str, ...]] = {}  # a dataclass's field names; () for any other type

    def __call__(self, x: Any) -> Any:
        return self._walk(x, {})

    def _walk(self, x: Any, done: dict[int, tuple[Any, Any]]) -> Any:
        """`done`: id -> (the object, what it became); the object is kept, so that its id is not
        reused by one made during the walk once a list no longer holds it. Leaves are handled in
        the loops, without a call each: a rank's result holds thousands of them."""
        kind = type(x)
        if kind is str:
            return self.seen.setdefault(x, x)
        if kind in _ATOMS:
            return x
        key = id(x)
        if key in done:
            return done[key][1]
        share, walk = self.seen.setdefault, self._walk
        if kind is dict:
            out: dict[Any, Any] = {}
            done[key] = (x, out)
            for k, v in x.items():
                if type(k) is str:
                    k = share(k, k)
                kv = type(v)
                out[k] = share(v, v) if kv is str else v if kv in _ATOMS else walk(v, done)
            return out
        if kind is list:
            done[key] = (x, x)
            for i, v in enumerate(x):
                kv = type(v)
                if kv is str:
                    x[i] = share(v, v)
                elif kv not in _ATOMS:
                    x[i] = walk(v, done)
            return x
        if kind is tuple:
            t = tuple(walk(v, done) for v in x)
            done[key] = (x, t)
            return t
        names = self.fields.get(kind)
        if names is None:
            names = self.fields[kind] = tuple(f.name for f in dataclasses.fields(x)) if dataclasses.is_dataclass(x) and not isinstance(x, type) else ()
        if names:
            done[key] = (x, x)
            for name in names:
                v = getattr(x, name)
                kv = type(v)
                if kv is str:
                    object.__setattr__(x, name, share(v, v))  # frozen ones too
                elif kv not in _ATOMS:
                    object.__setattr__(x, name, walk(v, done))
            return x
        return x  # anything else (numpy, sets, user objects): as it came


_ATOMS = frozenset({int, float, bool, type(None)})


__all__ = ["Strings"]
