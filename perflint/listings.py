"""The kernel and op tables of the Python API (`perflint.kernels`, `perflint.ops`): one row per
kernel launch, one row per op name. The columns are a small, documented set (docs/api.md): add
columns, never rename or drop one.

Work per distinct value (kernel name, launch site, op name) and numpy passes per nesting level;
the rows themselves are built from whole columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from perflint.facts import Context
from perflint.facts._common import OpInfo, kernel_op, kernel_row_dtype, op_infos
from perflint.facts._optree import op_levels
from perflint.ids import unique_inverse
from perflint.kernelnames.classify import classify_kernel
from perflint.metrics.kernel_classes import CATEGORIES, classify, trace_vendor
from perflint.model import GPU_SYNC, KERNEL, NONE, OP_ANNOTATION, Trace
from perflint.module_ranges import innermost_modules

OP_COLUMNS = ("name", "kind", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us")


def _dims(rows: list[list[int]]) -> list[list[int] | None]:
    return [d if any(d) else None for d in rows]


def _dims_column(dims: np.ndarray) -> list[list[int] | None]:
    """An (n, 3) grid or block column as `_dims` gives it, one list per distinct triple (rows with
    equal dims share it: read-only)."""
    if len(dims) == 0:
        return []
    d = dims.astype(np.int64)
    hi = d.max(axis=0) + 1
    if d.min() < 0 or float(hi[0]) * float(hi[1]) * float(hi[2]) >= 2**62:
        return _dims(dims.tolist())
    uniq, inv = unique_inverse((d[:, 0] * hi[1] + d[:, 1]) * hi[2] + d[:, 2])
    hy, hz = int(hi[1]), int(hi[2])
    vals = _dims([[u // (hy * hz), (u // hz) % hy, u % hz] for u in uniq.tolist()])
    return [vals[i] for i in inv.tolist()]


def kernel_rows(t: Trace, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """`kernel_table`'s rows (all its columns, or `columns`) as a list, each row's grid and block
    a list of its own (the caller may change them). perflint.kernels() and `perflint kernels`
    give these rows under the same names."""
    rows = list(kernel_table(t, columns or table_columns([t])[0]))
    for r in rows:
        for c in ("grid", "block"):
            if isinstance(r.get(c), list):
                r[c] = list(r[c])
    return rows


def _kernel_sites(t: Trace, sel: np.ndarray) -> tuple[np.ndarray, list[OpInfo], np.ndarray, list[tuple[str, str | None, str | None, str | None, str | None]]]:
    """For the kernels at GPU rows `sel`: their launch sites (indexes into the OpInfo list), and per
    distinct (kernel name, launch site) pair, resolved once, its name, library, dtype, bottom- and
    top-level op (`inverse`: each kernel's pair)."""
    vendor = trace_vendor(t)
    iid, infos = op_infos(Context(t), kernel_op(t, sel))
    width = len(infos) + 1
    pairs, inverse = unique_inverse(t.gpu.name[sel].astype(np.int64) * width + iid)
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
    return iid, infos, inverse, per_pair


def kernel_dtypes(t: Trace, sel: np.ndarray) -> list[str | None]:
    """The math dtype of each kernel at GPU rows `sel` (as kernel_rows gives it)."""
    if len(sel) == 0:
        return []
    _, _, inverse, per_pair = _kernel_sites(t, sel)
    dtypes = [p[2] for p in per_pair]
    return [dtypes[i] for i in inverse.tolist()]


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
    kop = kernel_op(t, work)
    linked = kop != NONE
    dev_self = np.bincount(kop[linked], weights=g.dur[work][linked].astype(np.float64), minlength=n) if linked.any() else np.zeros(n)
    return host_self, dur, dev_self, _subtree_sums(t, dev_self)


def op_rows(t: Trace) -> list[dict[str, Any]]:
    """One row per op name (OP_COLUMNS), most device time first, then most host time. An op
    nested in an op of the same name is a call of its own, counted in both totals (the operator
    view, op_view, merges an op whose only child has its name, as torch.profiler does)."""
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
    "name", "category", "library", "dtype", "tensor_cores", "blocks_per_sm", "occupancy_pct", "ts_us", "dur_us",
    "top_level_op", "bottom_level_op", "op_stack", "tflops", "gbps", "pct_of_peak", "bound",
)  # fmt: skip
TABLE_COLUMNS = PYPROF_COLUMNS + PERFLINT_COLUMNS
DEFAULT_COLUMNS = ("idx", "dir", "op", "kernel", "sil", "tc", "grid", "block", "category")


def table_columns(traces: list[Trace]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(known, default) columns of `kernel_table` over these traces: a CUPTI counter trace adds
    its counters under their metric names, and shows them by default."""
    from perflint.metrics.counter_listing import COUNTER_DEFAULT_COLUMNS, COUNTER_TABLE_COLUMNS, counter_names

    counters = list(dict.fromkeys(c for t in traces for c in counter_names(t)))
    if not counters:
        return TABLE_COLUMNS, DEFAULT_COLUMNS
    known = tuple(dict.fromkeys((*TABLE_COLUMNS, *COUNTER_TABLE_COLUMNS, *counters)))
    return known, (*COUNTER_DEFAULT_COLUMNS, *counters)


def kernel_table(t: Trace, columns: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """One row per kernel launch in start-time order with TABLE_COLUMNS (or only `columns`):
    pyprof's attribution (graph.attribution) beside the kernel's class and launch configuration.
    A CUPTI counter trace gives one row per measured kernel instead (metrics.counter_listing:
    counters, op stack, flops)."""
    if t.counter_ranges:
        from perflint.metrics.counter_listing import counter_rows

        yield from counter_rows(t)
        return
    cols = kernel_columns(t, columns or TABLE_COLUMNS)
    keys = list(cols)
    for vals in zip(*cols.values()):
        yield dict(zip(keys, vals))


_RECORD = frozenset(("seq", "altseq", "tid", "layer", "trace", "sub", "params"))  # attribution.record's
_PYPROF = _RECORD | {"dir", "mod", "op", "tc"}
_ROOF = frozenset(("tflops", "gbps", "pct_of_peak", "bound"))
_WORK = _ROOF | {"flops", "bytes"}


def kernel_columns(t: Trace, columns: Sequence[str] = TABLE_COLUMNS) -> dict[str, list[Any]]:
    """`kernel_table` by column: each of `columns` (TABLE_COLUMNS names) as one list, a value per
    kernel launch in start-time order. Only what the columns need is computed, per distinct value
    where it can be (kernel name and launch site, attribution site), and whole columns at a time."""
    from perflint.graph.attribution import attribute
    from perflint.kernelnames.parse import parse_kernel_name
    from perflint.metrics.roofline import kernel_peaks, roofline
    from perflint.metrics.work import kernel_work
    from perflint.metrics.work.pyprof import pyprof_op, pyprof_tc

    need = set(columns)
    g = t.gpu
    kern = np.flatnonzero(g.kind == KERNEL)
    order = np.argsort(g.ts[kern], kind="stable")  # row -> position among the kernels
    sel = kern[order]
    n = len(sel)
    if n == 0:
        return {c: [] for c in columns}
    cls = classify(t)
    iid, infos, inverse, per_pair = _kernel_sites(t, sel)
    inv = inverse.tolist()

    def by_pair(k: int) -> list[Any]:
        vals = [p[k] for p in per_pair]
        return [vals[i] for i in inv]

    cat = cls.category[sel]
    tc = cls.tensor_core[sel]
    got: dict[str, Any] = {"idx": lambda: list(range(n))}
    got["name"] = lambda: by_pair(0)
    got["library"] = lambda: by_pair(1)
    got["dtype"] = lambda: by_pair(2)
    got["bottom_level_op"] = lambda: by_pair(3)
    got["top_level_op"] = lambda: by_pair(4)
    got["category"] = lambda: np.asarray(CATEGORIES, dtype=object)[cat].tolist()
    got["device"] = lambda: g.device[sel].tolist()
    got["stream"] = lambda: g.stream[sel].tolist()
    got["grid"] = lambda: _dims_column(g.grid[sel])
    got["block"] = lambda: _dims_column(g.block[sel])
    got["sil"] = lambda: np.rint(g.dur[sel] * 1000).astype(np.int64).tolist()
    got["blocks_per_sm"] = lambda: nan_none(g.blocks_per_sm[sel])
    got["occupancy_pct"] = lambda: nan_none(_occupancy(g, sel))
    tensor_cores = [None if v < 0 else bool(v) for v in tc.tolist()]
    got["tensor_cores"] = lambda: tensor_cores
    got["ts_us"], got["dur_us"] = (lambda: g.ts[sel].tolist()), (lambda: g.dur[sel].tolist())

    def kernel() -> list[Any]:
        base = {p[0]: parse_kernel_name(p[0]).function or p[0] for p in per_pair}
        return [base[x] for x in by_pair(0)]

    def op_stack() -> list[Any]:
        stacks = [info.stack for info in infos]
        return [list(stacks[i]) for i in iid.tolist()]

    got["kernel"], got["op_stack"] = kernel, op_stack
    out: dict[str, list[Any]] = {}
    if need & _PYPROF:
        att = attribute(t)  # positions: the trace's kernels in GPU-table order, as `order` indexes them
        if need & _RECORD:
            recs = [att.record(i) for i in order.tolist()]
            for c in _RECORD & need:
                out[c] = [r[c] for r in recs]
        site = att.site[order]
        dirs = [s.dir for s in att.sites]
        got["dir"] = lambda: [dirs[k] for k in site.tolist()]
        # pyprof shows a bprop kernel without its own marker with its fprop kernel's site.
        fp = att.fprop[order]
        shown = att.site[np.where(fp != NONE, fp, order)]
        matrix = np.isin(cat, [CATEGORIES.index(c) for c in ("gemm", "conv", "attention")])
        marked = any(x.marked for x in att.sites)
        # mod, op and tc per distinct (shown site, matrix kernel, Tensor Core verdict).
        keys, kinv = unique_inverse((shown.astype(np.int64) * 2 + matrix) * 3 + (tc.astype(np.int64) + 1))
        per_key = []
        for code in keys.tolist():
            rest, tcv = divmod(code, 3)
            k, mx = divmod(rest, 2)
            st = att.sites[k]
            op = pyprof_op(st.op[0] if st.op else "", bool(mx))
            per_key.append((st.mod[0] if st.mod else "", op, pyprof_tc(op, bool(mx), None if tcv == 0 else tcv == 2, marked, not st.marked)))
        kl = kinv.tolist()
        for c, k in (("mod", 0), ("op", 1), ("tc", 2)):
            vals = [p[k] for p in per_key]
            got[c] = lambda vals=vals: [vals[i] for i in kl]
        if not marked:
            # Without pyprof markers or an autograd sequence number on the chain, the attribution
            # has at most a user annotation: the op that launched the kernel says more.
            launcher = got["op"]
            got["op"] = lambda launcher=launcher: [
                b if b and (not a or a.startswith("ProfilerStep#")) else a for a, b in zip(launcher(), by_pair(3))
            ]
            # pyprof's mod is the Python module of the call; without its markers the nearest
            # equivalent is the nn.Module range around the launching op.
            got["mod"] = lambda plain=got["mod"]: _kineto_mods(t, sel, plain())
    if need & _WORK:
        kf, kb = kernel_work(t)
        kf, kb = kf[sel], kb[sel]
        got["flops"], got["bytes"] = (lambda: nan_none(kf)), (lambda: nan_none(kb))
        if need & _ROOF:
            pk, bw = kernel_peaks(t, g.device[sel].tolist(), by_pair(2), tensor_cores)
            roof = roofline(kf, kb, g.dur[sel].astype(np.float64), pk, bw)
            got["tflops"], got["gbps"] = (lambda: nan_none(roof.tflops)), (lambda: nan_none(roof.gbps))
            got["pct_of_peak"], got["bound"] = (lambda: nan_none(roof.pct_of_peak)), (lambda: list(roof.bound))
    for c in columns:
        if c not in out:
            out[c] = got[c]() if c in got else [None] * n
    return {c: out[c] for c in columns}


def _kineto_mods(t: Trace, sel: np.ndarray, plain: list[Any]) -> list[Any]:
    """`plain` with each kernel at GPU rows `sel` inside an nn.Module range given that module."""
    mods = innermost_modules(t)
    if mods is None:
        return plain
    mid, text = mods
    kop = kernel_op(t, sel)
    m = np.where(kop != NONE, mid[np.maximum(kop, 0)], NONE).tolist()
    return [text[k] if k != NONE else p for k, p in zip(m, plain)]


def _occupancy(g: Any, sel: np.ndarray) -> np.ndarray:
    occ = g.occupancy[sel]
    # Kineto writes 0 when its occupancy query failed while blocks ran: unknown, not zero.
    return np.where(np.isnan(occ) | ((occ == 0) & (g.blocks_per_sm[sel] > 0)), np.nan, occ)


def nan_none(x: np.ndarray) -> list[float | None]:
    """A float column as a list, NaN (unknown) as None."""
    return [None if v != v else v for v in x.tolist()]
