"""Plain-text report (the terminal default): findings grouped by severity.

Wrapped to `ReportOptions.width` (the terminal's, COLUMNS first) when set; one line per item
otherwise, so a CI log or a pipe keeps every message whole for grep (the viewer wraps).

Colour (ANSI) only when `ReportOptions.color` is set; the check command sets it for a terminal
and never when NO_COLOR is set (https://no-color.org).
"""

from __future__ import annotations

import functools
import re
import textwrap

from perflint.findings import SEVERITIES, Finding, RunResult
from perflint.report import ReportOptions
from perflint.report._common import counts_line, impact_text, location_label, ordered, skipped_by_reason, verdict

_COLORS = {"error": "31", "warning": "33", "info": "36", "passed": "32", "failed": "31", "dim": "2", "bold": "1"}
_HEADINGS = {"error": "Errors", "warning": "Warnings", "info": "Info"}
SKIPPED_SHOWN = 5  # file names listed per skip reason; the JSON report lists every one


def _paint(text: str, what: str, on: bool) -> str:
    return f"\x1b[{_COLORS[what]}m{text}\x1b[0m" if on else text


def _wrap(text: str, indent: str, width: int | None) -> list[str]:
    if width is None:
        return [indent + " ".join(text.split())]
    return list(_wrapped(text, indent, width))  # a copy: callers edit the first line


@functools.lru_cache(maxsize=4096)
def _wrapped(text: str, indent: str, width: int) -> tuple[str, ...]:
    # Many ranks repeat the same headings and messages; textwrap is the report's slowest part.
    # Kernel names are long unbroken words: let textwrap break them rather than overflow.
    # A number stays on the line of its unit ("5.7 ms", "12 launches" may break; "5.7" / "ms" not).
    glued = _NUMBER_UNIT.sub("\\1\u00a0", " ".join(text.split()))
    lines = textwrap.wrap(glued, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
    return tuple(line.replace("\u00a0", " ") for line in lines) or (indent.rstrip(),)


_NUMBER_UNIT = re.compile(r"(\d) (?=(?:ns|us|µs|ms|s|min|h|B|KB|MB|GB|TB|KiB|MiB|GiB|x|pp|%|TFLOP/s|GB/s)(?![\w/]))")


def _finding(f: Finding, color: bool, width: int | None) -> list[str]:
    head = f"{f.code} {f.name}" + (f"  ({impact_text(f)})" if f.impact_us else "")
    lines = _wrap(head, "  ", width)
    lines[0] = lines[0].replace(f.code, _paint(f.code, f.severity, color), 1)
    lines += _wrap(f.message, "      ", width)
    where = location_label(f) + (f" at {f.source}" if f.source else "")
    lines += [_paint(line, "dim", color) for line in _wrap(f"in {where}", "      ", width)]
    return lines


def render_text(result: RunResult, opts: ReportOptions) -> str:
    color, width = opts.color, opts.width
    lines: list[str] = []
    active = ordered(result.active_findings())
    for sev in SEVERITIES:
        group = [f for f in active if f.severity == sev]
        if not group:
            continue
        lines.append(_paint(f"{_HEADINGS[sev]} ({len(group)})", "bold", color))
        for f in group:
            lines.extend(_finding(f, color, width))
        lines.append("")
    # One line per reason (not per rule): a CPU-only trace skips most GPU rules for one reason.
    skipped: dict[str, dict[str, set[str]]] = {}
    for t in result.traces:
        for s in t.statuses:
            if s.status == "skipped":
                skipped.setdefault(s.reason or "", {}).setdefault(s.code, set()).add(t.label)
    for s in result.run_statuses:
        if s.status == "skipped":
            skipped.setdefault(s.reason or "", {}).setdefault(s.code, set()).add("the run")
    if skipped:
        lines.append(_paint("Skipped rules", "bold", color))
        for reason, codes in sorted(skipped.items(), key=lambda kv: sorted(kv[1])[0]):
            where = set().union(*codes.values())
            n = len(where)
            scope = next(iter(where)) if n == 1 else f"{n} traces"
            lines += _wrap(f"{', '.join(sorted(codes))}: {reason} ({scope})", "  ", width)
        lines.append("")
    if result.skipped:
        lines.append(_paint(f"Skipped files ({len(result.skipped)})", "bold", color))
        for reason, paths in skipped_by_reason(result):
            lines += _wrap(f"{reason}:", "  ", width)
            for path in paths[:SKIPPED_SHOWN]:
                lines += _wrap(path, "    ", width)
            if len(paths) > SKIPPED_SHOWN:
                lines.append(f"    and {len(paths) - SKIPPED_SHOWN} more")
        lines.append("")
    for err in [] if opts.errors_shown else result.errors:
        lines += _wrap(f"error: {err}", "", width)
    for t in result.traces:
        for w in t.warnings:
            lines += _wrap(f"warning: {t.label}: {w}", "", width)
    v = verdict(result)
    label = {"passed": "passed", "failed": "FAILED", "error": "ERROR"}[v]
    paint = "failed" if v != "passed" else "passed"
    lines.append(f"perflint: {_paint(label, paint, color)} (fail-on {result.fail_on}): {counts_line(result)}")
    return "\n".join(lines) + "\n"
