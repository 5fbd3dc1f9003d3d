"""MindSpore's cluster analysis of one rank: what its profiler measured per step across the run.

`{ascend|gpu}_cluster_analyse_{mode}_{stages}_{ranks}_{rank}.csv` (mode: data-, model- or
pipeline-parallel) has one row per step of the rank's step trace, in step order and without a step
column, then one row that averages them. Its columns, in ms:
`computation_time` (the step less the communication nothing else overlaps), `communication_alone_time`
(that communication) and, in pipeline-parallel runs, `stage_time` (the step less the receiving nothing
overlaps: the stage's own time), `receive_alone_time` and `collective_communication_alone_time` (the
communication within the stage). MindInsight's cluster views and its parallel proposer read them so.

`flops_summary_{rank}.json`: the floating-point operations the rank's AI Core ops ran (millions):
`cube_FLOPs` + `vec_FLOPs`, or `FLOPs` in older files.
"""

from __future__ import annotations

import os
from typing import Any

from perflint.errors import InputError
from perflint.readers.mindspore.table import json_file, numbers, rows

BASE = ("computation_time", "communication_alone_time")
PIPELINE = ("stage_time", "receive_alone_time", "collective_communication_alone_time")
US_PER_MS = 1000.0


def read_cluster(path: str, steps: list[int], pipeline: bool) -> tuple[dict[str, list[float]], str | None]:
    """(column -> per-step values in us, keyed 'step' -> the step numbers; a warning or None) for
    the steps `steps` of the rank's step trace. The rows follow the step trace's order: with one
    more row than steps the last is the average and is dropped; other counts are matched from the
    first step on, and the warning says so."""
    need = BASE + PIPELINE if pipeline else BASE
    header, data = rows(path, need)
    cols = {c: [v * US_PER_MS for v in numbers(path, header, data, c)] for c in need}
    n = len(data)
    name = os.path.basename(path)
    warning = None
    if n == len(steps) + 1:
        n -= 1  # the average row
    elif n != len(steps):
        n = min(n, len(steps))
        warning = f"{name} has {len(data)} rows for the {len(steps)} steps of the step trace: its first {n} are taken for steps {steps[0]}-{steps[n - 1]}" if n else f"{name} has no rows for the step trace's steps"
    out = {c.removesuffix("_time") + "_us": v[:n] for c, v in cols.items()}
    return {"step": [float(s) for s in steps[:n]], **out}, warning


def read_flops(path: str) -> float:
    """Floating-point operations the rank ran (the file counts millions)."""
    doc = json_file(path)
    name = os.path.basename(path)
    if not isinstance(doc, dict):
        raise InputError(path, f"{name}: expected a JSON object with cube_FLOPs and vec_FLOPs (or FLOPs)")
    if "cube_FLOPs" in doc or "vec_FLOPs" in doc:
        mflops = _number(path, doc, "cube_FLOPs") + _number(path, doc, "vec_FLOPs")
    elif "FLOPs" in doc:
        mflops = _number(path, doc, "FLOPs")
    else:
        raise InputError(path, f"{name}: no cube_FLOPs, vec_FLOPs or FLOPs (got {', '.join(sorted(doc)[:6]) or 'nothing'})")
    return mflops * 1e6


def _number(path: str, doc: dict[str, Any], key: str) -> float:
    v = doc.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, f"{os.path.basename(path)}: {key} {str(v)[:40]!r} is not a number")
    return float(v)
