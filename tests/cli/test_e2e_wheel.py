"""End to end: build the wheel, install it into a fresh venv, run the `perflint` console script.

Runs in the normal suite (about 20 s on an idle machine: the venv is made without pip and the
outer pip installs into it with --no-compile; dependencies come from the pip cache / index).
It carries the `slow` marker: `pytest -m "not slow"` leaves it out of quick local loops. It
checks that the built-in rules ship inside the wheel (perflint/builtin_rules), and the device peak
table (perflint/data/devices.yaml), and that the installed command, not the source checkout, does
the work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kw)


def test_wheel_installs_and_runs(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(dist)])
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("perflint_gpu-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("perflint/builtin_rules/") and n.endswith(".yaml")}
    assert shipped == {p.name for p in (ROOT / "rules").glob("*.yaml")}
    assert "perflint/report/schema/report.schema.json" in names
    assert "perflint/data/devices.yaml" in names  # the device peak table
    assert "perflint/py.typed" in names  # the API's types reach type checkers
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "perflint = perflint.pytest_plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    inst = _run([sys.executable, "-m", "pip", "--python", str(bindir / "python"), "install", "-q", "--no-compile",
                 "--disable-pip-version-check", str(wheel)])
    assert inst.returncode == 0, inst.stderr

    # Run from an empty directory with a clean environment so nothing resolves to the checkout.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GITHUB_ACTIONS")}
    work = tmp_path / "work"
    work.mkdir()
    trace = str(FIXTURES / "cpu" / "bf16_linear.pt.trace.json.gz")
    res = _run([str(bindir / "perflint"), "check", trace, "--format", "json", "--fail-on", "never",
                "--jobs", "1", "--sarif", "r.sarif"], cwd=work, env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert {r["code"] for r in doc["rules"]} == {p.stem for p in (ROOT / "rules").glob("*.yaml")}
    assert (work / "r.sarif").exists()
    where = _run([str(bindir / "python"), "-c", "import perflint.engine.loader as l; print(l.builtin_rules_dir())"],
                 cwd=work, env=env)
    assert "site-packages" in where.stdout and where.stdout.strip().endswith("perflint/builtin_rules"), where.stdout
    table = _run([str(bindir / "python"), "-c", "import perflint.metrics.devices as d; print(len(d.parts()), d.DEVICES_FILE)"],
                 cwd=work, env=env)
    count, path = table.stdout.split()
    assert int(count) > 0 and "site-packages" in path and path.endswith("perflint/data/devices.yaml"), table.stdout + table.stderr
