"""Text rendering of `perflint summary`, laid out like the TensorBoard plugin's overview page."""

from __future__ import annotations

from typing import Any

from perflint.report._common import fmt_us as _us


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"




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
    for w in t.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)
