"""Text rendering of `perflint summary`, laid out like the TensorBoard plugin's overview page.

With `--timeline`, each device's GPU-utilization and SM-efficiency series is one sparkline line
(at most SPARK_WIDTH characters, each the time-weighted mean of its slice of the profiled range;
the JSON output carries every bucket)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perflint.report._common import fmt_us as _us
from perflint.report.text_table import cut_column
from perflint.units import fmt_size

SPARK_WIDTH = 60
KERNEL_VIEW_ROWS = 5  # kernel view rows in the text; the JSON carries every kernel name
INDUCTOR_ROWS = 3  # kernels per Inductor category in the text
_BARS = " ▁▂▃▄▅▆▇█"  # 0, then eighths up to a full bar


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"




def sparkline(values: list[float]) -> str:
    """Fractions in [0, 1] as bar characters (0: a blank, anything above 0 at least the lowest bar)."""
    v = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0)
    idx = np.where(v > 0, np.maximum(1, np.rint(v * 8)), 0).astype(int)
    return "".join(_BARS[i] for i in idx.tolist())


def _binned(starts: np.ndarray, ends: np.ndarray, vals: np.ndarray, edges: np.ndarray) -> list[float]:
    """Time-weighted mean of piecewise-constant `vals` over the slices between `edges`."""
    # overlap of every segment with every slice: segments and slices are few (buckets, <= 60)
    ov = np.clip(np.minimum(ends[None, :], edges[1:, None]) - np.maximum(starts[None, :], edges[:-1, None]), 0.0, None)
    width = np.diff(edges)
    shares: list[float] = ((ov * vals[None, :]).sum(axis=1) / np.where(width > 0, width, 1.0)).tolist()
    return shares


def _timeline(tl: dict[str, Any]) -> list[str]:
    rng = tl.get("range_us")
    if not rng or not tl.get("devices"):
        return ["Timeline        no GPU kernels in the profiled range"]
    lo, hi = float(rng[0]), float(rng[1])
    bucket = float(tl.get("bucket_us") or (hi - lo) or 1.0)
    buckets = max(1, math.ceil((hi - lo) / bucket - 1e-9))
    if buckets <= SPARK_WIDTH:  # a character is a bucket; the last one may be shorter
        edges = np.minimum(lo + bucket * np.arange(buckets + 1), hi)
        edges[-1] = hi
        last = hi - float(edges[-2])
        tail = f" (the last {_us(last)})" if last < 0.999 * bucket else ""
        lines = [f"Timeline        {_us(hi - lo)}; one character = one {_us(bucket)} bucket{tail}"]
    else:  # too many buckets for a line: a character is an equal share of the range
        edges = np.linspace(lo, hi, SPARK_WIDTH + 1)
        lines = [f"Timeline        {_us(hi - lo)}; one character = {_us((hi - lo) / SPARK_WIDTH)}"]
    for dev, series in sorted(tl["devices"].items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0):
        util = np.asarray(series.get("utilization") or [], dtype=np.float64).reshape(-1, 2)
        if len(util):
            starts = util[:, 0]
            ends = np.append(starts[1:], hi)
            vals = _binned(starts, ends, util[:, 1], edges)
            lines.append(f"  GPU {dev} utilization    |{sparkline(vals)}| mean {100 * float(np.mean(vals)):.1f}%")
        sm = np.asarray(series.get("sm_efficiency") or [], dtype=np.float64).reshape(-1, 3)
        if len(sm):
            vals = _binned(sm[:, 0], sm[:, 1], sm[:, 2], edges)
            lines.append(f"  GPU {dev} SM efficiency  |{sparkline(vals)}|")
    return lines


NAME_WIDTH = 60  # kernel names in the text; cut in the middle, kept apart (report.text_table)


def _opt(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _kernel_view(rows: list[dict[str, Any]]) -> list[str]:
    """The TensorBoard plugin's kernel view, its first rows (most total time first)."""
    if not rows:
        return []
    more = f" (top {KERNEL_VIEW_ROWS} of {len(rows)})" if len(rows) > KERNEL_VIEW_ROWS else ""
    out = [f"Kernel view{more}:", f"  {'TC':>3} {'calls':>6} {'total':>10} {'mean':>10} {'max':>10} {'min':>10} {'blk/SM':>7} {'occ%':>6}  kernel"]
    shown = rows[:KERNEL_VIEW_ROWS]
    for r, name in zip(shown, cut_column([r["name"] for r in shown], NAME_WIDTH)):
        tc = "-" if r["tensor_cores"] is None else ("yes" if r["tensor_cores"] else "no")
        out.append(
            f"  {tc:>3} {r['calls']:>6} {_us(r['total_us']):>10} {_us(r['mean_us']):>10} {_us(r['max_us']):>10} "
            f"{_us(r['min_us']):>10} {_opt(r['blocks_per_sm']):>7} {_opt(r['occupancy_pct'], 1):>6}  {name}"
        )
    return out


def _inductor(v: dict[str, Any] | None) -> list[str]:
    if v is None:
        return []
    out = [f"Inductor view   GPU busy {_pct(v['busy_pct'])} of the kernel span; kernel time {_us(v['kernel_time_us'])}"]
    for cat, c in v["categories"].items():
        if not c["count"]:
            continue
        out.append(f"  {cat:<22} {c['count']:>6} {_us(c['time_us']):>10} {c['pct']:6.1f}%")
        ks = c["kernels"][:INDUCTOR_ROWS]
        for k, name in zip(ks, cut_column([k["name"] for k in ks], NAME_WIDTH)):
            out.append(f"    {k['count']:>6} {_us(k['time_us']):>10} {k['pct']:6.1f}%  {name}")
    return out


def _memory(m: dict[str, Any] | None) -> list[str]:
    if m is None:
        return []
    out = []
    for d in m["devices"]:
        cap = f" of {fmt_size(d['device_memory_bytes'])} ({_pct(d['peak_pct'])})" if d["device_memory_bytes"] else ""
        bound = "" if d["exact"] else " (lower bound: no allocator totals recorded)"
        res = f", reserved {fmt_size(d['peak_reserved_bytes'])}" if d["peak_reserved_bytes"] is not None else ""
        out.append(f"Peak memory     GPU {d['device_id']}: allocated {fmt_size(d['peak_allocated_bytes'])}{cap}{res}{bound}")
    return out


# The step phases a format records (MindSpore's step trace), in its words.
_PHASES = {"iteration_interval_us": "iteration interval", "fp_bp_us": "FP+BP", "tail_us": "tail"}

COMM_ROWS = 8  # collective rows in the text; the JSON carries every one


def _gbps(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _communication(c: dict[str, Any] | None) -> list[str]:
    """The per-collective table (perflint.stepmodel.comm_table): its first rows, most time first."""
    if not c or not c["collectives"]:
        return []
    rows = c["collectives"]
    split = f"; waiting {_us(c['wait_us'])}, transferring {_us(c['transfer_us'])}" if c["wait_us"] is not None else ""
    time = f", {_us(c['time_us'])} of kernel time" if c["time_us"] is not None else ""
    more = f" (top {COMM_ROWS} of {len(rows)} rows)" if len(rows) > COMM_ROWS else ""
    out = [f"Communication   {c['count']} collective call(s){time}{split}{more}"]
    out.append(
        f"  {'collective':<16} {'group':<10} {'n':>4} {'calls':>6} {'bytes':>9} {'time':>10} {'algbw':>7} {'busbw':>7} "
        f"{'wait':>10} {'transfer':>10}  (GB/s)"
    )
    for r in rows[:COMM_ROWS]:
        size = fmt_size(r["bytes"]) if r["bytes"] is not None else "-"
        time_us = _us(r["time_us"]) if r["time_us"] is not None else "-"
        wait = _us(r["wait_us"]) if r["wait_us"] is not None else "-"
        transfer = _us(r["transfer_us"]) if r["transfer_us"] is not None else "-"
        group = cut_column([str(r["process_group"] or "-")], 10)[0]
        out.append(
            f"  {r['name'][:16]:<16} {group:<10} {r['group_size'] or '-':>4} {r['count']:>6} {size:>9} {time_us:>10} "
            f"{_gbps(r['algbw_gbps']):>7} {_gbps(r['busbw_gbps']):>7} {wait:>10} {transfer:>10}"
        )
    link = c.get("link")
    if link:
        out.append(f"  link peak: {link['kind']} {link['gbps']:.0f} GB/s per direction ({link['part']}; {link['source']})")
    out += [f"  note: {n}" for n in c.get("notes") or []]
    return out


def render_summary(t: dict[str, Any]) -> str:
    dev = t["device"]
    lines = [f"== {t['path']}" + (f" [rank {t['rank']}]" if t["rank"] is not None else "")]
    no_gpu = not t["kernels"]["count"] and not dev["name"]
    dev_bits = ["none (CPU-only trace)" if no_gpu else dev["name"] or "unnamed device (no deviceProperties name)"]
    if dev["sm_count"]:
        dev_bits.append(f"{dev['sm_count']} SMs")
    if dev["compute_capability"]:
        dev_bits.append(f"sm_{dev['compute_capability'].replace('.', '')}")
    lines.append(f"Device          {', '.join(dev_bits)}")
    st = t["steps"]
    window = (t.get("step_model") or {}).get("window") or {}
    if st["count"] or window.get("kind") != "whole":
        note = " (first and last excluded)" if st["excluded_edges"] else ""
        lines.append(f"Steps           {st['count']}{note}, median {_us(st['median_us'])}")
        if st.get("phases"):
            ph = st["phases"]
            lines.append("Step phases     mean " + " · ".join(f"{label} {_us(ph[k])}" for k, label in _PHASES.items() if k in ph))
    else:
        lines.append(f"Window          {_us(window.get('us'))}: {window.get('source')}")
    sm = t.get("step_model") or {}
    bound = sm.get("bound_by") or []
    if bound:
        err = sm.get("replay_error_pct")
        replayed = f" (replayed within {err:.1f}%)" if err is not None else ""
        parts = [f"{b['label']} {b['pct']:.0f}%" for b in bound[:6] if b["pct"] >= 0.5]
        lines.append(f"Bound by        {' · '.join(parts)}{replayed}")
    rk = sm.get("ranks")
    if rk:
        lines.append(f"Ranks           {ranks_line(rk)}")
    wi = sm.get("what_if_all")
    if wi and wi.get("what_ifs"):
        lines.append(
            f"If all fixed    ~{_us(wi['predicted_step_us'])} per {wi['per']} ({-wi['saving_pct']:+.0f}%, "
            f"{len(wi['what_ifs'])} finding(s) replayed together)"
        )
    g, tp = t["gpu"], t["temporal"]
    lines.append(
        f"GPU             utilization {_pct(g['utilization_pct'])}, est. SM efficiency "
        f"{_pct(g['sm_efficiency_pct'])}, est. achieved occupancy {_pct(g['achieved_occupancy_pct'])}"
    )
    lines.append(
        f"Time breakdown  idle {_pct(tp['idle_pct'])}, compute {_pct(tp['compute_pct'])}, "
        f"non-compute {_pct(tp['non_compute_pct'])}"
    )
    tc = t["tensor_cores"]
    lines.append(f"Tensor Cores    {_pct(tc['kernel_time_pct'])} of kernel time")
    k = t["kernels"]
    cats = sorted(
        ((c, v) for c, v in k["by_category"].items() if v["time_us"] > 0), key=lambda cv: -cv[1]["time_us"]
    )
    if cats:
        lines.append("Kernel time by category:")
        for c, v in cats:
            lines.append(f"  {c:<28} {_us(v['time_us']):>12} {v['pct']:6.1f}%")
    if k["top"]:
        lines.append("Top kernels:")
        lines.append(f"  {'total':>10} {'count':>6} {'mean':>10}  kernel  [top-level op]")
        for row, name in zip(k["top"], cut_column([r["name"] for r in k["top"]], NAME_WIDTH)):
            op = f"  [{row['top_level_op']}]" if row["top_level_op"] else ""
            lines.append(
                f"  {_us(row['total_us']):>10} {row['count']:>6} {_us(row['mean_us']):>10}  {name}{op}"
            )
    lines += _communication(t.get("communication"))
    lines += _kernel_view(t.get("kernel_view") or [])
    lines += _inductor(t.get("inductor"))
    lines += _memory(t.get("memory"))
    if t.get("timeline") is not None:
        lines += _timeline(t["timeline"])
    for w in t.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def ranks_line(rk: dict[str, Any]) -> str:
    """The run-level join of this rank with the others checked with it (perflint.stepmodel.join)."""
    with_ = "joined with ranks " + ", ".join(str(r) for r in rk["ranks"])
    if rk.get("note"):
        return f"{with_}: {rk['matched']} collective(s) matched, {rk['note']}"
    who = ", ".join(f"rank {w['rank']} {_us(w['us'])}" for w in rk["waited_for"][:3])
    waits = (
        f"waited {_us(rk['wait_us'])} in the median step for the last rank to arrive ({who}), "
        f"{_us(rk['on_path_wait_us'])} of it on the critical path"
        if who
        else "arrived last or with the others: no wait"
    )
    return f"{with_} at {rk['joined']} of {rk['matched']} collective(s); {waits}"
