"""Every rule in rules/ ships fixtures/rules/<CODE>/: its cases in one file, cases.yaml, and what
builds their traces. One parametrized test runs every case of every rule.

fixtures/rules/<CODE>/
  make.py     functions returning a tests.builder.TraceBuilder (a list of them: the ranks of one
              run, written to one directory), or bad.json[.gz] / good/ files and profiler
              output directories of any format instead
  cases.yaml  one entry per named case; `bad` and `good` are required:
                <name>:
                  make: <function of make.py>   (default: the case's name)
                  args: {keyword: value}        (passed to it)
                  trace: <file or directory>    (instead of make, relative to the case directory)
                  baseline: <function>          (a regression case's --baseline; default baseline())
                  params: {param: value}        (the rule's params for this case)
                  config: {...}                 (more of a .perflint.yaml)
                  status: failed | passed | skipped
                  findings: [ {finding fields to match: code, severity, op, kernel, input_dims,
                              source, impact_us, kernel_contains, message_contains,
                              evidence: {...}} ]
                              (every finding the rule gives; none when absent)
                  reason_contains: <text of the status's reason>
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
CASE_KEYS = {"make", "args", "trace", "baseline", "params", "config", "status", "findings", "reason_contains", "doc"}


def _cases(code: str) -> dict[str, dict[str, Any]]:
    path = CASES / code / "cases.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


ALL_CASES = [(code, name) for code in CODES for name in _cases(code)]


def _module(case_dir: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"fixture_{case_dir.name}", case_dir / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _built(built: Any, name: str, tmp_path: Path) -> str:
    if isinstance(built, list):  # multi-rank cases: a directory of rank files
        d = tmp_path / name
        d.mkdir(exist_ok=True)
        for i, b in enumerate(built):
            b.write(d / f"rank{i}.pt.trace.json")
        return str(d)
    return str(built.write(tmp_path / f"{name}.json"))


def _trace(case_dir: Path, name: str, case: dict[str, Any], tmp_path: Path) -> str:
    """The trace of case `name`: its `trace` file, else make.py's function (`make`, default the
    name), else a file or directory named after the case."""
    if "trace" in case:
        return str(case_dir / case["trace"])
    fn = case.get("make", name)
    if (case_dir / "make.py").exists():
        mod = _module(case_dir)
        if hasattr(mod, fn):
            return _built(getattr(mod, fn)(**case.get("args", {})), name, tmp_path)
    if (case_dir / fn).is_dir():  # a profiler output directory (any format perflint reads)
        return str(case_dir / fn)
    for file in (f"{fn}.json", f"{fn}.json.gz", f"{fn}.pt.trace.json.gz"):
        if (case_dir / file).exists():
            return str(case_dir / file)
    pytest.fail(f"{case_dir}: case {name}: no trace (make.py:{fn}(), {fn}.json[.gz] or {fn}/)")


def _check(code: str, name: str, case: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    """Runs the rule alone on the case's trace, with its params and config; regression rules get
    the case's baseline trace as --baseline."""
    case_dir = CASES / code
    extra: list[str] = []
    baseline = case.get("baseline", "baseline")
    if (case_dir / "make.py").exists() and hasattr(_module(case_dir), baseline):
        extra += ["--baseline", _built(getattr(_module(case_dir), baseline)(), f"{name}_baseline", tmp_path)]
    config: dict[str, Any] = dict(case.get("config", {}))
    if "params" in case:
        config.setdefault("rules", {}).setdefault(code, {})["params"] = case["params"]
    if config:
        cfg = tmp_path / f"{name}.perflint.yaml"
        cfg.write_text(yaml.safe_dump(config))
        extra += ["--config", str(cfg)]
    path = _trace(case_dir, name, case, tmp_path)
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
        elif f.get(k) != (pytest.approx(v) if isinstance(v, float) else v):
            return False
    return True


def test_every_rule_has_its_cases() -> None:
    missing = [c for c in CODES if not {"bad", "good"} <= set(_cases(c))]
    assert not missing, f"rules without bad and good cases in fixtures/rules/<CODE>/cases.yaml: {missing}"
    stale = sorted(p.name for p in CASES.iterdir() if p.is_dir() and p.name not in CODES and not p.name.startswith("_"))
    assert not stale, f"fixture directories without a rule: {stale}"
    for code in CODES:
        cases = _cases(code)
        assert cases["bad"]["status"] == "failed" and cases["bad"].get("findings"), f"{code}: the bad case must fail with findings"
        assert cases["good"]["status"] == "passed" and not cases["good"].get("findings"), f"{code}: the good case must pass"
        for name, case in cases.items():
            assert set(case) <= CASE_KEYS, f"{code}/{name}: unknown keys {set(case) - CASE_KEYS}"
            assert case.get("status") in ("failed", "passed", "skipped"), f"{code}/{name}: status"
            assert bool(case.get("findings")) == (case["status"] == "failed"), f"{code}/{name}: findings exactly when failed"


@pytest.mark.parametrize(("code", "name"), ALL_CASES, ids=[f"{c}-{n}" for c, n in ALL_CASES])
def test_rule_case(code: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _cases(code)[name]
    doc = _check(code, name, case, capsys, tmp_path)
    found, (status,) = _findings(doc, code), _statuses(doc, code)
    assert status["status"] == case["status"], status
    if "reason_contains" in case:
        assert case["reason_contains"] in (status.get("reason") or ""), status
    expected = case.get("findings") or []
    assert len(found) == len(expected), [f["message"] for f in found]
    unmatched = [e for e in expected if not any(_matches(e, f) for f in found)]
    assert not unmatched, f"expected findings not produced: {unmatched}; got {[f['message'] for f in found]}"
    for f in found:
        assert f["fingerprint"] and f["fix"]


def test_builtin_rules_dir_is_the_repo_pack() -> None:
    assert {p.stem for p in builtin_rules_dir().glob("*.yaml")} == set(CODES)
