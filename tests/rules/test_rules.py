"""Every rule in rules/ ships fixtures/rules/<CODE>/: a bad and a good case and the expected
findings. One parametrized test runs them all.

fixtures/rules/<CODE>/
  make.py        defines bad() and good(), each returning a tests.builder.TraceBuilder
                 (or bad.json[.gz] / good.json[.gz] files, or bad/ and good/ profiler output
                 directories of any format, instead); regression rules also define
                 baseline(), passed as --baseline
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


def _has(case_dir: Path, kind: str) -> bool:
    make = case_dir / "make.py"
    if make.exists() and f"def {kind}(" in make.read_text():
        return True
    return (case_dir / kind).is_dir() or any((case_dir / f"{kind}{ext}").exists() for ext in (".json", ".json.gz"))


def _trace(case_dir: Path, kind: str, tmp_path: Path) -> str:
    make = case_dir / "make.py"
    if make.exists():
        spec = importlib.util.spec_from_file_location(f"fixture_{case_dir.name}", make)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, kind):
            built = getattr(mod, kind)()
            if isinstance(built, list):  # multi-rank cases: a directory of rank files
                d = tmp_path / kind
                d.mkdir(exist_ok=True)
                for i, b in enumerate(built):
                    b.write(d / f"rank{i}.pt.trace.json")
                return str(d)
            return str(built.write(tmp_path / f"{kind}.json"))
    if (case_dir / kind).is_dir():  # a profiler output directory (any format perflint reads)
        return str(case_dir / kind)
    for name in (f"{kind}.json", f"{kind}.json.gz", f"{kind}.pt.trace.json.gz"):
        if (case_dir / name).exists():
            return str(case_dir / name)
    pytest.fail(f"{case_dir}: no {kind} case (make.py:{kind}() or {kind}.json[.gz])")


def _check(path: str, code: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    """Runs the rule alone; regression rules get the case's baseline() trace as --baseline."""
    extra: list[str] = []
    case = CASES / code
    if _has(case, "baseline"):
        extra = ["--baseline", _trace(case, "baseline", tmp_path)]
    rc = main(["check", path, "--select", code, "--format", "json", "--fail-on", "never", "--jobs", "1", *extra])
    out = capsys.readouterr().out
    assert rc == 0, out
    doc = json.loads(out)
    return doc  # type: ignore[no-any-return]


def _findings(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    """Findings of `code`: per trace, or run-level (multi-rank rules) in `run_findings`."""
    per_trace = [f for t in doc["traces"] for f in t["findings"]]
    return [f for f in per_trace + doc.get("run_findings", []) if f["code"] == code]


def _statuses(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    """One status per rule: a run-level rule has one for the run; a trace rule one per trace."""
    run = [s for s in doc.get("run_statuses", []) if s["code"] == code]
    if run:
        return run
    return [s for t in doc["traces"] for s in t["statuses"] if s["code"] == code]


def _matches(expect: dict[str, Any], f: dict[str, Any]) -> bool:
    for k, v in expect.items():
        if k == "message_contains":
            if v not in f["message"]:
                return False
        elif k == "kernel_contains":
            if v not in (f["kernel"] or ""):
                return False
        elif k == "evidence":
            # Floats compare to 1e-9 relative: evidence is computed, fixtures are written by hand.
            if any(f["evidence"].get(ek) != (pytest.approx(ev) if isinstance(ev, float) else ev) for ek, ev in v.items()):
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
    doc = _check(_trace(case, "bad", tmp_path), code, capsys, tmp_path)
    found, (status,) = _findings(doc, code), _statuses(doc, code)
    assert status["status"] == "failed"
    assert len(found) == len(expected), [f["message"] for f in found]
    unmatched = [e for e in expected if not any(_matches(e, f) for f in found)]
    assert not unmatched, f"expected findings not produced: {unmatched}; got {[f['message'] for f in found]}"
    for f in found:
        assert f["fingerprint"] and f["fix"]


@pytest.mark.parametrize("code", CODES)
def test_rule_good_case_is_clean(code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _check(_trace(CASES / code, "good", tmp_path), code, capsys, tmp_path)
    assert [f["message"] for f in _findings(doc, code)] == []
    (status,) = _statuses(doc, code)
    assert status["status"] == "passed", status


def test_builtin_rules_dir_is_the_repo_pack() -> None:
    assert {p.stem for p in builtin_rules_dir().glob("*.yaml")} == set(CODES)
