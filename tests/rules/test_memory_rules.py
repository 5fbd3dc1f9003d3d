"""Memory rules on real traces: pageable copies (MEM001) and the peak allocated memory (PEAK001),
each claim cross-checked from the raw JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import events, only_trace

RESNET0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def test_resnet50_pageable_memcpy(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(RESNET0)
    names = {e["name"] for e in events(path) if e.get("cat") in ("gpu_memcpy", "Memcpy")}
    assert names == {"Memcpy HtoD (Pageable -> Device)"}
    (f,) = [f for f in only_trace(path, "MEM001", capsys)["findings"] if f["code"] == "MEM001"]
    assert f["evidence"]["memcpy"] == "Memcpy HtoD (Pageable -> Device)"
    assert f["op"] == "aten::copy_"
    assert "pin_memory=True" in f["fix"]


def test_memory_peak_real_traces() -> None:
    # V100 32 GB, Total Allocated recorded: peak 6.17 GiB = 19.4% (PEAK001 passes)
    from perflint.facts.memory import memory_rows
    from perflint.graph.load import load_trace

    (row,) = memory_rows(load_trace(shared_trace("hta/df_index_resolver/df_index_resolver.json.gz")))
    assert row["exact"] and row["peak_allocated_bytes"] == 6629508096
    assert row["peak_pct"] == pytest.approx(19.45, abs=0.01)
    # old trace without Total Allocated: running-sum lower bound
    (old,) = memory_rows(load_trace(shared_trace(RESNET0)))
    assert not old["exact"] and old["peak_allocated_bytes"] == 2791636480


def test_copy_advice_follows_the_direction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Device-to-device clones get layout and buffer advice, host copies pinned memory."""
    import json

    from perflint.cli import main
    from tests.builder import TraceBuilder

    def fix(direction: str) -> str:
        b = TraceBuilder()
        for n in range(1, 5):
            s = (n - 1) * 1000.0
            b.step(n, s, 1000)
            b.op("aten::clone", s + 5, 20)
            b.memcpy(s + 30, 400, 1 << 24, direction=direction, src="Device" if direction == "DtoD" else "Pinned", dst="Device", launch_ts=s + 8)
            b.op("aten::mm", s + 40, 20)
            b.kernel("ampere_sgemm_128x64_tn", s + 440, 300, launch_ts=s + 45)
            b.wait_for_gpu(s + 70, s + 740)
        path = b.write(tmp_path / f"{direction}.json")
        assert main(["check", path, "--select", "MEM002", "--format", "json", "--fail-on", "never"]) == 0
        (f,) = [f for t in json.loads(capsys.readouterr().out)["traces"] for f in t["findings"]]
        return str(f["fix"])

    assert "pinned memory does not apply" in fix("DtoD")
    assert "non_blocking=True" in fix("HtoD")
