"""Generated docs stay in sync with their sources, and every rule's docs carry what a user needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflint.cli import main
from perflint.engine.loader import load_rules

ROOT = Path(__file__).resolve().parent.parent


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
