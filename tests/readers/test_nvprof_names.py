"""nvprof keeps only mangled kernel names: the reader demangles them for every report."""

from __future__ import annotations

import pytest

from perflint.cli import main
from tests.conftest import shared_trace


def test_nvprof_kernel_names_are_demangled(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", shared_trace("pyprof/lm_da6bcc3/net.sql"), "--format", "csv", "-c", "name"]) == 0
    names = capsys.readouterr().out.splitlines()[1:]
    assert any("at::native::" in n for n in names)
    assert not any(n.strip('"').startswith("_Z") for n in names)
    assert main(["summary", shared_trace("pyprof/lm_da6bcc3/net.sql")]) == 0
    assert "_ZN2at6native" not in capsys.readouterr().out
