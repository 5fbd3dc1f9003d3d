"""GitLab Code Quality report (a JSON array of issues, the Code Climate subset GitLab reads).

Each active finding is an issue: description, check_name (`perflint/<CODE>`), fingerprint
(perflint's own, stable across runs, so the merge-request widget tells new findings from fixed
ones), severity and location (path relative to the repository root, lines.begin: the user's
source line where the source tree places it (`locations.py`), else line 1 of the trace, with the
recorded source line named in the description). Severity: error -> critical, warning -> major,
info -> info; an unreadable trace is a blocker. Suppressed and accepted findings are left out.
https://docs.gitlab.com/ee/ci/testing/code_quality.html#code-quality-report-format
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import orjson

from perflint.findings import RunResult
from perflint.report import ReportOptions
from perflint.report._common import impact_text, ordered, repo_path
from perflint.report.locations import context, locator, where

SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def _unique(fp: str, seen: set[str]) -> str:
    out = fp
    while out in seen:  # a fingerprint is one issue: the same finding on two ranks gets two
        out = hashlib.sha1(out.encode()).hexdigest()
    seen.add(out)
    return out


def code_quality(result: RunResult, root: str | None = None) -> list[dict[str, Any]]:
    root = root or os.getcwd()
    places = locator(result, root)
    seen: set[str] = set()
    issues: list[dict[str, Any]] = []
    for err in result.errors:
        path = err.split(": ", 1)[0]
        issues.append(
            {
                "description": err,
                "check_name": "perflint/unreadable-input",
                "fingerprint": _unique(hashlib.sha1(f"unreadable:{path}".encode()).hexdigest(), seen),
                "severity": "blocker",
                "location": {"path": repo_path(path, root) or path, "lines": {"begin": 1}},
            }
        )
    for f in ordered(result.active_findings()):
        w = where(f, root, places)
        text = " ".join(f.message.split())
        if f.impact_us:
            text += f" ({impact_text(f)})"
        text += context(f, w)
        issues.append(
            {
                "description": f"{f.code} {f.name}: {text}",
                "check_name": f"perflint/{f.code}",
                "fingerprint": _unique(f.fingerprint, seen),
                "severity": SEVERITY[f.severity],
                "location": {"path": w.path, "lines": {"begin": w.line or 1}},
            }
        )
    return issues


def render_gitlab(result: RunResult, opts: ReportOptions) -> str:
    return orjson.dumps(code_quality(result, opts.root), option=orjson.OPT_INDENT_2).decode() + "\n"
