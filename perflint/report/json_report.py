"""JSON report: a versioned schema carrying the same content as the other reports."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson

from perflint import __version__
from perflint.findings import RunResult
from perflint.report import ReportOptions

SCHEMA_VERSION = 1


def to_document(result: RunResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "perflint_version": __version__,
        "verdict": "failed" if result.gate_failed() else "passed",
        "fail_on": result.fail_on,
        "counts": result.counts(),
        "traces": [asdict(t) for t in result.traces],
        "run_findings": [f.to_dict() for f in result.run_findings],
        "run_statuses": [asdict(s) for s in result.run_statuses],
        "errors": result.errors,
        "notices": result.notices,
        "rules": [
            {k: r[k] for k in ("code", "name", "severity", "groups", "summary", "fix") if k in r} for r in result.rules
        ],
    }


def render_json(result: RunResult, opts: ReportOptions) -> str:
    return orjson.dumps(to_document(result), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"
