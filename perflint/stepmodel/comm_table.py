"""The per-collective table of a trace: one row per collective type and process group over the
analysis window's collective calls (metrics.collectives), with their count, bytes, kernel time,
algorithm and bus bandwidth, and, where the ranks of the run were checked together and joined
(perflint.stepmodel.join), the part of that time spent waiting for the other ranks and the part
spent transferring.

- bytes: the calls' sizes as nccl-tests counts them (metrics.collectives.message_bytes), from the
  recorded element counts and element type only; `sized` calls have one.
- time_us: the calls' kernel time on this rank: each kernel from its start to its end, summed.
- algbw_gbps = bytes / time over the calls with both; busbw_gbps = the calls' bytes times their
  bus factor (nccl-tests' 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
  all-to-all, 1 for broadcast, reduce and send/recv) over the same time.
- wait_us / transfer_us: over the calls joined with the other ranks, the time from this rank's
  arrival to the last member's (waiting) and the rest of the kernel time (transfer);
  busbw_transfer_gbps is the bus bandwidth over the transfer time alone. Null for a trace checked
  alone: one rank's trace cannot tell its wait from its transfer.
- link_gbps: the device's GPU-to-GPU link peak in one direction (metrics.devices), where the
  part fixes it: the figure a bus bandwidth compares to.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from perflint.metrics.collectives import Collective, bus_factor, collectives, gbps
from perflint.metrics.devices import device_part
from perflint.model import NONE, Trace
from perflint.stepmodel import StepModel, step_model
from perflint.stepmodel.collectives import collective_rows
from perflint.stepmodel.window import step_at

# The row's columns, in the order `perflint comms` prints them.
COLUMNS = (
    "name", "process_group", "group_size", "count", "kernels", "bytes", "sized", "time_us", "algbw_gbps",
    "busbw_gbps", "wait_us", "transfer_us", "joined", "busbw_transfer_gbps", "link", "link_gbps", "dtype",
    "algorithm", "protocol", "process_group_desc",
)  # fmt: skip
ALONE = "wait_us and transfer_us need the other ranks of the run: check their traces together (one directory)"


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def window_calls(m: StepModel) -> list[int]:
    """Indices (into metrics.collectives) of the calls in the analysis window: a call with kernels
    by its first kernel's launch, one without by its record op's start."""
    t, w = m.trace, m.window
    calls = collectives(t)
    if not calls or not w.steps:
        return []
    when = np.asarray([c.cpu_ts for c in calls])
    if not w.has_steps:
        return list(range(len(calls)))
    at = step_at(t, w, when)
    return [int(i) for i in np.flatnonzero(at != NONE)]


def _joined(vals: list[str | None]) -> str | None:
    got = sorted({v for v in vals if v})
    return ", ".join(got) if got else None


def _link(m: StepModel) -> tuple[dict[str, Any] | None, str | None]:
    match = device_part(m.trace.primary_device)
    part = match.part
    if part is None:
        return None, f"the device's link is unknown: {match.reason}"
    if part.link is None:
        return None, f"the device table gives no GPU-to-GPU link peak for the {part.part}: no peak beside the bus bandwidth"
    link = part.link
    return {"kind": link.kind, "gbps": link.gbps, "part": part.part, "source": part.source}, None


def table(m: StepModel) -> tuple[dict[str, Any], dict[int, int]]:
    """The trace's `communication` summary (without waits) and, per call in it, its row; made
    once per step model (the facts and the summary both read it). A copy of the summary: the
    join fills its waits."""
    doc, row_of = m.trace.memo.keyed(_table, m, id(m))
    return {**doc, "collectives": [dict(r) for r in doc["collectives"]], "notes": list(doc["notes"])}, row_of


def _table(m: StepModel, _model_id: int) -> tuple[dict[str, Any], dict[int, int]]:
    calls = collectives(m.trace)
    link, link_note = _link(m)
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i in window_calls(m):
        c = calls[i]
        groups[(c.name, c.process_group)].append(i)
    rows = [_row(name, pg, [calls[i] for i in idx], link) for (name, pg), idx in groups.items()]
    order = sorted(range(len(rows)), key=lambda k: (-(rows[k]["time_us"] or 0.0), -rows[k]["count"], rows[k]["name"]))
    row_of: dict[int, int] = {}
    for new, k in enumerate(order):
        for i in groups[(rows[k]["name"], rows[k]["process_group"])]:
            row_of[i] = new
    rows = [rows[k] for k in order]
    notes = [link_note] if link_note and rows else []
    doc = {
        "collectives": rows,
        "count": sum(r["count"] for r in rows),
        "time_us": _r(sum(r["time_us"] or 0.0 for r in rows)) if any(r["time_us"] is not None for r in rows) else None,
        "wait_us": None,
        "transfer_us": None,
        "link": link,
        "notes": notes + ([ALONE] if rows else []),
    }
    return doc, row_of


def _row(name: str, pg: str | None, calls: list[Collective], link: dict[str, Any] | None) -> dict[str, Any]:
    sizes = [c.nbytes for c in calls if c.nbytes is not None]
    timed = [c for c in calls if c.time_us is not None]
    both = [c for c in timed if c.nbytes is not None]
    both_us = sum(c.time_us or 0.0 for c in both)
    bus = [(c.nbytes or 0) * f for c in both if (f := bus_factor(c.kind, c.group_size)) is not None]
    bus_ok = len(bus) == len(both) and both
    ns = {c.group_size for c in calls}
    descs = {c.pg_desc for c in calls}
    return {
        "name": name,
        "process_group": pg,
        "group_size": next(iter(ns)) if len(ns) == 1 else None,
        "count": len(calls),
        "kernels": len(timed),
        "bytes": sum(sizes) if sizes else None,
        "sized": len(sizes),
        "time_us": _r(sum(c.time_us or 0.0 for c in timed)) if timed else None,
        "algbw_gbps": _r(gbps(sum(c.nbytes or 0 for c in both), both_us)) if both else None,
        "busbw_gbps": _r(gbps(sum(bus), both_us)) if bus_ok else None,
        "wait_us": None,
        "transfer_us": None,
        "joined": None,
        "busbw_transfer_gbps": None,
        "link": link["kind"] if link else None,
        "link_gbps": link["gbps"] if link else None,
        "dtype": _joined([c.dtype for c in calls]),
        "algorithm": _joined([c.algorithm for c in calls]),
        "protocol": _joined([c.protocol for c in calls]),
        "process_group_desc": next(iter(descs)) if len(descs) == 1 else None,
    }


def comms(m: StepModel, on_path: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trace's `communication` summary and its collective rows for the join of ranks; the rows
    carry, per kernel, its call's table row ("table_row", -1 outside the table) and the call's bus
    bytes (its bytes times its bus factor; None unknown), which `add_waits` reads after the join."""
    doc, row_of = table(m)
    rows = collective_rows(m, on_path)
    calls = collectives(m.trace)
    rows["table_row"] = [row_of.get(c, -1) for c in rows["call"]]
    busbytes: list[float | None] = []
    nkern: list[int] = []
    for c in rows["call"]:
        call = calls[c] if c != NONE else None
        f = bus_factor(call.kind, call.group_size) if call else None
        busbytes.append(call.nbytes * f if call and call.nbytes is not None and f is not None else None)
        nkern.append(len(call.kernels) if call else 1)
    rows["busbytes"] = busbytes
    rows["call_kernels"] = nkern
    return doc, rows


def add_waits(doc: dict[str, Any], rows: dict[str, Any], ranks: dict[str, Any] | None = None) -> None:
    """Fill `doc`'s wait and transfer columns from the join's per-kernel waits (`rows["wait"]`,
    set where the ranks were joined); a trace not joined keeps them null. `ranks`: the join's
    result for the trace (step_model.ranks), whose note says why nothing was split."""
    waits = rows.get("wait")
    table_rows = rows.get("table_row")
    if ranks and ranks.get("note") and ALONE in doc.get("notes", []):
        doc["notes"] = [n for n in doc["notes"] if n != ALONE] + [f"wait_us and transfer_us are unknown: {ranks['note']}"]
    if not waits or not table_rows or not doc.get("collectives"):
        return
    per_call: dict[int, list[float]] = {}  # call -> [wait, transfer, kernels joined]
    row_of_call: dict[int, int] = {}
    for w, k, c, s, e in zip(waits, table_rows, rows["call"], rows["start"], rows["end"]):
        if w is None or k < 0:
            continue
        got = per_call.setdefault(c, [0.0, 0.0, 0.0])
        got[0] += w
        got[1] += max(0.0, (e - s) - w)
        got[2] += 1
        row_of_call[c] = k
    if not per_call:
        return
    whole = {c: (b, n) for c, b, n in zip(rows["call"], rows["busbytes"], rows["call_kernels"])}
    out = doc["collectives"]
    acc: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])  # wait, transfer, joined, bus bytes, bus time
    for c, (w, tr, n) in per_call.items():
        a = acc[row_of_call[c]]
        a[0] += w
        a[1] += tr
        a[2] += 1
        b, kernels = whole[c]
        if b is not None and n == kernels:  # every kernel of the call joined: its transfer time is whole
            a[3] += b
            a[4] += tr
    for k, (w, tr, n, b, bt) in acc.items():
        out[k].update(
            wait_us=_r(w), transfer_us=_r(tr), joined=int(n), busbw_transfer_gbps=_r(gbps(b, bt)) if bt > 0 and b > 0 else None
        )
    doc["wait_us"] = _r(sum(a[0] for a in acc.values()))
    doc["transfer_us"] = _r(sum(a[1] for a in acc.values()))
    doc["notes"] = [n for n in doc["notes"] if n != ALONE]


def trace_table(t: Trace, include_edge_steps: bool = False) -> dict[str, Any]:
    """One trace's `communication` table, alone (no other rank to join: no waits)."""
    return comms(step_model(t, include_edge_steps), on_path=False)[0]


def join_tables(results: list[dict[str, Any]]) -> None:
    """Join the ranks of each run among per-trace results (dicts with "path", "rank",
    "communication", the collective rows under "_collectives", which are taken out, and
    optionally their "step_model" summary, which the join completes) and fill the tables' waits."""
    from perflint.stepmodel.join import RankEntry, join_ranks

    entries = [RankEntry(d["path"], d["rank"], d.pop("_collectives", {}), d.get("step_model", {})) for d in results]
    join_ranks(entries)
    for d, e in zip(results, entries):
        add_waits(d["communication"], e.collectives, e.step_model.get("ranks"))


__all__ = ["ALONE", "COLUMNS", "add_waits", "comms", "join_tables", "table", "trace_table", "window_calls"]
