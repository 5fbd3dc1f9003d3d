"""Values derived once from one owner (a trace, a check context), each keyed by the function that
computes it: a value's type is its function's return type, and no two modules can collide on a
name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
O = TypeVar("O")


def _same(deps: tuple[object, ...], now: tuple[object, ...]) -> bool:
    # Arrays are compared by identity (a column replaced since is another source); ints by value.
    if len(deps) != len(now):
        return False
    for a, b in zip(deps, now):
        if a is not b and not (type(a) is int and a == b):
            return False
    return True


class Memo:
    """One owner's derived values. `get` computes a value once; `keyed` once per key; `fresh`
    again whenever the source objects it was computed from were replaced."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, fn: Callable[[O], T], owner: O) -> T:
        """`fn(owner)`, computed on the first call only."""
        values = self._values
        try:
            return values[fn]  # type: ignore[no-any-return]
        except KeyError:
            got = values[fn] = fn(owner)
            return got

    def keyed(self, fn: Callable[[O, K], T], owner: O, key: K) -> T:
        """`fn(owner, key)`, computed on the first call with this key only."""
        values = self._values
        k = (fn, key)
        try:
            return values[k]  # type: ignore[no-any-return]
        except KeyError:
            got = values[k] = fn(owner, key)
            return got

    def fresh(self, fn: Callable[[O], T], owner: O, deps: tuple[object, ...]) -> T:
        """`fn(owner)`, computed again when `deps` (the objects it reads) are not the ones it was
        computed from."""
        got = self._values.get(fn)
        if got is None or not _same(got[0], deps):
            got = self._values[fn] = (deps, fn(owner))
        return got[1]

    def put(self, fn: Callable[..., T | None], value: T, deps: tuple[object, ...]) -> None:
        """Keep a by-product of other work as `fn`'s value, while `deps` are the same objects."""
        self._values[fn] = (deps, value)

    def peek(self, fn: Callable[..., T | None], deps: tuple[object, ...]) -> T | None:
        """The value `put` for `fn`, or None when there is none or `deps` were replaced since."""
        got = self._values.get(fn)
        if got is None or not _same(got[0], deps):
            return None
        return got[1]  # type: ignore[no-any-return]


class HasMemo(Protocol):
    @property
    def memo(self) -> Memo: ...


M = TypeVar("M", bound=HasMemo)


def once(fn: Callable[[M], T]) -> Callable[[M], T]:
    """`fn(owner)` computed once per owner, kept in the owner's memo."""

    @functools.wraps(fn)
    def get(owner: M) -> T:
        return owner.memo.get(fn, owner)

    return get
