"""The run-level straggler rule (STRAG001) on real ranks: scaled copies of a real rank, and a real
rank pair (its synthetic cases are in fixtures/rules/STRAG001/cases.yaml)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import check_json, findings_of, statuses_of

NW0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


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
    doc = check_json([str(run / "rank0.json"), str(run / "rank1.json")], "STRAG001", capsys)
    assert statuses_of(doc, "STRAG001") == ["passed"]
    doc = check_json([str(run)], "STRAG001", capsys)
    (f,) = findings_of(doc, "STRAG001")
    assert f["evidence"]["rank"] == 2 and f["evidence"]["excess_pct"] == pytest.approx(25.0, abs=0.01)


def test_straggler_hta_sampled_rank_pair(capsys: pytest.CaptureFixture[str]) -> None:
    r0 = shared_trace("hta/trace_filter/sampled_rank-0.json.gz")
    r1 = shared_trace("hta/trace_filter/sampled_rank-1.json.gz")
    doc = check_json([r0, r1], "STRAG001", capsys)
    (f,) = findings_of(doc, "STRAG001")
    ev = f["evidence"]
    # equal step times (+0.7%), but rank 1 runs 29% more compute kernel time per step
    assert ev["rank"] == 1 and ev["metric"] == "compute time"
    assert ev["step_median_us"] == pytest.approx(617073.5) and ev["peer_step_median_us"] == pytest.approx(612914.0)  # step windows, the last cut to the recorded events
    assert ev["compute_us"] == pytest.approx(135986.5) and ev["peer_compute_us"] == pytest.approx(105160.0)
    assert ev["excess_pct"] == pytest.approx(29.31, abs=0.01)


def test_straggler_needs_two_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    doc = check_json([shared_trace("hta/trace_filter/sampled_rank-0.json.gz"), shared_trace(NW0)], "STRAG001", capsys)
    (s,) = doc["run_statuses"]
    assert s["status"] == "skipped" and "two ranks" in s["reason"]
