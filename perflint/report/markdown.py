"""Markdown for GitHub job summaries and PR comments.

Verdict and counts first, then a findings table (most severe, most recoverable time first), then
per-finding detail (evidence, source, fix), then per-trace top kernel categories and kernels,
then skipped rules and skipped files. The result stays within `ReportOptions.max_bytes` (default
1 MiB, GitHub's job-summary limit) by dropping detail in reverse priority (skipped files and rules,
metrics, per-finding detail, then table rows) and saying what was left out; the verdict and the
counts always stay, and the verdict line is never cut (`perflint check --max-bytes` is at least 256).
"""

from __future__ import annotations

from perflint.findings import Finding, RunResult, TraceResult
from perflint.report import ReportOptions
from perflint.report._common import (
    counts_line,
    fmt_us,
    fmt_value,
    location_label,
    ordered,
    rules_by_code,
    skipped_by_reason,
    verdict,
)
from perflint.units import plural

DEFAULT_MAX_BYTES = 1024 * 1024
_ICON = {"passed": "✅", "failed": "❌", "error": "⚠️"}
_SEV = {"error": "🔴 error", "warning": "🟠 warning", "info": "🔵 info"}
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def esc(text: str) -> str:
    """Plain text for a Markdown line or table cell (no markup, no HTML, no line breaks)."""
    return " ".join(str(text).split()).translate(_MD_SPECIAL)


def code(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if "`" in text:  # a code span cannot hold its own fence: fall back to escaped text
        return esc(text)
    # Table pipes must be escaped even inside a code span (GFM).
    return "`" + text.replace("|", "\\|") + "`"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _header(result: RunResult) -> str:
    v = verdict(result)
    return f"## {_ICON[v]} perflint: {v} (fail-on {result.fail_on})\n\n**{esc(counts_line(result))}**\n\n"


def _row(i: int, f: Finding) -> str:
    impact = fmt_us(f.impact_us) if f.impact_us else ""
    where = esc(location_label(f)) + (f"<br>{code(f.source)}" if f.source else "")
    return f"| {i} | {_SEV[f.severity]} | {code(f.code)} {esc(f.name)} | {esc(f.message)} | {impact} | {where} |\n"


_TABLE_HEAD = "### Findings\n\n| # | Severity | Rule | Message | Recoverable | Where |\n|---|---|---|---|---|---|\n"


def _detail(i: int, f: Finding, fix: str) -> str:
    lines = [f"<details><summary>{i}. {esc(f.code)} {esc(f.name)}: {esc(f.message)[:200]}</summary>", ""]
    if f.evidence:
        lines += ["| Evidence | Value |", "|---|---|"]
        lines += [f"| {esc(k)} | {code(fmt_value(v, 300), 320)} |" for k, v in f.evidence.items()]
        lines.append("")
    if f.op_stack:
        lines.append(f"Op stack: {code(' > '.join(f.op_stack), 400)}")
        lines.append("")
    if f.source:
        lines.append(f"Source: {code(f.source)}")
        lines.append("")
    fix_text = f.fix or fix
    if fix_text:
        lines.append(f"**Fix:** {esc(fix_text)}")
        lines.append("")
    lines.append(f"Fingerprint: {code(f.fingerprint)}")
    lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def _metrics(t: TraceResult) -> str:
    m = t.metrics or {}
    k = m.get("kernels") or {}
    lines = [f"#### {esc(t.label)}", ""]
    bits = []
    dev = (t.device or {}).get("name")
    if dev:
        bits.append(f"device {esc(dev)}")
    steps = m.get("steps") or {}
    if steps.get("count"):
        bits.append(f"{steps['count']} step{'s' if steps['count'] != 1 else ''}, median {fmt_us(steps.get('median_us'))}")
    gpu = m.get("gpu") or {}
    if gpu.get("utilization_pct") is not None:
        bits.append(f"GPU utilization {gpu['utilization_pct']:.1f}%")
    tc = m.get("tensor_cores") or {}
    if tc.get("kernel_time_pct") is not None:
        bits.append(f"Tensor Cores {tc['kernel_time_pct']:.1f}% of kernel time")
    if bits:
        lines += [", ".join(bits), ""]
    cats = sorted(
        ((c, v) for c, v in (k.get("by_category") or {}).items() if (v.get("time_us") or 0) > 0),
        key=lambda cv: (-cv[1]["time_us"], cv[0]),
    )
    if cats:
        lines += ["| Category | Time | Share |", "|---|---:|---:|"]
        lines += [f"| {esc(c)} | {fmt_us(v['time_us'])} | {v.get('pct', 0.0):.1f}% |" for c, v in cats]
        lines.append("")
    top = k.get("top") or []
    if top:
        lines += ["| Kernel | Total | Count | Mean | Top-level op |", "|---|---:|---:|---:|---|"]
        for r in top[:10]:
            op = code(r["top_level_op"]) if r.get("top_level_op") else ""
            lines.append(
                f"| {code(r['name'], 120)} | {fmt_us(r.get('total_us'))} | {r.get('count', '')} | "
                f"{fmt_us(r.get('mean_us'))} | {op} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def _skipped(result: RunResult) -> str:
    reasons: dict[tuple[str, str], int] = {}
    for s in [s for t in result.traces for s in t.statuses]:
        if s.status == "skipped":
            key = (s.code, s.reason or "")
            reasons[key] = reasons.get(key, 0) + 1
    run_level = sorted((s.code, s.reason or "") for s in result.run_statuses if s.status == "skipped")
    if not reasons and not run_level:
        return ""
    lines = ["### Skipped rules", ""]
    lines += [f"- {code(c)} on {n} trace{'s' if n != 1 else ''}: {esc(r)}" for (c, r), n in sorted(reasons.items())]
    lines += [f"- {code(c)} (run-level): {esc(r)}" for c, r in run_level]
    return "\n".join(lines) + "\n\n"


SKIPPED_SHOWN = 10  # file names listed per skip reason


def _skipped_files(result: RunResult) -> str:
    if not result.skipped:
        return ""
    lines = [f"### Skipped files ({len(result.skipped)})", ""]
    for reason, paths in skipped_by_reason(result):
        shown = ", ".join(code(p) for p in paths[:SKIPPED_SHOWN])
        more = f" and {len(paths) - SKIPPED_SHOWN} more" if len(paths) > SKIPPED_SHOWN else ""
        lines.append(f"- {esc(reason)} ({len(paths)} file{'s' if len(paths) != 1 else ''}): {shown}{more}")
    return "\n".join(lines) + "\n\n"


def render_markdown(result: RunResult, opts: ReportOptions) -> str:
    budget = opts.max_bytes if opts.max_bytes is not None else DEFAULT_MAX_BYTES
    fixes = {c: r.get("fix", "") for c, r in rules_by_code(result).items()}
    findings = ordered(result.active_findings())
    header = _header(result)
    notes_reserve = 200  # room for the "left out" note
    used = _size(header) + notes_reserve

    def fits(text: str) -> bool:
        nonlocal used
        if used + _size(text) > budget:
            return False
        used += _size(text)
        return True

    errors: list[str] = []
    for err in result.errors:
        line = f"- ⚠️ {esc(err)}\n"
        if not fits(line):
            break
        errors.append(line)
    rows: list[str] = []
    if findings and fits(_TABLE_HEAD + "\n"):
        for i, f in enumerate(findings, 1):
            row = _row(i, f)
            if not fits(row):
                break
            rows.append(row)
    details: list[str] = []
    if rows and fits("### Details\n\n"):
        for i, f in enumerate(findings[: len(rows)], 1):
            block = _detail(i, f, fixes.get(f.code, ""))
            if not fits(block):
                break
            details.append(block)
    metrics: list[str] = []
    if result.traces and fits("### Top kernels\n\n"):
        for t in result.traces:
            block = _metrics(t)
            if not fits(block):
                break
            metrics.append(block)
    skipped = _skipped(result)
    skipped_in = bool(skipped) and fits(skipped)
    files = _skipped_files(result)
    files_in = bool(files) and fits(files)

    parts = [header, *errors, "\n" if errors else ""]
    if rows:
        parts += [_TABLE_HEAD, *rows, "\n"]
    if details:
        parts += ["### Details\n\n", *details]
    if metrics:
        parts += ["### Top kernels\n\n", *metrics]
    if skipped_in:
        parts.append(skipped)
    if files_in:
        parts.append(files)
    left: list[str] = []
    if len(errors) < len(result.errors):
        left.append(f"{len(result.errors) - len(errors)} of {plural(len(result.errors), 'error')}")
    if len(rows) < len(findings):
        left.append(f"{len(findings) - len(rows)} of {plural(len(findings), 'finding')}")
    if len(details) < len(rows):
        left.append(f"detail of {plural(len(rows) - len(details), 'finding')}")
    if len(metrics) < len(result.traces):
        left.append(f"kernel tables of {plural(len(result.traces) - len(metrics), 'trace')}")
    if skipped and not skipped_in:
        left.append("the skipped-rules list")
    if files and not files_in:
        left.append("the skipped-files list")
    if left:
        parts.append(f"_Left out to stay under {budget} bytes: {esc(', '.join(left))}; see the JSON report._\n")
    out = "".join(parts)
    return _trim(out, budget, header)


def _trim(out: str, budget: int, header: str) -> str:
    # Last resort for budgets smaller than the report's header: whole lines of the header that fit,
    # and never less than the verdict line, whole (a cut verdict would read as another verdict).
    if _size(out) <= budget:
        return out
    if _size(header) <= budget:
        return header
    lines = header.splitlines(keepends=True)
    kept = [lines[0]]
    for line in lines[1:]:
        if _size("".join(kept) + line) > budget:
            break
        kept.append(line)
    return "".join(kept)
