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


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The console script turns an interrupt into one line and 130 (128 + SIGINT), no traceback."""
    from perflint import cli

    def interrupted(argv: object = None) -> int:
        raise KeyboardInterrupt

    codes: list[int] = []
    monkeypatch.setattr(cli, "main", interrupted)
    monkeypatch.setattr(cli.os, "_exit", codes.append)
    cli.entry_point()
    assert codes == [130]
    assert capsys.readouterr().err == "perflint: interrupted\n"
