"""Pipeline-parallel runs: stages are compared with each other (STAGE001), ranks only with the
ranks of their own stage (STRAG001), since different stages run different layers."""

from __future__ import annotations

import json

import pytest

from perflint.cli import main
from tests.conftest import FIXTURES

CASES = FIXTURES / "rules" / "STAGE001"


def _run_findings(path: str, select: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    rc = main(["check", path, "--select", select, "--format", "json", "--fail-on", "never", "-j", "1"])
    assert rc == 0
    return json.loads(capsys.readouterr().out)["run_findings"]  # type: ignore[no-any-return]


def test_ranks_of_a_slower_stage_are_not_stragglers(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run_findings(str(CASES / "bad"), "STRAG001", capsys) == []
    (f,) = _run_findings(str(CASES / "bad"), "STAGE001", capsys)
    assert f["evidence"]["stage"] == 1 and f["impact_us"] == pytest.approx(4 * 1000.0)


def test_without_stages_the_rule_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", str(FIXTURES / "mindspore" / "gpu" / "two_rank"), "--select", "STAGE001", "--format", "json", "-j", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    (status,) = doc["run_statuses"]
    assert status["code"] == "STAGE001" and status["status"] == "skipped"
    assert status["reason"].startswith("needs a pipeline-parallel run whose traces record each rank's stage")
