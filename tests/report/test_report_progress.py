from __future__ import annotations

import io
import time

import pytest

from perflint.report import progress
from perflint.report.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_disabled_off_tty_and_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CI", "GITHUB_ACTIONS", "PERFLINT_NO_PROGRESS"):
        monkeypatch.delenv(var, raising=False)
    assert progress.enabled(_Tty()) is True
    assert progress.enabled(io.StringIO()) is False
    monkeypatch.setenv("CI", "true")
    assert progress.enabled(_Tty()) is False


def test_shows_only_after_delay_and_erases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.05)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    quick = _Tty()
    with Progress(3, stream=quick, force=True):
        pass
    assert quick.getvalue() == ""
    slow = _Tty()
    with Progress(2, stream=slow, force=True) as p:
        p.advance("a.json")
        time.sleep(0.15)
    out = slow.getvalue()
    assert "1/2" in out and "a.json" in out and out.endswith("\r\x1b[2K")
