"""What the HTML report shows of one trace (its panels), gathered where the trace is (a worker
process) into a small typed dict: aggregates per kernel name, op name, step and time bucket, never
per event. The report draws these and never reads a trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from perflint.facts import Context
from perflint.findings import TraceResult
from perflint.metrics.step_breakdown import step_breakdown
from perflint.metrics.tb_gpu import utilization_series
from perflint.model import Trace
from perflint.stepmodel import step_model
from perflint.trace_summary import summarize

TOP_OPS = 15
MAX_STEPS = 400  # per-step series beyond this are thinned evenly (the table says so)


class TracePanels(TypedDict):
    """One trace's panels. The nested dicts are the summary's sections (trace_summary) or built
    below; each carries only numbers, names and short lists."""

    path: str
    rank: int | None
    device: dict[str, Any]
    gpu: dict[str, Any]
    tensor_cores: dict[str, Any]
    kernels: dict[str, Any]
    kernel_view: dict[str, Any] | None  # `perflint summary` only
    steps: dict[str, Any]  # numbers, durs_us (thinned to MAX_STEPS), window
    step_model: dict[str, Any] | None
    breakdown: dict[str, Any] | None
    breakdown_why: str | None
    timeline: dict[str, Any] | None
    ops: list[dict[str, Any]]
    roofline: dict[str, Any]
    baseline: dict[str, Any] | None
    warnings: list[str]


def top_ops(trace: Trace, limit: int = TOP_OPS) -> list[dict[str, Any]]:
    """The `limit` CPU op names with the most device self time (the GPU work launched directly
    inside them, the TB plugin's "device self time"), then host time: calls, host time (inclusive,
    summed) and device self time, from the op table (perflint.listings.op_rows)."""
    from perflint.listings import op_rows

    rows = [r for r in op_rows(trace) if r["kind"] == "cpu_op"]
    rows.sort(key=lambda r: (-r["device_self_us"], -r["host_total_us"], r["name"]))
    return [
        {"name": r["name"], "calls": int(r["calls"]), "host_us": round(float(r["host_total_us"]), 3),
         "device_self_us": round(float(r["device_self_us"]), 3)}
        for r in rows[:limit]
    ]  # fmt: skip


ROOFLINE_OPS = 15  # op groups in the roofline chart and its table


def roofline(trace: Trace, limit: int = ROOFLINE_OPS) -> dict[str, Any]:
    """The roofline of the op groups with the most device time whose FLOPs and bytes are known
    (`perflint ops`' numbers), against the device's roofs; `why` when there is nothing to draw."""
    from perflint.metrics.devices import device_part
    from perflint.op_view import op_view

    match = device_part(trace.primary_device)
    part = match.part
    if part is None or not part.bandwidth_gbps:
        return {"why": f"no peak table entry for the device: {match.reason}"}
    rows = [r for r in op_view(trace) if r["flops"] and r["bytes"] and r["device_total_us"] > 0 and r["bound"]]
    if not rows:
        return {"why": "no op with known FLOPs and bytes launched GPU work (the FLOP models need the ops' input shapes)"}
    rows.sort(key=lambda r: -r["device_total_us"])
    roofs = [(label, pk) for label, pk in (("Tensor Core bf16/fp16", part.peak("bf16", True)), ("fp32 vector", part.peak("fp32", False))) if pk]
    points = [
        {"name": r["name"], "intensity": r["flops"] / r["bytes"], "tflops": r["tflops"], "device_us": r["device_total_us"],
         "pct_of_peak": r["pct_of_peak"], "bound": r["bound"]}
        for r in rows[:limit]
    ]  # fmt: skip
    return {"device": part.part, "bandwidth_gbps": part.bandwidth_gbps, "roofs": roofs, "points": points, "source": part.source}


def thin(n: int, limit: int = MAX_STEPS) -> list[int]:
    """Indices of at most `limit` of n items, evenly spread, first and last kept."""
    if n <= limit:
        return list(range(n))
    return sorted({int(round(i * (n - 1) / (limit - 1))) for i in range(limit)})


def _timeline(trace: Trace) -> dict[str, Any] | None:
    series = utilization_series(trace)
    if series is None:
        return None
    return {
        "bucket_us": series.bucket_us,
        "start_us": series.start,
        "end_us": series.end,
        "devices": {str(d): [round(float(x), 4) for x in u.tolist()] for d, u in series.by_device.items()},
    }


def _baseline(ctx: Context) -> dict[str, Any] | None:
    """Baseline samples beside the current ones and the regression statistics, when check ran
    with a baseline."""
    from perflint.baseline.trace_baseline import TraceBaseline

    if not isinstance(ctx.baseline, TraceBaseline):
        return None
    from perflint.baseline.snapshot import current_snapshot

    return comparison(ctx.baseline.snapshot, current_snapshot(ctx))


def comparison(base: dict[str, Any], cur: dict[str, Any], rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per-step samples of both sides and the compare() rows (given, or computed here): what the
    before/after panel draws."""
    from perflint.baseline.compare import compare

    keep = ("step_time_us", "gpu_busy_pct")
    return {
        "base": base.get("path"),
        "samples": {k: {"base": base["samples"].get(k, []), "current": cur["samples"].get(k, [])} for k in keep},
        "rows": compare(base, cur) if rows is None else rows,
    }


def panels(ctx: Context, summary: dict[str, Any] | None = None) -> TracePanels:
    """Everything the report draws for the context's trace; `summary`: its `summarize` dict when
    already made."""
    trace, include_edge_steps = ctx.trace, ctx.include_edge_steps
    summ = summary if summary is not None else summarize(trace, include_edge_steps=include_edge_steps)
    known = (summ.get("steps") or {}).get("breakdown")  # `perflint summary` has made it already
    breakdown, why = (known, None) if known is not None else step_breakdown(trace)
    if breakdown is not None:
        breakdown = {**breakdown, "steps": [breakdown["steps"][i] for i in thin(len(breakdown["steps"]))],
                     "all_steps": len(breakdown["steps"])}
    model = step_model(trace, include_edge_steps)
    steps = model.steps if model.window.has_steps else ()
    return {
        "path": trace.path,
        "rank": trace.rank,
        "device": summ["device"],
        "gpu": summ["gpu"],
        "tensor_cores": summ["tensor_cores"],
        "kernels": summ["kernels"],
        "kernel_view": summ.get("kernel_view"),  # `perflint summary` only
        "steps": {"numbers": [s.number for s in steps], "durs_us": [round(s.us, 3) for s in steps],
                  "window": model.window.describe()},
        "step_model": summ.get("step_model"),
        "breakdown": breakdown,
        "breakdown_why": why,
        "timeline": _timeline(trace),
        "ops": top_ops(trace),
        "roofline": roofline(trace),
        "baseline": _baseline(ctx),
        "warnings": list(summ.get("warnings") or trace.warnings),
    }


def add_panels(ctx: Context, result: TraceResult) -> None:
    """Gathers the report's panels onto a check's per-trace result (a module function: it travels
    to worker processes)."""
    made = {"device": result.device, **result.metrics, "warnings": result.warnings}  # summarize's, reused
    result.panels = dict(panels(ctx, made))


@dataclass(frozen=True)
class SummaryWithPanels:
    """`perflint summary`'s per-trace function that also gathers the panels (under `_html`)."""

    fn: Any
    include_edge_steps: bool

    def __call__(self, trace: Trace) -> Any:
        out = self.fn(trace)
        out["_html"] = panels(Context(trace, self.include_edge_steps), out)
        return out
