"""Generated docs stay in sync with their sources, and every rule's docs carry what a user needs."""

from __future__ import annotations

import pytest

from perflint.cli import main
from perflint.engine.loader import load_rules
from tests.conftest import ROOT


def test_rules_md_is_generated_from_the_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "docs"]) == 0
    generated = capsys.readouterr().out
    committed = (ROOT / "docs" / "rules.md").read_text()
    assert committed == generated, "docs/rules.md is stale: run `perflint rules docs > docs/rules.md`"


@pytest.mark.parametrize("rule", load_rules(), ids=lambda r: r.code)
def test_every_rule_documents_thresholds_fix_and_references(rule, capsys: pytest.CaptureFixture[str]) -> None:
    assert rule.rationale.strip() and rule.fix.strip()
    assert rule.references, f"{rule.code} cites no reference"
    for name, p in rule.params.items():
        assert p.description.strip(), f"{rule.code}.{name} has no description"
    assert main(["explain", rule.code]) == 0
    text = capsys.readouterr().out
    assert rule.code in text and "Fix:" in text and "References:" in text


def test_readme_main_job_and_its_verdict(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's set-up command runs `check` on fixtures/gpu/ with the built-in pack and default
    settings, and the two sentences after it state the verdict that run gives."""
    import json
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```\n(.*?)\n```", section, re.S).group(1)  # type: ignore[union-attr]
    assert command.rstrip().endswith("perflint check fixtures/gpu/")
    assert "--select" not in command and "--config" not in command
    monkeypatch.chdir(ROOT)
    code = main(["check", "fixtures/gpu/", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    errors = [f for t in doc["traces"] for f in t["findings"] if f["severity"] == "error"]
    said = int(re.search(r"fails \(exit 1\) on (\d+) errors", section).group(1))  # type: ignore[union-attr]
    assert said == len(errors)
    codes = {f["code"] for f in errors}
    assert codes == {"UTIL001"} and "(UTIL001)" in section
    util = {f["trace"] for f in errors if f["code"] == "UTIL001"}
    m = re.search(r"(\d+) of the (\d+) fixtures", section)
    assert m and (int(m.group(1)), int(m.group(2))) == (len(util), len(doc["traces"]))
