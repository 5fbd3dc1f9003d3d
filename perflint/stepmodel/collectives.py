"""A trace's collectives as the ranks of a run are joined on them (perflint.stepmodel.join).

Each communication kernel of the analysed steps is one row: what matches it on the other ranks
(its step's number, its collective name or else its kernel name, and its order among the
kernels of that name in that step; the process group, sequence number and type of its call
where recorded: metrics.collectives), its measured start and end, and how much of it the rank's
median step waits on (the share of its time on that step's critical path; where the step is not
replayed, the share of the step's communication time that its attribution puts on the path).
The rows are plain lists, small enough to travel from a worker with the trace's summary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.metrics.collectives import collectives, kernel_calls
from perflint.metrics.kernels import CAT_INDEX, classify
from perflint.metrics.steps import launch_ts
from perflint.model import NONE
from perflint.stepmodel import StepModel
from perflint.stepmodel.window import step_at

COMM = CAT_INDEX["communication"]


KEYS = ("names", "name", "step", "ordinal", "start", "end", "median", "on_path", "call", "part", "pg", "seq", "kind")


def collective_rows(m: StepModel, on_path: bool = True) -> dict[str, Any]:
    """{"names": [...], "name": [index into names], "step": [step number, -1 without steps],
    "ordinal": [...], "start": [...], "end": [...], "median": [in the median step],
    "on_path": [share of it the median step waits on], "call": [index of its call in
    metrics.collectives], "part": [its order among its call's kernels], "pg": [the call's process
    group or None], "seq": [its sequence number in the group, -1 unrecorded], "kind": [its type or
    None]} over the analysed steps' communication kernels, in time order. `on_path=False`: every
    share 0 (no replay: the join's waits need none)."""
    t, w = m.trace, m.window
    g = t.gpu
    rows = np.flatnonzero(classify(t).category == COMM) if len(g) else np.zeros(0, dtype=np.int64)
    empty: dict[str, Any] = {k: [] for k in KEYS}
    if not len(rows) or not m.steps:
        return empty
    where = step_at(t, w, launch_ts(t)[rows] if w.has_steps else g.ts[rows])
    rows, where = rows[where != NONE], where[where != NONE]
    if not len(rows):
        return empty
    o = np.lexsort((g.ts[rows], where))
    rows, where = rows[o], where[o]
    label = np.where(g.collective[rows] != NONE, g.collective[rows], g.name[rows])
    names, inv = np.unique(label, return_inverse=True)
    inv = inv.reshape(-1)
    # Order among the same name in the same step.
    key = where.astype(np.int64) * (len(names) + 1) + inv
    ko = np.argsort(key, kind="stable")
    first = np.ones(len(ko), dtype=bool)
    first[1:] = key[ko][1:] != key[ko][:-1]
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(ko)), 0))
    ordinal = np.empty(len(ko), dtype=np.int64)
    ordinal[ko] = np.arange(len(ko)) - run_start
    med = m.median_index
    in_median = where == med
    shares = np.zeros(len(rows))
    path = m.critical_path() if on_path else None
    dur = g.dur[rows]
    if path is not None:
        hit = path.row != NONE
        crit = np.zeros(len(g))
        np.add.at(crit, path.row[hit], path.end[hit] - path.start[hit])
        shares = np.where(in_median & (dur > 0), np.minimum(1.0, crit[rows] / np.maximum(dur, 1e-9)), 0.0)
    elif on_path:
        comm = dict(m.bound_by()).get("communication", 0.0)
        total = float(dur[in_median].sum())
        if total > 0:
            shares = np.where(in_median, min(1.0, comm / total), 0.0)
    numbers = [s.number if s.number is not None else -1 for s in m.steps]
    calls, call_of = collectives(t), kernel_calls(t)
    call = [call_of.get(r, NONE) for r in rows.tolist()]
    part = [calls[c].kernels.index(r) if c != NONE else 0 for c, r in zip(call, rows.tolist())]
    known = [calls[c] if c != NONE else None for c in call]
    return {
        "names": [t.s(int(x)) for x in names.tolist()],
        "name": inv.tolist(),
        "step": [numbers[i] for i in where.tolist()] if w.has_steps else [-1] * len(rows),
        "ordinal": ordinal.tolist(),
        "start": g.ts[rows].tolist(),
        "end": (g.ts[rows] + dur).tolist(),
        "median": in_median.tolist(),
        "on_path": shares.tolist(),
        "call": call,
        "part": part,
        "pg": [c.process_group if c else None for c in known],
        "seq": [c.seq if c and c.seq is not None else -1 for c in known],
        "kind": [c.kind if c else None for c in known],
    }
