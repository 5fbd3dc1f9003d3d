"""`perflint check` as a CI gate through main(argv): exit codes, several reports in one run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from junitparser import JUnitXml

from perflint.cli import main
from tests.conftest import FIXTURES

CPU_TRACE = str(FIXTURES / "cpu" / "mlp_aligned.pt.trace.json.gz")


def _tc001(kind: str, tmp_path: Path) -> str:
    spec = importlib.util.spec_from_file_location("tc001_make", FIXTURES / "rules" / "TC001" / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(getattr(mod, kind)().write(tmp_path / f"tc001_{kind}.json"))


def bad_trace(tmp_path: Path) -> str:
    return _tc001("bad", tmp_path)


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)


def check(*args: str) -> int:
    return main(["check", *args, "--jobs", "1"])


def test_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad, good = bad_trace(tmp_path), _tc001("good", tmp_path)
    assert check(good, "--select", "TC001") == 0
    assert check(bad, "--select", "TC001") == 1
    assert check(bad, "--select", "TC001", "--exit-zero") == 0
    assert check(bad, "--select", "TC001", "--fail-on", "never") == 0
    assert check(bad, "--select", "TC001", "--fail-on", "warning") == 1
    empty = tmp_path / "empty.json"
    empty.write_text("")
    # An error outranks findings, and --exit-zero does not hide it.
    assert check(bad, str(empty), "--select", "TC001") == 2
    assert check(bad, str(empty), "--select", "TC001", "--exit-zero") == 2
    for usage in (["--max-bytes", "0"], ["--fail-on", "bogus"]):  # argparse exits 2
        with pytest.raises(SystemExit) as exc:
            check(bad, *usage)
        assert exc.value.code == 2
    capsys.readouterr()


def test_several_reports_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = bad_trace(tmp_path)
    out = tmp_path / "out"
    code = check(
        bad, CPU_TRACE, "--select", "TC001", "--format", "text",
        "--json", str(out / "r.json"), "--junit", str(out / "r.xml"),
        "--markdown", str(out / "r.md"), "--sarif", str(out / "r.sarif"),
    )
    assert code == 1
    text = capsys.readouterr().out
    assert "Errors (1)" in text and "TC001" in text and "FAILED" in text
    doc = json.loads((out / "r.json").read_text())
    assert doc["verdict"] == "failed" and doc["counts"]["error"] == 1
    xml = JUnitXml.fromfile(str(out / "r.xml"))
    assert len(list(xml)) == 2  # one suite per trace
    assert (out / "r.md").read_text().startswith("## ❌ perflint: failed")
    sarif = json.loads((out / "r.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "TC001"


def test_output_and_step_summary_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bad = bad_trace(tmp_path)
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert check(bad, "--select", "TC001", "--markdown", str(summary), "--format", "json", "-o", str(tmp_path / "r.json")) == 1
    assert capsys.readouterr().out == ""
    assert summary.read_text().startswith("previous step\n## ")
    assert json.loads((tmp_path / "r.json").read_text())["counts"]["error"] == 1


def test_same_file_twice_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(CPU_TRACE, "--json", str(tmp_path / "x"), "--sarif", str(tmp_path / "x")) == 2
    assert "same file" in capsys.readouterr().err


def test_unwritable_report_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert check(CPU_TRACE, "--select", "TC001", "--json", str(blocker / "sub" / "r.json")) == 2
    assert "cannot write the report" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "markdown", "sarif", "github"])
def test_every_format_on_a_real_cpu_trace(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(CPU_TRACE, "--format", fmt, "--fail-on", "never") == 0
    assert capsys.readouterr().out.strip()
