"""Rule pack C: data loader (DATA001), communication (COMM001/COMM002), stragglers (STRAG001),
peak memory (PEAK001) — fixtures for the run-level rule and pins on real traces."""

from __future__ import annotations

import gzip
import importlib.util
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from perflint.cli import main
from tests.conftest import FIXTURES, shared_trace

CODES = "DATA001,COMM001,COMM002,STRAG001,PEAK001"
NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NW4 = "kineto/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"


def _check(paths: list[str], capsys: pytest.CaptureFixture[str], codes: str = CODES) -> dict[str, Any]:
    rc = main(["check", *paths, "--select", codes, "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)  # type: ignore[no-any-return]


def _found(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    fs = [f for t in doc["traces"] for f in t["findings"]] + doc["run_findings"]
    return [f for f in fs if f["code"] == code]


def _status(doc: dict[str, Any], code: str) -> list[str]:
    ss = [s for t in doc["traces"] for s in t["statuses"]] + doc["run_statuses"]
    return [s["status"] for s in ss if s["code"] == code]


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
    doc = _check([p0, p4], capsys, "DATA001")
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
    assert _status(doc, "DATA001") == ["failed", "passed"]


def test_dataloader_cpu_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check([str(FIXTURES / "cpu" / "dataloader.pt.trace.json.gz")], capsys)
    (f,) = _found(doc, "DATA001")
    assert f["evidence"]["dataloader_pct"] == pytest.approx(80.72, abs=0.01)
    # CPU-only: the GPU rules are skipped with their reason, never passed
    assert _status(doc, "COMM001") == ["skipped"] and _status(doc, "PEAK001") == ["skipped"]


def test_comm_mi300_rccl_rank0(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check([shared_trace("tracelens/traces/mi300/resnet_act_checkpoint.json.gz")], capsys, "COMM001,COMM002")
    (c1,) = _found(doc, "COMM001")
    assert not _found(doc, "COMM002")  # exposed communication over 10% is COMM001's finding alone
    ev = c1["evidence"]
    assert ev["collectives"] == "allreduce, broadcast" and ev["comm_kernels"] == 4
    assert ev["comm_pct"] == pytest.approx(83.81, abs=0.01)
    assert ev["comm_exposed_pct"] == pytest.approx(62.55, abs=0.01)
    assert ev["comm_overlap_pct"] == pytest.approx(24.85, abs=0.01)


def test_comm_hta_nccl_rank0(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check([shared_trace("hta/negative_queue_length_values_check/rank0.json.gz")], capsys, "COMM001,COMM002")
    (c1,) = _found(doc, "COMM001")
    ev = c1["evidence"]
    # 80 NCCL kernels in the trace, 45 inside the 3 analysis steps; shares within [0, 100]
    assert ev["comm_kernels"] == 45 and ev["steps"] == 3
    assert ev["comm_pct"] == pytest.approx(16.17, abs=0.01)
    assert 0 <= ev["comm_exposed_pct"] <= ev["comm_pct"] <= 100
    assert ev["comm_overlap_pct"] == pytest.approx(1.34, abs=0.01)
    assert not _found(doc, "COMM002")  # one finding per root cause: COMM001 has it


def test_memory_peak_real_traces() -> None:
    # V100 32 GB, Total Allocated recorded: peak 6.17 GiB = 19.4% (PEAK001 passes)
    from perflint.facts.memory import memory_rows
    from perflint.graph.load import load_trace

    (row,) = memory_rows(load_trace(shared_trace("hta/df_index_resolver/df_index_resolver.json.gz")))
    assert row["exact"] and row["peak_allocated_bytes"] == 6629508096
    assert row["peak_pct"] == pytest.approx(19.45, abs=0.01)
    # old trace without Total Allocated: running-sum lower bound
    (old,) = memory_rows(load_trace(shared_trace(NW0)))
    assert not old["exact"] and old["peak_allocated_bytes"] == 2791636480


# --- stragglers (run-level) ---------------------------------------------------------------

def _strag_module() -> Any:
    spec = importlib.util.spec_from_file_location("fixture_STRAG001", FIXTURES / "rules" / "STRAG001" / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_straggler_fixture_bad_and_good(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _strag_module()
    expected = yaml.safe_load((FIXTURES / "rules" / "STRAG001" / "expected.yaml").read_text())["bad"]
    doc = _check([mod.write_ranks(mod.bad(), tmp_path / "bad")], capsys, "STRAG001")
    found = _found(doc, "STRAG001")
    assert _status(doc, "STRAG001") == ["failed"] and len(found) == len(expected)
    for e, f in zip(expected, found):
        assert e["message_contains"] in f["message"]
        assert all(f["evidence"][k] == pytest.approx(v) if isinstance(v, float) else f["evidence"][k] == v
                   for k, v in e["evidence"].items())
    doc = _check([mod.write_ranks(mod.good(), tmp_path / "good")], capsys, "STRAG001")
    assert _status(doc, "STRAG001") == ["passed"] and not _found(doc, "STRAG001")


def test_no_straggler_from_one_step_per_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _strag_module()
    doc = _check([mod.write_ranks(mod.one_step(), tmp_path / "one")], capsys, "STRAG001")
    assert not _found(doc, "STRAG001")
    assert _status(doc, "STRAG001") == ["passed"]


def test_straggler_scaled_copy_of_real_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two copies of one real rank: identical -> passes; one copy's events stretched 25% -> fires."""
    with gzip.open(shared_trace("hta/trace_filter/sampled_rank-0.json.gz")) as fh:
        doc0 = json.load(fh)
    t0 = min(e["ts"] for e in doc0["traceEvents"] if "ts" in e)
    run = tmp_path / "run"
    run.mkdir()
    for rank, scale in ((0, 1.0), (1, 1.0), (2, 1.25)):
        d = json.loads(json.dumps(doc0))
        d["distributedInfo"] = {**d.get("distributedInfo", {}), "rank": rank, "world_size": 128}
        for e in d["traceEvents"]:
            if "ts" in e:
                e["ts"] = t0 + (e["ts"] - t0) * scale
            if "dur" in e:
                e["dur"] = e["dur"] * scale
        (run / f"rank{rank}.json").write_text(json.dumps(d))
    doc = _check([str(run / "rank0.json"), str(run / "rank1.json")], capsys, "STRAG001")
    assert _status(doc, "STRAG001") == ["passed"]
    doc = _check([str(run)], capsys, "STRAG001")
    (f,) = _found(doc, "STRAG001")
    assert f["evidence"]["rank"] == 2 and f["evidence"]["excess_pct"] == pytest.approx(25.0, abs=0.01)


def test_straggler_hta_sampled_rank_pair(capsys: pytest.CaptureFixture[str]) -> None:
    r0 = shared_trace("hta/trace_filter/sampled_rank-0.json.gz")
    r1 = shared_trace("hta/trace_filter/sampled_rank-1.json.gz")
    doc = _check([r0, r1], capsys, "STRAG001")
    (f,) = _found(doc, "STRAG001")
    ev = f["evidence"]
    # equal step times (+0.7%), but rank 1 runs 29% more compute kernel time per step
    assert ev["rank"] == 1 and ev["metric"] == "compute time"
    assert ev["step_median_us"] == pytest.approx(619271.5) and ev["peer_step_median_us"] == pytest.approx(615120.0)
    assert ev["compute_us"] == pytest.approx(135986.5) and ev["peer_compute_us"] == pytest.approx(105160.0)
    assert ev["excess_pct"] == pytest.approx(29.31, abs=0.01)


def test_straggler_needs_two_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check([shared_trace("hta/trace_filter/sampled_rank-0.json.gz"), shared_trace(NW0)], capsys, "STRAG001")
    (s,) = doc["run_statuses"]
    assert s["status"] == "skipped" and "two ranks" in s["reason"]
