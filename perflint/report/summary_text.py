"""Text rendering of `perflint summary`, laid out like the TensorBoard plugin's overview page.

With `--timeline`, each device's GPU-utilization and SM-efficiency series is one sparkline line
(at most SPARK_WIDTH characters, each the time-weighted mean of its slice of the profiled range;
the JSON output carries every bucket)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.report._common import fmt_us as _us

SPARK_WIDTH = 60
_BARS = " ▁▂▃▄▅▆▇█"  # 0, then eighths up to a full bar


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"




def sparkline(values: list[float]) -> str:
    """Fractions in [0, 1] as bar characters (0: a blank, anything above 0 at least the lowest bar)."""
    v = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0)
    idx = np.where(v > 0, np.maximum(1, np.rint(v * 8)), 0).astype(int)
    return "".join(_BARS[i] for i in idx.tolist())


def _binned(starts: np.ndarray, ends: np.ndarray, vals: np.ndarray, lo: float, hi: float, n: int) -> list[float]:
    """Time-weighted mean of piecewise-constant `vals` over `n` equal slices of [lo, hi]."""
    edges = np.linspace(lo, hi, n + 1)
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
    n = max(1, min(SPARK_WIDTH, round((hi - lo) / bucket)))  # a character is a bucket, or several
    lines = [f"Timeline        {_us(hi - lo)} in buckets of {_us(bucket)}; one character = {_us((hi - lo) / n)}"]
    for dev, series in sorted(tl["devices"].items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0):
        util = np.asarray(series.get("utilization") or [], dtype=np.float64).reshape(-1, 2)
        if len(util):
            starts = util[:, 0]
            ends = np.append(starts[1:], hi)
            vals = _binned(starts, ends, util[:, 1], lo, hi, n)
            lines.append(f"  GPU {dev} utilization    |{sparkline(vals)}| mean {100 * float(np.mean(vals)):.1f}%")
        sm = np.asarray(series.get("sm_efficiency") or [], dtype=np.float64).reshape(-1, 3)
        if len(sm):
            vals = _binned(sm[:, 0], sm[:, 1], sm[:, 2], lo, hi, n)
            lines.append(f"  GPU {dev} SM efficiency  |{sparkline(vals)}|")
    return lines


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


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
    note = " (first and last excluded)" if st["excluded_edges"] else ""
    lines.append(f"Steps           {st['count']}{note}, median {_us(st['median_us'])}")
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
        for row in k["top"]:
            op = f"  [{row['top_level_op']}]" if row["top_level_op"] else ""
            lines.append(
                f"  {_us(row['total_us']):>10} {row['count']:>6} {_us(row['mean_us']):>10}  {_short(row['name'], 60)}{op}"
            )
    if t.get("timeline") is not None:
        lines += _timeline(t["timeline"])
    for w in t.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)
