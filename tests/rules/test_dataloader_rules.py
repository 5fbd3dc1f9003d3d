"""The data loader rule (DATA001) on real traces and the CPU fixture, against the TensorBoard profiler
plugin's DataLoader share computed here from the raw JSON."""

from __future__ import annotations

import gzip
import json
import statistics
from typing import Any

import pytest

from tests.conftest import FIXTURES, shared_trace
from tests.rules.trace_json import check_json, findings_of, statuses_of

CODES = "DATA001,COMM001,COMM002,STRAG001,PEAK001"
NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NW4 = "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"


# --- independent computation of the TB plugin's DataLoader share from the raw JSON ----------

def _merge(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _inter(x: list[tuple[float, float]], y: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(max(a, c), min(b, d)) for a, b in x for c, d in y if min(b, d) > max(a, c)]


def _len(iv: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in iv)


def _raw_dataloader_pct(path: str) -> list[float]:
    """Exposed DataLoader % per analysis step: TB plugin overall_parser, written plainly."""
    with gzip.open(path) as fh:
        ev = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#"))
    runtime = [e for e in ev if cat(e) in ("runtime", "cuda_runtime")]
    gpu = [e for e in ev if cat(e) in ("kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset")]
    by_corr: dict[Any, list[dict[str, Any]]] = {}
    for g in gpu:
        by_corr.setdefault(g["args"].get("correlation"), []).append(g)
    windows, prev = [], steps[0][0]
    for lo, hi in steps:
        ends = [g["ts"] + g["dur"] for r in runtime if lo <= r["ts"] and r["ts"] + r["dur"] <= hi
                for g in by_corr.get(r["args"].get("correlation"), [])]
        start = max(prev, lo)
        end = max(hi, max(ends, default=hi), start)
        windows.append((start, end))
        prev = end
    dl = _merge([(e["ts"], e["ts"] + e["dur"]) for e in ev
                 if e["name"].startswith("enumerate(DataLoader)#") and e["name"].endswith(".__next__")])
    busy = _merge([(e["ts"], e["ts"] + e["dur"]) for e in gpu + runtime])
    out = []
    for w in windows[1:-1]:
        inside = _inter(dl, [w])
        out.append(100.0 * (_len(inside) - _len(_inter(inside, busy))) / (w[1] - w[0]))
    return out


def test_dataloader_bound_resnet50_num_workers_0_vs_4(capsys: pytest.CaptureFixture[str]) -> None:
    p0, p4 = shared_trace(NW0), shared_trace(NW4)
    doc = check_json([p0, p4], "DATA001", capsys)
    by_path = {t["path"]: t for t in doc["traces"]}
    (f,) = [f for f in by_path[p0]["findings"] if f["code"] == "DATA001"]
    assert not [f for f in by_path[p4]["findings"] if f["code"] == "DATA001"]
    raw0 = statistics.median(_raw_dataloader_pct(p0))
    raw4 = statistics.median(_raw_dataloader_pct(p4))
    assert f["evidence"]["dataloader_pct"] == pytest.approx(raw0, abs=1e-6)
    assert f["evidence"]["dataloader_pct"] == pytest.approx(33.50, abs=0.01)
    assert f["evidence"]["dataloader_us"] == pytest.approx(59463.0)
    assert f["evidence"]["dataloader_wall_pct"] == pytest.approx(40.94, abs=0.01)
    assert f["severity"] == "warning" and "33.5% of step time" in f["message"]
    # num_workers=4: the loader is hidden (0.0024% exposed, 0.45% of the step inside __next__)
    assert raw4 == pytest.approx(0.0024, abs=1e-4)
    assert statuses_of(doc, "DATA001") == ["failed", "passed"]


def test_dataloader_cpu_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    doc = check_json([str(FIXTURES / "cpu" / "dataloader.pt.trace.json.gz")], CODES, capsys)
    (f,) = findings_of(doc, "DATA001")
    assert f["evidence"]["dataloader_pct"] == pytest.approx(80.72, abs=0.01)
    # CPU-only: the GPU rules are skipped with their reason, never passed
    assert statuses_of(doc, "COMM001") == ["skipped"] and statuses_of(doc, "PEAK001") == ["skipped"]
