"""Every rule in rules/ ships fixtures/rules/<CODE>/: a bad and a good case and the expected
findings. One parametrized test runs them all.

fixtures/rules/<CODE>/
  make.py        defines bad() and good(), each returning a tests.builder.TraceBuilder
                 (or bad.json[.gz] / good.json[.gz] files instead)
  expected.yaml  bad: [ {finding fields to match: code, severity, op, kernel, input_dims, source,
                         kernel_contains, message_contains, evidence: {...}} , ... ]
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from perflint.cli import main
from perflint.engine.loader import builtin_rules_dir, load_rules
from tests.conftest import FIXTURES

RULES = load_rules()
CODES = [r.code for r in RULES]
CASES = FIXTURES / "rules"


def _trace(case_dir: Path, kind: str, tmp_path: Path) -> str:
    make = case_dir / "make.py"
    if make.exists():
        spec = importlib.util.spec_from_file_location(f"fixture_{case_dir.name}", make)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, kind):
            return str(getattr(mod, kind)().write(tmp_path / f"{kind}.json"))
    for name in (f"{kind}.json", f"{kind}.json.gz", f"{kind}.pt.trace.json.gz"):
        if (case_dir / name).exists():
            return str(case_dir / name)
    pytest.fail(f"{case_dir}: no {kind} case (make.py:{kind}() or {kind}.json[.gz])")


def _check(path: str, code: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rc = main(["check", path, "--select", code, "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(out)
    return doc  # type: ignore[no-any-return]


def _matches(expect: dict[str, Any], f: dict[str, Any]) -> bool:
    for k, v in expect.items():
        if k == "message_contains":
            if v not in f["message"]:
                return False
        elif k == "kernel_contains":
            if v not in (f["kernel"] or ""):
                return False
        elif k == "evidence":
            if any(f["evidence"].get(ek) != ev for ek, ev in v.items()):
                return False
        elif f.get(k) != v:
            return False
    return True


def test_every_rule_has_a_fixture_directory() -> None:
    missing = [c for c in CODES if not (CASES / c / "expected.yaml").exists()]
    assert not missing, f"rules without fixtures/rules/<CODE>/expected.yaml: {missing}"
    stale = sorted(p.name for p in CASES.iterdir() if p.is_dir() and p.name not in CODES and not p.name.startswith("_"))
    assert not stale, f"fixture directories without a rule: {stale}"


@pytest.mark.parametrize("code", CODES)
def test_rule_bad_case_finds_expected(code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / code
    expected = yaml.safe_load((case / "expected.yaml").read_text())["bad"]
    assert expected, "the bad case must expect at least one finding"
    doc = _check(_trace(case, "bad", tmp_path), code, capsys)
    (t,) = doc["traces"]
    found = [f for f in t["findings"] if f["code"] == code]
    (status,) = [s for s in t["statuses"] if s["code"] == code]
    assert status["status"] == "failed"
    assert len(found) == len(expected), [f["message"] for f in found]
    unmatched = [e for e in expected if not any(_matches(e, f) for f in found)]
    assert not unmatched, f"expected findings not produced: {unmatched}; got {[f['message'] for f in found]}"
    for f in found:
        assert f["fingerprint"] and f["fix"]


@pytest.mark.parametrize("code", CODES)
def test_rule_good_case_is_clean(code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check(_trace(CASES / code, "good", tmp_path), code, capsys)
    (t,) = doc["traces"]
    assert [f["message"] for f in t["findings"] if f["code"] == code] == []
    (status,) = [s for s in t["statuses"] if s["code"] == code]
    assert status["status"] == "passed", status


def test_builtin_rules_dir_is_the_repo_pack() -> None:
    assert {p.stem for p in builtin_rules_dir().glob("*.yaml")} == set(CODES)
