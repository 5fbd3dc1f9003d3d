"""Golden files for every report format on a hand-built RunResult (tests/report_sample.py).

Regenerate after an intended change with `PERFLINT_UPDATE_GOLDEN=1 pytest tests/report/test_report_golden.py`
and review the diff.
"""

from __future__ import annotations

import os

import pytest

from perflint import __version__
from perflint.report import REPORTERS, ReportOptions
from tests.conftest import TESTS
from tests.report_sample import sample_result

GOLDEN = TESTS / "golden"
FORMATS = {
    "text": "txt",
    "json": "json",
    "junit": "xml",
    "markdown": "md",
    "sarif": "sarif",
    "github": "github.txt",
    "concise": "concise.txt",
    "gitlab": "gitlab.json",
}


def normalize(text: str) -> str:
    return text.replace(f'"{__version__}"', '"<version>"')


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PERFLINT_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with PERFLINT_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden (PERFLINT_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden(fmt: str) -> None:
    text = REPORTERS[fmt](sample_result(), ReportOptions(root="/nonexistent-root"))
    check_golden(f"report.{FORMATS[fmt]}", normalize(text))


def test_reports_are_deterministic() -> None:
    for fmt in FORMATS:
        one = REPORTERS[fmt](sample_result(), ReportOptions())
        two = REPORTERS[fmt](sample_result(), ReportOptions())
        assert one == two, fmt
