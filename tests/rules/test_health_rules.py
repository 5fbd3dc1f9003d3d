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
