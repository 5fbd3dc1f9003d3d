"""One step model per trace: on every real trace of the corpus and every recorded fixture, the
numbers `perflint summary` shows are the ones the rules read (the `trace`, `steps` and
`launch_summary` rows) and the ones a snapshot stores for the regression rules."""

from __future__ import annotations

import os

import numpy as np
import pytest

from perflint.baseline.snapshot import trace_snapshot
from perflint.facts import Context, rows
from perflint.facts.builtin import load_all
from perflint.graph.load import load_traces
from perflint.metrics.stats import np_median
from perflint.readers import discover
from perflint.trace_summary import summarize
from tests.conftest import FIXTURES, TRACES


def _paths() -> list[str]:
    roots = [str(FIXTURES / "gpu"), str(FIXTURES / "cpu")]
    if TRACES.exists():
        roots.append(str(TRACES))
    elif os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
        raise RuntimeError(f"shared trace corpus missing: {TRACES}")
    return discover(roots)[0]


PATHS = _paths()


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-3 + 1e-9 * abs(b)  # the summary rounds to 3 decimals


@pytest.mark.parametrize("path", PATHS, ids=lambda p: os.path.relpath(p, str(FIXTURES.parent.parent)))
def test_summary_rules_and_snapshot_read_one_model(path: str) -> None:
    load_all()
    for trace in load_traces(path):
        ctx = Context(trace)
        summ = summarize(trace)
        (row,) = rows(ctx, "trace")
        snap = trace_snapshot(ctx)
        busy = summ["gpu"]["utilization_pct"]
        # GPU busy %: the summary, the trace row (UTIL rules) and the launch facts.
        assert _close(busy, row["gpu_utilization_pct"]), trace.label
        assert _close(busy, row["step_busy_pct"]), trace.label
        for r in rows(ctx, "launch_summary"):
            assert _close(busy, r["gpu_busy_pct"]), trace.label
        # Idle and busy never add up past the window.
        temporal = summ["temporal"]
        if busy is not None:
            assert busy + temporal["idle_pct"] <= 100.0 + 1e-6, trace.label
            assert abs(temporal["idle_pct"] + temporal["compute_pct"] + temporal["non_compute_pct"] - 100.0) < 0.01, trace.label
        # Steps: their windows, median and count.
        window = summ["step_model"]["window"]
        steps = rows(ctx, "steps")
        assert [s["us"] for s in window["steps"]] == [round(r["window_us"], 3) for r in steps if not r["whole_trace"]], trace.label
        assert _close(summ["steps"]["median_us"], row["step_median_us"]), trace.label
        samples = snap["samples"]
        if window["kind"] == "steps":
            # Step time covers every step marker; op-level numbers the steps the op events cover.
            assert summ["steps"]["count"] == len(samples["step_time_us"]) == row["timed_steps"], trace.label
            assert len(window["steps"]) == len(steps) == row["steps"] == len(snap["steps"]), trace.label
            assert _close(summ["steps"]["median_us"], float(np_median(samples["step_time_us"]))), trace.label
            # Per-step busy: the snapshot's samples (REG002) are the steps rows' (UTIL rules).
            assert samples["gpu_busy_pct"] == [r["gpu_busy_pct"] or 0.0 for r in steps], trace.label
            if row["step_busy_median_pct"] is not None:
                assert _close(row["step_busy_median_pct"], float(np.median([r["gpu_busy_pct"] for r in steps]))), trace.label
            # Time per kernel category: the summary's step-model split is the snapshot's.
            for cat, v in summ["step_model"]["categories"].items():
                assert _close(v["time_us"], round(sum(samples[f"category.{cat}"]), 3)), (trace.label, cat)
        else:
            assert samples["step_time_us"] == [] and summ["steps"]["count"] == 0, trace.label


def test_clean_bf16_snapshot_sees_the_busy_gpu() -> None:
    """The GPU of clean_bf16 never idles: its steps' busy % is what the summary says (96-97%), not
    the 48-76% that timing the steps from their CPU starts gave."""
    load_all()
    (trace,) = load_traces(str(FIXTURES / "gpu" / "clean_bf16.pt.trace.json.gz"))
    snap = trace_snapshot(Context(trace))
    assert all(95.0 < b < 100.0 for b in snap["samples"]["gpu_busy_pct"])
    assert 95.0 < summarize(trace)["gpu"]["utilization_pct"] < 100.0
