"""GitHub Actions annotations (workflow commands), then the text report for the log.

GitHub shows at most 10 error and 10 warning annotations per step, so perflint emits the most
important ones: unreadable traces first, then the 10 most severe errors and the 10 warnings with
the most recoverable time, then a `::notice` naming the files a directory scan skipped, and one
saying how many more findings there are.
https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions
"""

# No `from __future__ import annotations`: it would bind the name of `annotations()` below.
import os

from perflint.findings import Finding, RunResult
from perflint.report import ReportOptions
from perflint.report._common import impact_text, ordered, repo_path, trace_context
from perflint.report.locations import SourceLocator, locator, source_note, where
from perflint.report.text import render_text
from perflint.units import plural

MAX_PER_LEVEL = 10


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def _rel(path: str, root: str) -> str:
    placed = repo_path(path, root)
    return placed if placed is not None else path


def _annotation(level: str, f: Finding, root: str, places: SourceLocator) -> str:
    w = where(f, root, places)
    props = [f"file={_prop(w.path)}"]
    if w.line is not None:
        props.append(f"line={w.line}")
    props.append(f"title={_prop(f'perflint {f.code} {f.name}')}")
    msg = f.message
    if f.impact_us:
        msg += f" ({impact_text(f)})"
    if w.line is not None:
        msg += f" {trace_context(f)}"
    elif w.unplaced is not None:
        msg += f" {source_note(w)}"
    return f"::{level} {','.join(props)}::{_data(msg)}"


def annotations(result: RunResult, root: str | None = None) -> list[str]:
    root = root or os.getcwd()
    places = locator(result, root)
    out: list[str] = []
    for err in result.errors[:MAX_PER_LEVEL]:
        path = err.split(": ", 1)[0]
        out.append(f"::error file={_prop(_rel(path, root))},title=perflint%3A unreadable input::{_data(err)}")
    found = ordered(result.active_findings())
    errors = [f for f in found if f.severity == "error"][: max(0, MAX_PER_LEVEL - len(out))]
    warnings = [f for f in found if f.severity == "warning"][:MAX_PER_LEVEL]
    out += [_annotation("error", f, root, places) for f in errors]
    out += [_annotation("warning", f, root, places) for f in warnings]
    if result.skipped:
        n = len(result.skipped)
        first = "; ".join(f"{s.path} ({s.reason})" for s in result.skipped[:3])
        rest = f"; and {n - 3} more" if n > 3 else ""
        out.append(
            f"::notice title={_prop('perflint: ' + plural(n, 'file') + ' skipped')}::"
            + _data(f"{plural(len(result.traces), 'trace')} checked; skipped: {first}{rest}; see the job log or the reports")
        )
    more = len(found) - len(errors) - len(warnings)
    if more > 0:
        out.append(
            f"::notice title=perflint::{more} more finding{'s' if more != 1 else ''} not annotated "
            "(GitHub shows 10 errors and 10 warnings per step); see the job log or the reports"
        )
    return out


def render_github(result: RunResult, opts: ReportOptions) -> str:
    lines = annotations(result, opts.root)
    body = render_text(result, ReportOptions(max_bytes=opts.max_bytes, color=False, root=opts.root, width=opts.width))
    return ("\n".join(lines) + "\n" if lines else "") + body
