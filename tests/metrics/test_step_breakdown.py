"""The step-time breakdown (metrics.step_breakdown) against the TensorBoard profiler plugin's own
numbers and on synthetic traces whose answer is known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.graph.load import load_trace
from perflint.metrics.step_breakdown import PARTS, step_breakdown
from tests.builder import TraceBuilder
from tests.conftest import TESTS, shared_trace

REFERENCE = json.loads((TESTS / "reference" / "tb_plugin_step_breakdown.json").read_text())


@pytest.mark.parametrize("name", sorted(REFERENCE["traces"]))
def test_agrees_with_the_tb_plugin(name: str) -> None:
    ref = REFERENCE["traces"][name]
    path = next(Path(shared_trace(ref["path"])).glob("*.json.gz"))
    got, why = step_breakdown(load_trace(str(path)))
    assert why is None and got is not None
    assert [str(s["step"]) for s in got["steps"]] == [s["name"] for s in ref["steps"]]
    assert got["average"]["total_us"] == pytest.approx(ref["average"]["total_us"], rel=1e-6)
    for mine, theirs in zip(got["steps"], ref["steps"]):
        assert mine["total_us"] == pytest.approx(theirs["total_us"], rel=1e-6)
        for p in PARTS:
            assert abs(mine[p]["pct"] - 100.0 * theirs[p] / theirs["total_us"]) <= 1.0, (p, mine["step"])
    for p in PARTS:
        assert abs(got["average"][p]["pct"] - 100.0 * ref["average"][p] / ref["average"]["total_us"]) <= 1.0, p


def _two_steps() -> TraceBuilder:
    b = TraceBuilder()
    for n, t0 in ((1, 0.0), (2, 1000.0)):
        b.step(n, t0, 1000.0)
        b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, 200.0)
        b.op("aten::mm", t0 + 200.0, 300.0)
        b.kernel("gemm_kernel", t0 + 300.0, 100.0, launch_ts=t0 + 250.0, launch_dur=10.0)
        b.memcpy(t0 + 600.0, 50.0, 4096, launch_ts=t0 + 450.0)
    return b


def test_parts_follow_the_plugin_priority_and_sum_to_the_step(tmp_path: Path) -> None:
    got, why = step_breakdown(load_trace(_two_steps().write(tmp_path / "two.json")))
    assert why is None and got is not None
    for step in got["steps"]:
        assert step["total_us"] == pytest.approx(1000.0)
        assert step["kernel"]["us"] == pytest.approx(100.0)
        assert step["memcpy"]["us"] == pytest.approx(50.0)
        assert step["runtime"]["us"] == pytest.approx(15.0)  # both launches, though inside the op
        assert step["dataloader"]["us"] == pytest.approx(200.0)
        assert step["cpu_exec"]["us"] == pytest.approx(185.0)  # the op less its launches and its kernel
        assert step["other"]["us"] == pytest.approx(450.0)
        assert sum(step[p]["pct"] for p in PARTS) == pytest.approx(100.0)
    assert got["average"]["cpu_exec"]["pct"] == pytest.approx(18.5)


def test_no_steps_is_null_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = TraceBuilder()
    b.op("aten::mm", 0.0, 300.0)
    path = b.write(tmp_path / "nosteps.json")
    assert main(["summary", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["traces"]
    assert t["steps"]["breakdown"] is None
    assert any("steps.breakdown are null" in w for w in t["warnings"])


def test_summary_json_has_the_breakdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _two_steps().write(tmp_path / "two.json")
    assert main(["summary", str(path), "--format", "json"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["traces"]
    bd = t["steps"]["breakdown"]
    assert bd["parts"] == list(PARTS)
    assert len(bd["steps"]) == 2
    assert bd["average"]["kernel"]["us"] == pytest.approx(100.0)
