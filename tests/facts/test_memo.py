"""Derived values are computed once per owner, keyed by their function, and again only when the
source objects they were computed from were replaced."""

from __future__ import annotations

import numpy as np

from perflint.memo import Memo, once


class Owner:
    def __init__(self) -> None:
        self.memo = Memo()
        self.calls = 0
        self.column = np.arange(3)


def _count(o: Owner) -> int:
    o.calls += 1
    return o.calls


def _total(o: Owner) -> int:
    o.calls += 1
    return int(o.column.sum())


def _nothing(o: Owner) -> None:
    o.calls += 1


def _times(o: Owner, k: int) -> int:
    o.calls += 1
    return k * 10


@once
def counted(o: Owner) -> int:
    return _count(o)


def test_get_computes_once_per_owner_and_caches_none_too() -> None:
    a, b = Owner(), Owner()
    assert (counted(a), counted(a), counted(b)) == (1, 1, 1)
    assert a.calls == 1 and b.calls == 1
    assert a.memo.get(_nothing, a) is None and a.memo.get(_nothing, a) is None
    assert a.calls == 2  # a None value is kept as well


def test_keyed_computes_once_per_key() -> None:
    o = Owner()
    assert [o.memo.keyed(_times, o, k) for k in (1, 2, 1, 2)] == [10, 20, 10, 20]
    assert o.calls == 2


def test_fresh_recomputes_when_a_source_array_is_replaced() -> None:
    o = Owner()
    assert o.memo.fresh(_total, o, (o.column, 3)) == 3
    assert o.memo.fresh(_total, o, (o.column, 3)) == 3 and o.calls == 1
    o.column = np.arange(4)  # equal prefix, another object: recomputed
    assert o.memo.fresh(_total, o, (o.column, 3)) == 6 and o.calls == 2
    assert o.memo.fresh(_total, o, (o.column, 4)) == 6 and o.calls == 3  # an int source changed


def test_peek_sees_what_put_kept_while_its_sources_are_the_same() -> None:
    o = Owner()
    assert o.memo.peek(_total, (o.column,)) is None
    o.memo.put(_total, 42, (o.column,))
    assert o.memo.peek(_total, (o.column,)) == 42
    assert o.memo.peek(_total, (o.column.copy(),)) is None
