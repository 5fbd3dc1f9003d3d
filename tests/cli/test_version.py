"""`perflint --version` says which Kineto reader runs (the C scanner is optional at install)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from perflint import __version__
from perflint.cli import main
from perflint.readers.kineto import native_scan


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


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
@pytest.mark.parametrize("preset", [None, "3"])
def test_no_idle_blas_threads(preset: str | None) -> None:
    """Importing the CLI (and numpy with it) starts no OpenBLAS thread: perflint does no linear
    algebra, and on a 2-core runner a spinning one costs the reader 0.1 CPU-s. A user's own
    OPENBLAS_NUM_THREADS is kept."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = "import os, perflint.cli; print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == (preset or "1")
    if preset is None:
        assert out[0] == "1"
