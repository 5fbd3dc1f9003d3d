"""`perflint --version` says which Kineto reader runs (the C scanner is optional at install)."""

from __future__ import annotations

import pytest

from perflint import __version__
from perflint.cli import main
from perflint.readers import native_scan


def _version(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    return capsys.readouterr().out.strip()


def test_version_names_the_reader(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    built = native_scan.built()
    want = "C scanner" if built else "Python, C scanner not built"
    assert _version(capsys) == f"perflint {__version__} (Kineto reader: {want})"
    monkeypatch.setenv("PERFLINT_NATIVE", "0")
    off = "Python, PERFLINT_NATIVE=0" if built else "Python, C scanner not built"
    assert _version(capsys) == f"perflint {__version__} (Kineto reader: {off})"
