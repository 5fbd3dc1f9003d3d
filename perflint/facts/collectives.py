"""`collectives`: the trace's collective table (perflint.stepmodel.comm_table), one row per
collective type and process group over the analysis window, with the numbers advice rests on.

A bus bandwidth is bytes moved per second of kernel time, scaled by NCCL's bus factor so that it
compares with the link's peak in one direction. On one rank's trace the kernel time also holds
any wait for the other ranks to arrive, so a low bus bandwidth may be waiting, not a slow link:
checked with its run, COMM003 and the split of COMM001 say which.
"""

from __future__ import annotations

from typing import Any

from perflint.facts import Context, Fields, Row, fact, typed
from perflint.facts._common import model
from perflint.stepmodel.comm_table import table
from perflint.units import fmt_duration, fmt_size

FIELDS: Fields = {
    "name": typed("collective type (all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast, ...)", "text"),
    "process_group": typed("process group name as recorded; null where not recorded", "text"),
    "group_size": typed("ranks in the process group, where recorded", "integer"),
    "count": typed("calls in the analysis window", "integer"),
    "steps": typed("analysis steps (1 for a trace without steps: the whole window)", "integer"),
    "calls_per_step": typed("calls per analysis step", "number"),
    "bytes_per_step": typed("bytes per analysis step, as nccl-tests counts a call's size (null where no call's size is recorded)", "number", "bytes"),
    "mean_bytes": typed("mean size of the sized calls", "number", "bytes"),
    "time_us": "the calls' kernel time in the window",
    "time_per_step_us": "the calls' kernel time per analysis step",
    "step_us": "the median analysis step's time (the whole window without steps)",
    "time_pct": "time_per_step_us / step_us, %",
    "busbw_gbps": typed("bus bandwidth over the calls' kernel time (nccl-tests' bus factor), GB/s", "number", "GB/s"),
    "link": typed("the device's GPU-to-GPU link where its part fixes it (NVLink, PCIe), else null", "text"),
    "link_gbps": typed("that link's peak in one direction, GB/s", "number", "GB/s"),
    "busbw_of_link_pct": "busbw_gbps / link_gbps, %",
    "algorithm": typed("NCCL algorithms the kernel names give (RING, TREE, NVLS, ...), comma-separated", "text"),
    "protocol": typed("NCCL protocols the kernel names give (LL, LL128, SIMPLE), comma-separated", "text"),
}


@fact("collectives", key=("name", "process_group"), fields=FIELDS)
def collective_table(ctx: Context) -> list[Row]:
    """One row per collective type and process group of the trace's collective table, most
    kernel time first."""
    m = model(ctx)
    doc, _ = table(m)
    steps = max(1, len(m.steps))
    step_us = m.median_step_us or m.window_us
    out: list[Row] = []
    for r in doc["collectives"]:
        per_step = r["time_us"] / steps if r["time_us"] is not None else None
        busbw, link = r["busbw_gbps"], r["link_gbps"]
        out.append({
            "name": r["name"], "process_group": r["process_group"], "group_size": r["group_size"], "count": r["count"],
            "steps": steps, "calls_per_step": r["count"] / steps,
            "bytes_per_step": r["bytes"] / steps if r["bytes"] is not None else None,
            "mean_bytes": r["bytes"] / r["sized"] if r["bytes"] is not None and r["sized"] else None,
            "time_us": r["time_us"], "time_per_step_us": per_step, "step_us": step_us,
            "time_pct": 100.0 * per_step / step_us if per_step is not None and step_us else None,
            "busbw_gbps": busbw, "link": r["link"], "link_gbps": link,
            "busbw_of_link_pct": 100.0 * busbw / link if busbw is not None and link else None,
            "algorithm": r["algorithm"], "protocol": r["protocol"],
        })  # fmt: skip
    return out


def collective_evidence(rows: list[Row]) -> str | None:
    """The numbers behind communication advice, in words: the collective with the most kernel
    time, its calls, bytes and time per step, and its bus bandwidth beside the link's peak."""
    if not rows:
        return None
    r = rows[0]
    group = f" in process group {r['process_group']}" if r["process_group"] else ""
    n = f" of {r['group_size']} ranks" if r["group_size"] else ""
    parts = [f"{r['calls_per_step']:.3g} call(s)"]
    if r["bytes_per_step"] is not None:
        parts.append(fmt_size(r["bytes_per_step"]))
    if r["time_per_step_us"] is not None:
        parts.append(f"{fmt_duration(r['time_per_step_us'])} of kernel time")
    text = f"Most of it is {r['name']}{group}{n}: {', '.join(parts)} per step"
    if r["busbw_gbps"] is not None:
        text += f", at {_gbps(r['busbw_gbps'])} bus bandwidth over its kernel time (which holds any wait for the other ranks)"
        if r["link_gbps"]:
            text += f" against the {r['link']} peak of {_gbps(r['link_gbps'])} per direction"
    return text + "."


def _gbps(x: Any) -> str:
    return f"{float(x):.3g} GB/s"
