"""JUnit XML (via junit-xml): one testsuite per trace (rank), one testcase per enabled rule.

A testcase fails when the rule has active findings at or above the gate (`--fail-on`), so the
JUnit view agrees with the exit code; findings below the gate, and suppressed or accepted ones,
are listed in the testcase's system-out while it passes. A rule the trace lacks data for is
skipped with the reason. Names are unique and stable across runs (GitLab drops duplicates):
suite = trace label, classname = "perflint.<rule group>" (the rule's first group: Jenkins splits a
classname at its last dot into package and class, so no file name goes there), testcase =
"<code> <trace label>" (`TC001 traces/run.json [rank 3]`; the rule's name is in its messages).
Unreadable traces become an error testcase in a "perflint.errors" suite; files a directory scan
passed over become skipped testcases (the reason as the message) in a "perflint.skipped" suite.
Every suite carries the run's `traces_checked` and `files_skipped` counts as properties.
"""

from __future__ import annotations

from typing import Any

from junit_xml import TestCase, TestSuite, to_xml_report_string

from perflint.findings import SEVERITY_RANK, Finding, RuleStatus, RunResult
from perflint.report import ReportOptions
from perflint.report._common import fmt_value, impact_text, location_label, ordered, rules_by_code

RUN_SUITE = "run (all ranks)"


def _describe(f: Finding) -> str:
    lines = [f"[{f.severity}] {f.code} {location_label(f)}: {f.message}"]
    if f.impact_us:
        lines.append(f"  impact: {impact_text(f)}")
    if f.source:
        lines.append(f"  source: {f.source}")
    for k, v in f.evidence.items():
        lines.append(f"  {k}: {fmt_value(v, 400)}")
    if f.suppressed is not None:
        lines.append(f"  suppressed: {f.suppressed}")
    elif f.accepted is not None:
        lines.append(f"  accepted: {f.accepted}")
    lines.append(f"  fingerprint: {f.fingerprint}")
    return "\n".join(lines)


def _gated(f: Finding, fail_on: str) -> bool:
    return f.active and fail_on != "never" and SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on]


def classname(rule: dict[str, Any] | None) -> str:
    groups = (rule or {}).get("groups") or ["rules"]
    return "perflint." + str(groups[0]).replace(".", "-")


def _case(status: RuleStatus, findings: list[Finding], where: str, rule: dict[str, Any] | None, fail_on: str) -> TestCase:
    mine = ordered([f for f in findings if f.code == status.code])
    case = TestCase(f"{status.code} {where}", classname=classname(rule))
    fix = (rule or {}).get("fix") or ""
    if status.status == "skipped":
        case.add_skipped_info(message=status.reason or "skipped")
        return case
    failing = [f for f in mine if _gated(f, fail_on)]
    if failing:
        n = len(failing)
        head = f"{status.code} {status.name}: {n} {status.severity} finding{'s' if n != 1 else ''}"
        body = "\n\n".join(_describe(f) for f in failing)
        if fix:
            body += "\n\nfix: " + " ".join(fix.split())
        case.add_failure_info(message=f"{head}: {failing[0].message}", output=body, failure_type=status.severity)
    rest = [f for f in mine if f not in failing]
    if rest:
        case.stdout = "\n\n".join(_describe(f) for f in rest)
    return case


def _unique(name: str, seen: set[str]) -> str:
    out, n = name, 2
    while out in seen:
        out, n = f"{name} ({n})", n + 1
    seen.add(out)
    return out


def render_junit(result: RunResult, opts: ReportOptions) -> str:
    rules = rules_by_code(result)
    suites: list[TestSuite] = []
    seen: set[str] = set()
    run_props = {"traces_checked": str(len(result.traces)), "files_skipped": str(len(result.skipped))}
    for t in sorted(result.traces, key=lambda t: (t.path, t.rank if t.rank is not None else -1)):
        name = _unique(t.label, seen)
        cases = [_case(s, t.findings, name, rules.get(s.code), result.fail_on) for s in t.statuses]
        props = {"path": t.path, "device": (t.device or {}).get("name") or "unknown", **run_props}
        if t.rank is not None:
            props["rank"] = str(t.rank)
        suites.append(TestSuite(name, sorted(cases, key=lambda c: c.name), properties=props))
    if result.run_statuses:
        name = _unique(RUN_SUITE, seen)
        cases = [_case(s, result.run_findings, name, rules.get(s.code), result.fail_on) for s in result.run_statuses]
        suites.append(TestSuite(name, sorted(cases, key=lambda c: c.name), properties=run_props))
    if result.errors:
        cases = []
        names: set[str] = set()
        for err in result.errors:
            path = err.split(": ", 1)[0]
            case = TestCase(_unique(f"read {path}", names), classname="perflint.errors")
            case.add_error_info(message=err, error_type="input")
            cases.append(case)
        suites.append(TestSuite(_unique("perflint.errors", seen), cases, properties=run_props))
    if result.skipped:
        cases = []
        names = set()
        for skip in result.skipped:
            case = TestCase(_unique(f"skip {skip.path}", names), classname="perflint.skipped")
            case.add_skipped_info(message=skip.reason)
            cases.append(case)
        suites.append(TestSuite(_unique("perflint.skipped", seen), cases, properties=run_props))
    xml: str = to_xml_report_string(suites, prettyprint=True, encoding="utf-8")  # junit-xml has no annotations
    return xml
