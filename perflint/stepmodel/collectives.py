"""A trace's collectives as the ranks of a run are joined on them (perflint.stepmodel.join).

Each communication kernel of the analysed steps is one row: what matches it on the other ranks
(its step's number, its collective name or else its kernel name, and its order among the
kernels of that name in that step; the process group, sequence number and type of its call
where recorded: metrics.collectives), its measured start and end, and how much of it the rank's
median step waits on (the share of its time on that step's critical path; where the step is not
replayed, the share of the step's communication time that its attribution puts on the path), and
for those on the median step's path, what the path ran before it (the longest piece since the
previous communication on the path: what a rank that arrives late was doing).
The rows are plain lists, small enough to travel from a worker with the trace's summary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.kernelnames.parse import short_name
from perflint.metrics.collectives import collectives, kernel_calls
from perflint.metrics.kernel_classes import CAT_INDEX, CATEGORIES, classify
from perflint.metrics.steps import launch_ts
from perflint.model import KERNEL, MEMCPY, MEMSET, NONE
from perflint.stepmodel import StepModel
from perflint.stepmodel.critical import BOUND, FIXED_NAMES, LABELS, Pieces
from perflint.stepmodel.window import step_at

COMM = CAT_INDEX["communication"]
_PATH_COMM = BOUND.index("communication")
_HELD_US = 5.0  # a collective that starts within this of other GPU work's end was held by it


def _label(t: Any, name: int, cat: str) -> str:
    return f"{short_name(t.s(name))} ({LABELS[cat]})"


def _before(t: Any, path: Pieces | None, rows: np.ndarray, cat: np.ndarray) -> list[str]:
    """Per row, what held the rank before it: on the median step's critical path, the longest
    piece between the previous communication piece and the row's first piece, '<name>
    (<category>)'; for rows not on the path, the last non-communication GPU work to end before
    the row started (where the GPU ran up to it: its start was held by that work), else ''."""
    out = [""] * len(rows)
    first: dict[int, int] = {}
    if path is not None and len(path):
        for k, r in enumerate(path.row.tolist()):
            if r != NONE and r not in first:
                first[r] = k
        comm = (path.cat == _PATH_COMM).tolist()
        dur = (path.end - path.start).tolist()
    g = t.gpu
    other = np.flatnonzero((cat != COMM) & np.isin(g.kind, (KERNEL, MEMCPY, MEMSET)))
    ends = g.ts[other] + g.dur[other]
    order = np.argsort(ends, kind="stable")
    other, ends = other[order], ends[order]
    for i, r in enumerate(rows.tolist()):
        k0 = first.get(r)
        if k0 is not None:
            best, best_us = -1, 0.0
            for k in range(k0 - 1, -1, -1):
                if comm[k]:
                    break
                if dur[k] > best_us:
                    best, best_us = k, dur[k]
            if best >= 0:
                assert path is not None
                nid, c = int(path.name[best]), BOUND[int(path.cat[best])]
                out[i] = _label(t, nid, c) if nid >= 0 else f"{FIXED_NAMES[-1 - nid]} ({LABELS[c]})"
            continue
        j = int(np.searchsorted(ends, g.ts[r] + _HELD_US, side="right")) - 1
        if j >= 0 and g.ts[r] - ends[j] <= _HELD_US:
            w = int(other[j])
            kind = CATEGORIES[int(cat[w])] if 0 <= int(cat[w]) < len(CATEGORIES) else "other"
            out[i] = _label(t, int(g.name[w]), kind if kind in ("memcpy", "memset") else f"gpu_{kind}")
    return out


KEYS = ("names", "name", "step", "ordinal", "start", "end", "median", "on_path", "before", "call", "part", "pg", "seq", "kind")


def collective_rows(m: StepModel, on_path: bool = True) -> dict[str, Any]:
    """{"names": [...], "name": [index into names], "step": [step number, -1 without steps],
    "ordinal": [...], "start": [...], "end": [...], "median": [in the median step],
    "on_path": [share of it the median step waits on], "before": [what the path ran before it, or
    ''], "call": [index of its call in
    metrics.collectives], "part": [its order among its call's kernels], "pg": [the call's process
    group or None], "seq": [its sequence number in the group, -1 unrecorded], "kind": [its type or
    None]} over the analysed steps' communication kernels, in time order. `on_path=False`: every
    share 0 (no replay: the join's waits need none)."""
    t, w = m.trace, m.window
    g = t.gpu
    cat = classify(t).category
    rows = np.flatnonzero(cat == COMM) if len(g) else np.zeros(0, dtype=np.int64)
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
    before = _before(t, path, rows, cat)
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
        "before": before,
        "call": call,
        "part": part,
        "pg": [c.process_group if c else None for c in known],
        "seq": [c.seq if c and c.seq is not None else -1 for c in known],
        "kind": [c.kind if c else None for c in known],
    }
