"""One line per finding, `path:line: CODE message` (ruff/mypy style), for editors and grep.

path:line is the user's source line when the trace recorded one that the source tree places
(`locations.py`), else the trace file (no line). A finding on a source line names its trace at
the end, one on its trace the recorded source line that was not placed; unreadable traces are
`path: error: ...`; the last line is the verdict with the counts, as in the text report.
"""

from __future__ import annotations

import os

from perflint.findings import RunResult
from perflint.report import ReportOptions
from perflint.report._common import counts_line, ordered, verdict
from perflint.report.locations import context, locator, where


def render_concise(result: RunResult, opts: ReportOptions) -> str:
    root = opts.root or os.getcwd()
    places = locator(result, root)
    lines: list[str] = []
    for f in ordered(result.active_findings()):
        w = where(f, root, places)
        message = " ".join(f.message.split()) + context(f, w)
        lines.append(f"{w.path}:{w.line}: {f.code} {message}" if w.line is not None else f"{w.path}: {f.code} {message}")
    for err in [] if opts.errors_shown else result.errors:
        path, _, problem = err.partition(": ")
        lines.append(f"{path}: error: {problem}" if problem else f"error: {err}")
    v = verdict(result)
    label = {"passed": "passed", "failed": "FAILED", "error": "ERROR"}[v]
    lines.append(f"perflint: {label} (fail-on {result.fail_on}): {counts_line(result)}")
    return "\n".join(lines) + "\n"
