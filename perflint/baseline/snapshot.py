"""A compact per-trace snapshot of per-step samples, for baselines and diffs.

Per analysis step (the step model's numbers: perflint.stepmodel): step time (its window), GPU
busy %, kernel time per category, kernels and launches, memcpy bytes, and time/count per kernel
group (top-level op x op x shapes x kernel); and what bounds the median step (time per category
along its critical path). Groups below a small share are folded away so a snapshot stays kilobytes;
their time is kept per kernel name. A trace without steps also gets its totals over the whole window
and its repeating annotation ranges (`whole`), for a diff to compare per iteration or per second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint._version import __version__
from perflint.baseline.identity import device_identity
from perflint.facts import Context
from perflint.facts._common import kernel_op, model
from perflint.facts._optree import op_info
from perflint.facts.builtin import load_all
from perflint.ids import isin_ids
from perflint.memo import once
from perflint.metrics.kernel_classes import CATEGORIES
from perflint.metrics.steps import launch_ts
from perflint.model import DATA_WAIT_PREFIX, KERNEL, MEMCPY, OP_ANNOTATION, Trace
from perflint.stepmodel import StepModel, step_at

SNAPSHOT_SCHEMA = "perflint-snapshot"
SNAPSHOT_VERSION = 1
MIN_GROUP_SHARE_PCT = 0.1
MAX_GROUPS = 300
MAX_FOLDED = 100  # kernel names of folded groups a snapshot keeps
MAX_RANGES = 20  # repeating annotation ranges a snapshot without steps keeps


# One trace's snapshot (an entry of a snapshot document's "traces"), as JSON holds it.
Snapshot = dict[str, Any]


def group_key(top: str | None, op: str | None, dims: Any, kernel: str) -> str:
    return f"{top or '-'} | {op or '-'} | {dims!r} | {kernel}"


@once
def current_snapshot(ctx: Context) -> Snapshot:
    """The context's trace's snapshot, made once per context (the regression rules and the HTML
    report both compare it)."""
    return trace_snapshot(ctx)


def snapshot_of(trace: Trace, include_edge_steps: bool) -> Snapshot:
    """The trace's snapshot, in a context of its own (the per-trace work of a snapshot run)."""
    load_all()
    return trace_snapshot(Context(trace, include_edge_steps=include_edge_steps))


def trace_snapshot(ctx: Context) -> Snapshot:
    t = ctx.trace
    g = t.gpu
    m = model(ctx)
    steps = ctx.steps
    n = len(steps)
    step_idx = step_at(t, m.window, launch_ts(t)) if n else np.full(len(g), -1)
    usage = m.usage if n else ()
    samples: dict[str, list[float]] = {
        "step_time_us": [s.us for s in m.window.timed_steps] if n else [],  # every step marker's
        "gpu_busy_pct": [u.busy_pct or 0.0 for u in usage],
        "kernels_per_step": [float(u.kernel_count) for u in usage],
        "launches_per_step": [],
        "memcpy_bytes": [],
    }
    for ci, c in enumerate(CATEGORIES):
        samples[f"category.{c}"] = [u.category_us[ci] for u in usage]
    rt_names = {i for i, s in enumerate(t.strings) if "Launch" in s or "launch" in s}
    rt_launch = isin_ids(t.runtime.name, np.fromiter(rt_names, dtype=np.int32)) if rt_names else np.zeros(len(t.runtime), bool)
    rt_step = step_at(t, m.window, t.runtime.ts) if n else np.full(len(t.runtime), -1)
    for i in range(n):
        samples["launches_per_step"].append(float((rt_launch & (rt_step == i)).sum()))
        mc = (step_idx == i) & (g.kind == MEMCPY)
        samples["memcpy_bytes"].append(float(np.clip(g.nbytes[mc], 0, None).sum()))
    groups, folded = _groups(ctx, step_idx, n)
    whole = None if n or not m.steps else _whole(ctx, rt_launch)
    mem = t.memory
    cuda = mem.device_type == 1
    peak = int(mem.total_allocated[cuda].max()) if cuda.any() and (mem.total_allocated[cuda] >= 0).any() else None
    return {
        "path": t.path,
        "rank": t.rank,
        "identity": device_identity(t),
        "steps": [s.number for s in steps],
        "samples": samples,
        "bound_by": _bound_by(m) if n else {},
        "groups": groups,
        "folded": folded,
        "peak_memory_bytes": peak,
        **({"whole": whole} if whole is not None else {}),
    }


def _whole(ctx: Context, rt_launch: np.ndarray) -> dict[str, Any]:
    """A trace without steps: the totals over its window (what a diff divides by iterations or
    seconds, as two windows of one job need not hold the same number of iterations) and the
    annotation ranges that repeat in it, outermost first (the likeliest iteration markers)."""
    t, m = ctx.trace, model(ctx)
    u = m.usage[0]
    g = t.gpu
    lo, hi = m.steps[0].lo, m.steps[0].hi
    in_rt = (t.runtime.ts >= lo) & (t.runtime.ts <= hi)
    totals: dict[str, float] = {
        "kernels_per_step": float(u.kernel_count),
        "launches_per_step": float((rt_launch & in_rt).sum()),
        "memcpy_bytes": float(np.clip(g.nbytes[g.kind == MEMCPY], 0, None).sum()),
    }
    for ci, c in enumerate(CATEGORIES):
        totals[f"category.{c}"] = float(u.category_us[ci])
    return {"window_us": float(m.steps[0].us), "gpu_busy_pct": u.busy_pct, "totals": totals, "ranges": repeating_ranges(t)}


def repeating_ranges(t: Trace) -> list[list[Any]]:
    """[name, count] of each annotation range name that occurs at least twice, outermost first
    (least nesting depth, then most time covered). Step and data-wait markers are not iterations
    of the kind looked for here."""
    o = t.ops
    rows = np.flatnonzero(o.kind == OP_ANNOTATION)
    if not len(rows):
        return []
    names, inv, counts = np.unique(o.name[rows], return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    depth = np.full(len(names), np.iinfo(np.int32).max, dtype=np.int64)
    np.minimum.at(depth, inv, o.depth[rows].astype(np.int64))
    cover = np.zeros(len(names))
    np.add.at(cover, inv, o.dur[rows])
    out = []
    for i in np.lexsort((-cover, depth)).tolist():
        name = t.s(int(names[i]))
        if counts[i] >= 2 and not name.startswith(("ProfilerStep#", DATA_WAIT_PREFIX)):
            out.append([name, int(counts[i])])
    return out[:MAX_RANGES]


def _bound_by(m: StepModel) -> dict[str, float]:
    """What bounds the median step, per category, scaled to the median of the step times: the
    categories of two snapshots then change by as much as their median steps do."""
    got = m.bound_by()
    total, median_us = sum(us for _, us in got), m.median_step_us
    if total <= 0 or median_us is None:
        return {}
    return {c: round(us * median_us / total, 3) for c, us in got}


def _groups(ctx: Context, step_idx: np.ndarray, n: int) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The kernel groups kept, and the folded ones per kernel name (`_folded`)."""
    t = ctx.trace
    g = t.gpu
    kern = g.kind == KERNEL
    # Without steps, the whole trace is one sample.
    sel = np.flatnonzero(kern & (step_idx >= 0)) if n else np.flatnonzero(kern)
    width = n if n else 1
    if len(sel) == 0:
        return {}, {}
    total = float(g.dur[sel].sum())
    kop = kernel_op(t)[sel]
    buckets: dict[str, dict[str, Any]] = {}
    for pos, row in enumerate(sel.tolist()):
        info = op_info(ctx, int(kop[pos]))
        top = info.stack[0] if info.stack else None
        op = info.stack[-1] if info.stack else None
        kname = t.s(int(g.name[row]))
        key = group_key(top, op, info.dims, kname)
        b = buckets.get(key)
        if b is None:
            b = {"top_level_op": top, "op": op, "input_dims": info.dims, "kernel": kname,
                 "time_us": [0.0] * width, "count": [0] * width}
            buckets[key] = b
        si = int(step_idx[row]) if n else 0
        b["time_us"][si] += float(g.dur[row])
        b["count"][si] += 1
    ranked = sorted(buckets.items(), key=lambda kv: -sum(kv[1]["time_us"]))
    keep = {k: v for k, v in ranked[:MAX_GROUPS] if 100.0 * sum(v["time_us"]) / total >= MIN_GROUP_SHARE_PCT}
    for v in keep.values():
        v["time_us"] = [round(x, 3) for x in v["time_us"]]
    return keep, _folded(buckets, keep, width)


def _folded(buckets: dict[str, dict[str, Any]], keep: dict[str, dict[str, Any]], width: int) -> dict[str, dict[str, Any]]:
    """Per kernel name, the time and count of the groups folded away (the largest MAX_FOLDED
    names): a kernel folded on one side and kept on the other is then still the same kernel."""
    out: dict[str, dict[str, Any]] = {}
    for k, v in buckets.items():
        if k in keep:
            continue
        f = out.setdefault(v["kernel"], {"time_us": [0.0] * width, "count": [0] * width})
        f["time_us"] = [a + b for a, b in zip(f["time_us"], v["time_us"])]
        f["count"] = [a + b for a, b in zip(f["count"], v["count"])]
    ranked = sorted(out.items(), key=lambda kv: -sum(kv[1]["time_us"]))[:MAX_FOLDED]
    return {k: {"time_us": [round(x, 3) for x in v["time_us"]], "count": v["count"]} for k, v in ranked}


def snapshot_document(traces: list[Snapshot]) -> dict[str, Any]:
    """The snapshot file's document: its traces by rank (rankless last), then path."""
    traces = sorted(traces, key=lambda s: (s["rank"] is None, s["rank"] or 0, s["path"]))
    return {
        "schema": SNAPSHOT_SCHEMA,
        "schema_version": SNAPSHOT_VERSION,
        "perflint_version": __version__,
        "traces": traces,
    }
