"""One attribute of many decoded structs, as a list: what the columnar builders read a column from.

`getter(attr)` is `lambda xs: [x.attr for x in xs]` written out for that attribute: CPython
specializes an attribute read named in the code on a struct's slot, where `operator.attrgetter`
(or `getattr`) is a generic lookup, 1.7 times slower. The builders name attributes from the
column specification, so the functions are made from it once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

Getter = Callable[[Sequence[Any]], list[Any]]


@cache
def getter(attr: str) -> Getter:
    if not attr.isidentifier():
        raise ValueError(f"not an attribute name: {attr!r}")
    scope: dict[str, Any] = {}
    exec(f"def get(xs):\n    return [x.{attr} for x in xs]\n", scope)
    fn: Getter = scope["get"]
    return fn


__all__ = ["Getter", "getter"]
