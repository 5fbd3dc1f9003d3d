"""The text report wraps to the terminal's width without parting a number from its unit."""

from __future__ import annotations

import re

import pytest

from perflint.cli import main
from perflint.report.text import _wrapped
from tests.conftest import FIXTURES

UNIT = re.compile(r"^\s*(ns|us|µs|ms|s|B|KB|MB|GB|%|x|pp)(\W|$)")


def _parted(lines: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(lines, lines[1:]) if re.search(r"\d$", a.rstrip()) and UNIT.match(b)]


@pytest.mark.parametrize("width", range(12, 41))
def test_a_number_keeps_its_unit(width: int) -> None:
    text = "the step took 5.7 ms, 120 GB of memory at 45.3 % busy and 12 us of launch: 3.1x slower"
    lines = list(_wrapped(text, "  ", width))
    assert _parted(lines) == [], lines
    assert " ".join(" ".join(lines).split()) == text  # nothing lost, no stray no-break space


@pytest.mark.parametrize("width", [40, 52, 64])
def test_the_report_of_a_real_trace_keeps_units_on_their_number(
    width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("perflint.commands.common._stdout_is_tty", lambda: True)  # a terminal...
    monkeypatch.setenv("COLUMNS", str(width))  # ...this wide
    monkeypatch.setenv("NO_COLOR", "1")
    main(["check", str(FIXTURES / "gpu" / "regress_head.pt.trace.json.gz")])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 10 and "\u00a0" not in "\n".join(lines)
    assert max(map(len, lines[:-1])) <= width  # the report did wrap (the verdict line stays whole)
    assert _parted(lines) == []
