"""Trace health rules (HEALTH00x: no steps, no device properties, no shapes) on real traces, each
claim re-derived from the raw JSON."""

from __future__ import annotations

import pytest

from tests.conftest import shared_trace
from tests.rules.trace_json import all_findings, events, raw

BERT_H100 = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
INFER_R1 = "hta/trace_file_list/inference_rank_1.json.gz"
COMPARE_BASE = "hta/trace_compare/base/base.json.gz"


def test_health_on_hta_traces(capsys: pytest.CaptureFixture[str]) -> None:
    base = shared_trace(COMPARE_BASE)
    ev = events(base)
    # trace_compare/base HAS ProfilerStep markers (so no HEALTH001) but no deviceProperties.
    assert any(str(e.get("name", "")).startswith("ProfilerStep#") for e in ev)
    assert "deviceProperties" not in raw(base)[0]
    assert sorted(f["code"] for f in all_findings(base, "HEALTH", capsys)) == ["HEALTH002"]
    r1 = shared_trace(INFER_R1)
    assert sorted(f["code"] for f in all_findings(r1, "HEALTH", capsys)) == ["HEALTH001", "HEALTH002", "HEALTH003"]
    bert = shared_trace(BERT_H100)
    assert all_findings(bert, "HEALTH", capsys) == []


def test_health_messages_name_exactly_the_rules_they_skip(capsys: pytest.CaptureFixture[str]) -> None:
    """inference_rank_1 has no steps, no device properties and no shapes: each HEALTH finding
    lists the rules the check reports skipped for that reason, and no other."""
    import json

    from perflint.cli import main

    r1 = shared_trace(INFER_R1)
    assert main(["check", r1, "--format", "json", "--fail-on", "never"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["traces"]
    skipped = {s["code"]: s["reason"] for s in t["statuses"] if s["status"] == "skipped"}
    health = {f["code"]: f["message"] for f in t["findings"] if f["code"].startswith("HEALTH")}
    for code, word in (("HEALTH001", "ProfilerStep"), ("HEALTH003", "Input Dims")):
        named = health[code].split(": ", 1)[1].split(" are skipped")[0].split(", ")
        assert named and all(word in skipped[c] for c in named), (code, named)
        assert sorted(named) == sorted(c for c, why in skipped.items() if word in why), code
    assert "SYNC001" not in health["HEALTH001"]  # syncs are judged over the whole trace
