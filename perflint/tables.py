"""The kernel and op tables of the Python API (`perflint.kernels`, `perflint.ops`): one row per
kernel launch, one row per op name. The columns are a small, documented set (docs/api.md): add
columns, never rename or drop one.

Work per distinct value (kernel name, launch site, op name) and numpy passes per nesting level;
the rows themselves are built from whole columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from perflint.facts import Context
from perflint.facts._common import OpInfo, kernel_op, kernel_row_dtype, op_infos
from perflint.facts._optree import op_levels
from perflint.ids import unique_inverse
from perflint.metrics.kernel_class import classify_kernel
from perflint.metrics.kernels import CATEGORIES, classify, trace_vendor
from perflint.model import GPU_SYNC, KERNEL, NONE, OP_ANNOTATION, Trace

KERNEL_COLUMNS = (
    "name", "category", "library", "dtype", "tensor_cores", "device", "stream", "ts_us", "dur_us",
    "grid", "block", "occupancy_pct", "op", "top_level_op",
)  # fmt: skip
OP_COLUMNS = ("name", "kind", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us")


def _dims(rows: list[list[int]]) -> list[list[int] | None]:
    return [d if any(d) else None for d in rows]


def kernel_rows(t: Trace) -> list[dict[str, Any]]:
    """One row per kernel launch, in time order (KERNEL_COLUMNS)."""
    return _kernel_rows(t)[0]


def _kernel_rows(t: Trace) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, list[OpInfo]]:
    """`kernel_rows` with, per row, its kernel's position among the trace's kernels (GPU-table
    order) and its launch site (an index into the OpInfo list)."""
    g = t.gpu
    kern = np.flatnonzero(g.kind == KERNEL)
    order = np.argsort(g.ts[kern], kind="stable")
    sel = kern[order]
    if len(sel) == 0:
        return [], order, np.zeros(0, dtype=np.int64), []
    vendor = trace_vendor(t)
    cls = classify(t)
    iid, infos = op_infos(Context(t), kernel_op(t)[sel])
    # The name and launch-site columns are resolved once per distinct (kernel name, launch site).
    width = len(infos) + 1
    pairs, inverse = unique_inverse(g.name[sel].astype(np.int64) * width + iid)
    per_pair = []
    for code in pairs.tolist():
        sid, ii = divmod(code, width)
        kname, info = t.s(sid), infos[ii]
        per_pair.append(
            (
                kname,
                classify_kernel(kname, vendor).library or None,
                kernel_row_dtype(t, info, kname),
                info.stack[-1] if info.stack else None,
                info.stack[0] if info.stack else None,
            )
        )
    occ = g.occupancy[sel]
    # Kineto writes 0 when its occupancy query failed while blocks ran: unknown, not zero.
    occ = np.where(np.isnan(occ) | ((occ == 0) & (g.blocks_per_sm[sel] > 0)), np.nan, occ)
    tc = cls.tensor_core[sel].tolist()
    cats = cls.category[sel].tolist()
    cols = zip(
        inverse.tolist(),
        cats,
        tc,
        g.device[sel].tolist(),
        g.stream[sel].tolist(),
        g.ts[sel].tolist(),
        g.dur[sel].tolist(),
        _dims(g.grid[sel].tolist()),
        _dims(g.block[sel].tolist()),
        [None if o != o else o for o in occ.tolist()],
    )
    out = []
    for pi, cat, tcv, dev, stream, ts, dur, grid, block, occv in cols:
        name, library, dtype, op, top = per_pair[pi]
        out.append(
            {
                "name": name,
                "category": CATEGORIES[cat],
                "library": library,
                "dtype": dtype,
                "tensor_cores": None if tcv < 0 else bool(tcv),
                "device": dev,
                "stream": stream,
                "ts_us": ts,
                "dur_us": dur,
                "grid": grid,
                "block": block,
                "occupancy_pct": occv,
                "op": op,
                "top_level_op": top,
            }
        )
    return out, order, iid, infos


def _subtree_sums(t: Trace, own: np.ndarray) -> np.ndarray:
    """Per op: `own` summed over the op and everything nested under it (one pass per level,
    deepest first)."""
    total: np.ndarray = own.astype(np.float64).copy()
    lv = op_levels(Context(t))
    parent = t.ops.parent
    for k in range(len(lv) - 1, 0, -1):
        ops = lv.ops(k)
        np.add.at(total, parent[ops], total[ops])
    return total


def op_times(t: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per op: host self and total time, device self and total time (µs, float64). Device time is
    the GPU work (kernels, memcpy, memset) the op launched itself / it and the ops under it."""
    o, g = t.ops, t.gpu
    n = len(o)
    dur = o.dur.astype(np.float64)
    nested = np.flatnonzero(o.parent != NONE)
    children = np.bincount(o.parent[nested], weights=dur[nested], minlength=n) if len(nested) else np.zeros(n)
    host_self = np.maximum(dur - children, 0.0)
    work = np.flatnonzero(g.kind != GPU_SYNC)
    kop = kernel_op(t)[work]
    linked = kop != NONE
    dev_self = np.bincount(kop[linked], weights=g.dur[work][linked].astype(np.float64), minlength=n) if linked.any() else np.zeros(n)
    return host_self, dur, dev_self, _subtree_sums(t, dev_self)


def op_rows(t: Trace) -> list[dict[str, Any]]:
    """One row per op name (OP_COLUMNS), most device time first, then most host time. An op
    nested in an op of the same name counts in both totals, as in torch.profiler's tables."""
    o = t.ops
    if len(o) == 0:
        return []
    host_self, dur, dev_self, dev_total = op_times(t)
    names, inv = unique_inverse(o.name)
    m = len(names)

    def per_name(x: np.ndarray) -> list[float]:
        return np.bincount(inv, weights=x, minlength=m).tolist()  # type: ignore[no-any-return]

    calls = np.bincount(inv, minlength=m).tolist()
    # An op name is a user annotation when every call of it is one.
    annotation = (np.bincount(inv, weights=(o.kind == OP_ANNOTATION).astype(np.float64), minlength=m) == calls).tolist()
    cols = zip(names.tolist(), annotation, calls, per_name(host_self), per_name(dur), per_name(dev_self), per_name(dev_total))
    rows = [
        {
            "name": t.s(sid),
            "kind": "user_annotation" if ann else "cpu_op",
            "calls": c,
            "host_self_us": hs,
            "host_total_us": ht,
            "device_self_us": ds,
            "device_total_us": dt,
        }
        for sid, ann, c, hs, ht, ds, dt in cols
    ]
    rows.sort(key=lambda r: (-r["device_total_us"], -r["host_total_us"], r["name"]))
    return rows


# `perflint kernels`: pyprof's columns by pyprof's names, then perflint's.
PYPROF_COLUMNS = ("idx", "seq", "altseq", "tid", "layer", "trace", "dir", "sub", "mod", "op", "kernel", "params", "sil", "tc", "device", "stream", "grid", "block", "flops", "bytes")
# The last four: the roofline (metrics/roofline.py, docs/roofline.md) of the row's flops and bytes.
PERFLINT_COLUMNS = (
    "name", "category", "library", "dtype", "blocks_per_sm", "occupancy", "top_level_op", "bottom_level_op", "op_stack",
    "tflops", "gbps", "pct_of_peak", "bound",
)  # fmt: skip
TABLE_COLUMNS = PYPROF_COLUMNS + PERFLINT_COLUMNS
DEFAULT_COLUMNS = ("idx", "dir", "op", "kernel", "sil", "tc", "grid", "block", "category")


def table_columns(traces: list[Trace]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(known, default) columns of `kernel_table` over these traces: a CUPTI counter trace adds
    its counters under their metric names, and shows them by default."""
    from perflint.metrics.counter_table import COUNTER_DEFAULT_COLUMNS, COUNTER_TABLE_COLUMNS, counter_names

    counters = list(dict.fromkeys(c for t in traces for c in counter_names(t)))
    if not counters:
        return TABLE_COLUMNS, DEFAULT_COLUMNS
    known = tuple(dict.fromkeys((*TABLE_COLUMNS, *COUNTER_TABLE_COLUMNS, *counters)))
    return known, (*COUNTER_DEFAULT_COLUMNS, *counters)


def kernel_table(t: Trace) -> Iterator[dict[str, Any]]:
    """One row per kernel launch in start-time order with TABLE_COLUMNS: pyprof's attribution
    (graph.attribution) beside the kernel's class and launch configuration. A CUPTI counter trace
    gives one row per measured kernel instead (metrics.counter_table: counters, op stack, flops)."""
    from perflint.graph.attribution import attribute
    from perflint.metrics.kernel_names import parse_kernel_name
    from perflint.metrics.roofline import kernel_rows_roofline
    from perflint.metrics.work import kernel_work
    from perflint.metrics.work.pyprof import pyprof_op, pyprof_tc

    if t.counter_ranges:
        from perflint.metrics.counter_table import counter_rows

        yield from counter_rows(t)
        return
    rows, order, iid, infos = _kernel_rows(t)
    if not rows:
        return
    att = attribute(t)  # positions: the trace's kernels in GPU-table order, as `order` indexes them
    bps = t.gpu.blocks_per_sm[att.kernels]
    kf_all, kb_all = kernel_work(t)
    kf_all, kb_all = kf_all[att.kernels], kb_all[att.kernels]
    kflops, kbytes = kf_all.tolist(), kb_all.tolist()
    marked = any(s.marked for s in att.sites)
    roof = kernel_rows_roofline(t, rows, kf_all[order], kb_all[order])
    tflops, gbps, pct = (_nan_none(x) for x in (roof.tflops, roof.gbps, roof.pct_of_peak))
    base: dict[str, str] = {}  # pyprof's kernel column: the function's name, once per distinct name
    for idx, (row, i, site) in enumerate(zip(rows, order.tolist(), iid.tolist())):
        rec = att.record(i)
        mod, op = att.shown(i)
        info = infos[site]
        b = float(bps[i])
        matrix = row["category"] in ("gemm", "conv", "attention")
        op = pyprof_op(op, matrix)
        kf, kb = kflops[i], kbytes[i]
        yield {
            "idx": idx,
            "seq": rec["seq"],
            "altseq": rec["altseq"],
            "tid": rec["tid"],
            "layer": rec["layer"],
            "trace": rec["trace"],
            "dir": rec["dir"],
            "sub": rec["sub"],
            "mod": mod,
            "op": op,
            "kernel": base.get(row["name"]) or base.setdefault(row["name"], parse_kernel_name(row["name"]).function or row["name"]),
            "params": rec["params"],
            "sil": int(round(row["dur_us"] * 1000)),
            "tc": pyprof_tc(op, matrix, row["tensor_cores"], marked, not att.marked_site(i)),
            "device": row["device"],
            "stream": row["stream"],
            "grid": row["grid"],
            "block": row["block"],
            "flops": None if kf != kf else kf,
            "bytes": None if kb != kb else kb,
            "name": row["name"],
            "category": row["category"],
            "library": row["library"],
            "dtype": row["dtype"],
            "blocks_per_sm": None if b != b else b,
            "occupancy": row["occupancy_pct"],
            "top_level_op": row["top_level_op"],
            "bottom_level_op": row["op"],
            "op_stack": list(info.stack),
            "tflops": tflops[idx],
            "gbps": gbps[idx],
            "pct_of_peak": pct[idx],
            "bound": roof.bound[idx],
        }


def _nan_none(x: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in x.tolist()]
