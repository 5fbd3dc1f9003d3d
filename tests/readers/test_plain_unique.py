"""A plain np.unique (no return_* flag) imports numpy.ma on its first call in numpy 2.x (~25 ms,
more than reading a 20 MB rank): paid once per process, so once per worker. The read and check
paths use presence tables (perflint.ids.distinct) instead."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perflint.config import Config
from perflint.engine.loader import load_rules
from perflint.engine.run import check_trace
from perflint.graph.load import load_trace
from perflint.ids import distinct
from perflint.readers.kineto import native_scan
from perflint.selection import select_rules
from tests.conftest import shared_trace


@pytest.mark.parametrize("seed", range(5))
def test_distinct_is_np_unique(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 500))
    col = rng.integers(-1, n, size=int(rng.integers(0, 2000))).astype(np.int32)
    assert distinct(col) == np.unique(col).tolist()
    sparse = np.array([-7, 3, 10_000_000, 3], dtype=np.int32)  # no presence table: the general way
    assert distinct(sparse) == [-7, 3, 10_000_000]


@pytest.mark.parametrize("native", ["1", "0"])
def test_read_and_check_call_no_plain_unique(native: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if native == "1" and not native_scan.built():
        pytest.skip("the C scanner is not built here")
    monkeypatch.setenv("PERFLINT_NATIVE", native)
    plain: list[int] = []
    unique = np.unique

    def spy(ar: Any, *args: Any, **kw: Any) -> Any:
        if not args and not any(kw.get(k) for k in ("return_index", "return_inverse", "return_counts")):
            plain.append(len(ar))
        return unique(ar, *args, **kw)

    monkeypatch.setattr(np, "unique", spy)
    active = select_rules(load_rules([]), Config(), None, None, None)
    for rel in ("hta/negative_queue_length_values_check/rank0.json.gz", "tracelens/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"):
        result = check_trace(load_trace(shared_trace(rel)), active)
        assert result.statuses
    assert plain == []
