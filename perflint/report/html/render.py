"""Renders the HTML report: the run's verdict and findings, then the traces' panels (perflint.panels)."""

from __future__ import annotations

import os
import re
from html import escape
from typing import Any

from perflint.findings import SEVERITIES, Finding, RunResult
from perflint.panels import comparison
from perflint.report._common import counts_line, fmt_us, fmt_value, location_label, ordered, verdict
from perflint.report.html import page
from perflint.report.output import write_file
from perflint.units import plural


def write(path: str, text: str) -> None:
    write_file(path, text, "the HTML report")


def _finding(f: Finding) -> str:
    impact = f" <span class=mut>(~{escape(fmt_us(f.impact_us))} recoverable)</span>" if f.impact_us else ""
    where = os.path.basename(f.trace) + (f" [rank {f.rank}]" if f.rank is not None else "")
    src = f" <code>{escape(f.source)}</code>" if f.source else ""
    return (f'<details class="finding" data-code="{escape(f.code)}"><summary class="head"><span class="sev-{f.severity}">'
            f"{escape(f.code)}</span> {escape(f.name)}{impact} <span class=mut>{escape(where)}</span>{src}</summary>"
            f"<p>{escape(f.message)}</p>{_details(f)}</details>")


def _details(f: Finding) -> str:
    """A finding's particulars, as a definition list: where, source, op stack, kernel, evidence, fix."""
    rows = [("where", escape(location_label(f)))]
    if f.source:
        rows.append(("source", f"<code>{escape(f.source)}</code>"))
    if f.op_stack:
        rows.append(("op stack", f"<code>{escape(' > '.join(f.op_stack))}</code>"))
    if f.kernel:
        rows.append(("kernel", f"<code>{escape(f.kernel)}</code>"))
    if f.input_dims is not None:
        rows.append(("input dims", f"<code>{escape(fmt_value(f.input_dims))}</code>"))
    ev = "; ".join(f"{k}={fmt_value(v, 80)}" for k, v in f.evidence.items())
    if ev:
        rows.append(("evidence", escape(ev)))
    if f.fix:
        rows.append(("fix", escape(f.fix)))
    return "<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def shape(f: Finding) -> tuple[str, str, str]:
    """What makes findings the same across ranks and traces: rule, severity and the message with
    its numbers taken out (each rank measures its own times)."""
    msg = f.message.replace(f.trace, "") if f.trace else f.message
    return f.code, f.severity, _NUMBER.sub("#", msg)


def group(findings: list[Finding]) -> list[list[Finding]]:
    """Findings of one rule with the same message shape, in the order of their first member;
    one group per finding when each comes from a different rule or says something different."""
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(shape(f), []).append(f)
    return list(groups.values())


def spans(numbers: list[int]) -> str:
    """Integers as ranges: [0, 1, 2, 3, 5] -> "0-3, 5"."""
    out: list[str] = []
    xs = sorted(set(numbers))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}" if j > i + 1 else f"{xs[i]}, {xs[j]}")
        i = j + 1
    return ", ".join(out)


def where_text(fs: list[Finding]) -> str:
    """Where a group's findings come from: the ranks, and the traces without one."""
    ranks = sorted({f.rank for f in fs if f.rank is not None})
    plain = [os.path.basename(f.trace) for f in fs if f.rank is None]
    parts = []
    if ranks:
        parts.append(f"{len(ranks)} ranks: {spans(ranks)}" if len(ranks) > 1 else f"rank {ranks[0]}")
    names = list(dict.fromkeys(plain))
    if names:
        parts.append(f"{len(names)} traces: {', '.join(names)}" if len(names) > 1 else names[0])
    return "; ".join(parts)


def _group_html(fs: list[Finding]) -> str:
    """One entry for findings that say the same thing on several ranks or traces: the first (most
    severe, most recoverable) in full, then each member's own numbers."""
    if len(fs) == 1:
        return _finding(fs[0])
    f = fs[0]
    total = sum(x.impact_us or 0.0 for x in fs)
    impact = f" <span class=mut>(~{escape(fmt_us(total))} recoverable in all)</span>" if total else ""
    members = "".join(
        f"<li><span class=mut>{escape(location_label(x))}</span>"
        + (f" ~{escape(fmt_us(x.impact_us))}" if x.impact_us else "") + f": {escape(x.message)}</li>"
        for x in fs
    )
    return (f'<details class="finding" data-code="{escape(f.code)}"><summary class="head"><span class="sev-{f.severity}">'
            f"{escape(f.code)}</span> {escape(f.name)} &times;{len(fs)}{impact} <span class=mut>{escape(where_text(fs))}</span></summary>"
            f"<p>{escape(f.message)}</p><details><summary>each of the {len(fs)}</summary><ul class=group-where>{members}</ul></details>"
            f"{_details(f)}</details>")


def by_rule(findings: list[Finding]) -> str:
    """One row per rule: how many findings, on how many traces, and the time their fixes can win."""
    rows: dict[str, list[Any]] = {}
    for f in findings:
        r = rows.setdefault(f.code, [f.severity, f.name, 0, set(), 0.0])
        r[2] += 1
        r[3].add((f.trace, f.rank))
        r[4] += f.impact_us or 0.0
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    body = [
        [(f'<span class="sev-{sev} nw">{escape(c)}</span> <span class=mut>{sev}</span>', None), (page.breakable(name), None), page.n(k, nd=0),
         page.n(len(tr), nd=0), (escape(fmt_us(imp)) if imp else "-", imp)]
        for c, (sev, name, k, tr, imp) in sorted(rows.items(), key=lambda kv: (rank[kv[1][0]], -kv[1][4]))
    ]
    return page.table([("rule", False), ("name", False), ("findings", True), ("traces", True),
                       ("recoverable", True)], body)


def findings_part(result: RunResult) -> list[str]:
    v = verdict(result)
    label = {"passed": "passed", "failed": "FAILED", "error": "ERROR"}[v]
    out = [f'<p class="verdict {v}">perflint: {label} (fail-on {escape(result.fail_on)}): {escape(counts_line(result))}</p>']
    out += [f"<p class=sev-error>error: {escape(e)}</p>" for e in result.errors]
    active = ordered(result.active_findings())
    out.append("<h2>Findings</h2>" + (by_rule(active) if active else "<p>None.</p>"))
    for sev in SEVERITIES:
        found = [f for f in active if f.severity == sev]
        if found:
            groups = group(found)
            n_groups = f", {len(groups)} distinct" if len(groups) < len(found) else ""
            out.append(f'<h3 class="sev-{sev}">{sev.capitalize()}s ({len(found)}{n_groups})</h3>' + "".join(_group_html(g) for g in groups))
    quiet = [f for f in result.all_findings() if not f.active]
    if quiet:
        out.append(f"<details><summary>{len(quiet)} suppressed or accepted</summary>"
                   + "".join(_finding(f) for f in ordered(quiet)) + "</details>")
    return out


def render_check(result: RunResult, alpha: float = 0.05) -> str:
    panels = [tr.panels for tr in result.traces if tr.panels]
    per: dict[str, int] = {}
    for f in result.active_findings():
        key = f"{f.trace}\0{f.rank}"
        per[key] = per.get(key, 0) + 1
    body = ["<h1>perflint check</h1>"] + findings_part(result) + page.traces_part(panels, per, alpha)
    return page.document("perflint check", body)


def render_summary(panels: list[dict[str, Any]], errors: list[str]) -> str:
    body = ["<h1>perflint summary</h1>", f"<p>{plural(len(panels), 'trace')}.</p>"]
    body += [f"<p class=sev-error>error: {escape(e)}</p>" for e in errors]
    return page.document("perflint summary", body + page.traces_part(panels))


def render_diff(base: dict[str, Any], cur: dict[str, Any], pairs: list[dict[str, Any]], alpha: float, top: int) -> str:
    """`base`/`cur`: the two snapshot documents; `pairs`: the diff command's compared pairs."""
    bt = {(x["path"], x.get("rank")) for x in base["traces"]}
    body = ["<h1>perflint diff</h1>"]
    for pair in pairs:
        b = next((x for x in base["traces"] if x["path"] == pair["base"]), None)
        c = next((x for x in cur["traces"] if x["path"] == pair["current"]), None)
        if b is None or c is None or (b["path"], b.get("rank")) not in bt:
            continue
        rank = f" [rank {pair['rank']}]" if pair.get("rank") is not None else ""
        body.append(f"<section class=trace><h2>{escape(pair['base'])} &rarr; {escape(pair['current'])}{escape(rank)}</h2>")
        body.append(page.comparison_block(comparison(b, c, pair["rows"]), alpha, top))
        body.append("</section>")
    return page.document("perflint diff", body)
