"""Ops found by their names: a name test runs once per distinct name, not per op."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from perflint.ids import distinct, isin_ids
from perflint.model import DATA_WAIT_PREFIX, Trace


def ops_named(t: Trace, test: Callable[[str], bool]) -> np.ndarray:
    """Indices of the ops whose name passes `test`, once per trace and test."""
    return t.memo.keyed(_ops_named, t, test)


def _ops_named(t: Trace, test: Callable[[str], bool]) -> np.ndarray:
    hit = [i for i in distinct(t.ops.name) if i >= 0 and test(t.strings[i])]
    return np.flatnonzero(isin_ids(t.ops.name, hit)) if hit else np.zeros(0, dtype=np.int64)


def is_dataloader_name(name: str) -> bool:
    """The TensorBoard plugin's test for a DataLoader op (event_parser / overall_parser), and the
    data waits a reader recorded directly (`DataWait#...`: MindSpore's iteration interval)."""
    return (
        (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"))
        or name.startswith("enumerate(DataPipe)#")
        or name.startswith(DATA_WAIT_PREFIX)
    )


def dataloader_ops(t: Trace) -> np.ndarray:
    """Indices of data-loader ops (CPU ops or annotations), cached on the trace."""
    return ops_named(t, is_dataloader_name)
