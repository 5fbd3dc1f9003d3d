"""JSON report: a versioned schema carrying the same content as the other reports.

The schema is the pydantic models of `json_schema.py` (kept apart, so that writing a report
does not import pydantic); a test validates reports against them. Bump `SCHEMA_VERSION` on any
incompatible change (a removed or retyped field); adding an optional field is compatible.
Documented in docs/report-json-schema.md.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson

from perflint._version import __version__
from perflint.findings import RunResult
from perflint.report import ReportOptions
from perflint.report._common import full_counts, ordered, rules_by_code, verdict

SCHEMA_VERSION = 1
def _rule(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: r[k] for k in ("code", "name", "severity", "groups", "summary", "rationale", "fix") if k in r}
    out["params"] = dict(r.get("params") or {})
    out["references"] = [
        {"title": ref["title"], "url": ref["url"]} if isinstance(ref, dict) else {"title": ref.title, "url": ref.url}
        for ref in r.get("references") or []
    ]
    return out


def _trace(t: Any) -> dict[str, Any]:
    return {
        "path": t.path,
        "rank": t.rank,
        "device": t.device,
        "metrics": t.metrics,
        "statuses": [asdict(s) for s in t.statuses],
        "findings": [f.to_dict() for f in ordered(t.findings)],
        "warnings": list(t.warnings),
        "role": t.role,
    }


def to_document(result: RunResult) -> dict[str, Any]:
    enabled = {r["code"] for r in result.rules if "code" in r}
    return {
        "schema_version": SCHEMA_VERSION,
        "perflint_version": __version__,
        "verdict": verdict(result),
        "fail_on": result.fail_on,
        "counts": full_counts(result),
        "traces": [_trace(t) for t in result.traces],
        "run_findings": [f.to_dict() for f in ordered(result.run_findings)],
        "run_statuses": [asdict(s) for s in result.run_statuses],
        "errors": list(result.errors),
        "notices": list(result.notices),
        "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        "rules": [_rule(r) for code, r in rules_by_code(result).items() if code in enabled],
    }


def render_json(result: RunResult, opts: ReportOptions) -> str:
    return json_bytes(result).decode()


def json_bytes(result: RunResult) -> bytes:
    """The JSON report, UTF-8 encoded, as a file or stdout gets it (`report.output.render_output`): a
    report of a thousand ranks is tens of MB, and as a str it would be held once more, twice over
    once one character in it is beyond Latin-1."""
    # OPT_SERIALIZE_NUMPY: evidence and metrics may hold numpy scalars straight from the fact tables.
    opt = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    return orjson.dumps(to_document(result), option=opt, default=_fallback)


def _fallback(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    return str(obj)
