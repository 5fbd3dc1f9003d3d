"""One line per finding, `path:line: CODE message` (ruff/mypy style), for editors and grep.

path:line is the user's source line when the trace recorded one, else the trace file (no line).
A finding on a source line names its trace at the end; unreadable traces are `path: error: ...`;
the last line is the verdict with the counts, as in the text report.
"""

from __future__ import annotations

import os

from perflint.findings import RunResult
from perflint.report import ReportOptions
from perflint.report._common import counts_line, finding_location, ordered, trace_context, verdict


def render_concise(result: RunResult, opts: ReportOptions) -> str:
    root = opts.root or os.getcwd()
    lines: list[str] = []
    for f in ordered(result.active_findings()):
        path, line = finding_location(f, root)
        where = f"{path}:{line}" if line is not None else path
        message = " ".join(f.message.split())
        if line is not None:
            message += f" {trace_context(f)}"
        elif f.rank is not None:
            message += f" [rank {f.rank}]"
        lines.append(f"{where}: {f.code} {message}")
    for err in result.errors:
        path, _, problem = err.partition(": ")
        lines.append(f"{path}: error: {problem}" if problem else f"error: {err}")
    v = verdict(result)
    label = {"passed": "passed", "failed": "FAILED", "error": "ERROR"}[v]
    lines.append(f"perflint: {label} (fail-on {result.fail_on}): {counts_line(result)}")
    return "\n".join(lines) + "\n"
