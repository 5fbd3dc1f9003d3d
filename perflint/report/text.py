"""Plain-text report (the terminal default)."""

from __future__ import annotations

from perflint.findings import SEVERITIES, RunResult
from perflint.report import ReportOptions


def render_text(result: RunResult, opts: ReportOptions) -> str:
    lines: list[str] = []
    for t in result.traces:
        lines.append(f"== {t.label}")
        for sev in SEVERITIES:
            for f in t.findings:
                if f.severity == sev and f.active:
                    impact = f" (~{f.impact_us / 1000:.2f} ms recoverable)" if f.impact_us else ""
                    where = f" at {f.source}" if f.source else ""
                    lines.append(f"  {sev.upper():7} {f.code} {f.message}{impact}{where}")
        skipped = [s for s in t.statuses if s.status == "skipped"]
        if skipped:
            lines.append(f"  skipped: {', '.join(f'{s.code} ({s.reason})' for s in skipped)}")
    for f in result.run_findings:
        if f.active:
            lines.append(f"  {f.severity.upper():7} {f.code} {f.message}")
    c = result.counts()
    verdict = "FAILED" if result.gate_failed() else "passed"
    lines.append(
        f"perflint: {verdict} (fail-on {result.fail_on}): {c['error']} error(s), {c['warning']} warning(s), "
        f"{c['info']} info, {len(result.traces)} trace(s), {len(result.errors)} unreadable"
    )
    return "\n".join(lines) + "\n"
