"""Rule documentation generated from the rule YAML (`perflint explain`, docs/rules.md)."""

from __future__ import annotations

from perflint.engine.rule_core import RuleCore


def explain(rule: RuleCore) -> str:
    lines = [
        f"{rule.code} {rule.name} [{rule.severity}]",
        f"groups: {', '.join(rule.groups) or '-'}",
        "",
        rule.summary.strip(),
        "",
        "Why:",
        *("  " + ln for ln in rule.rationale.strip().splitlines()),
        "",
        f"Selects: scope '{rule.scope}' rows where {rule.where.strip()}",
        f"Asserts: {rule.assert_.strip()}",
    ]
    if rule.requires:
        lines.append(f"Needs:   {', '.join(rule.requires)} (otherwise the rule is reported as skipped)")
    if rule.measure:
        lines.append(f"Evidence: {', '.join(rule.measure)}")
    if rule.impact:
        lines.append(f"Recoverable time (us): {rule.impact.strip()}; findings under {rule.min_impact_us} us stay quiet")
    if rule.group is not None:
        lines.append(f"Findings: {_grouping(rule)}")
    for cap in rule.at_most:
        lines.append(f"Severity: at most {cap.severity} where {cap.when}")
    if rule.params:
        lines += ["", "Params (thresholds):"]
        for k, p in rule.params.items():
            src = f" [source: {p.source}]" if p.source else ""
            lines.append(f"  {k} ({p.type}, default {p.default!r}): {p.description}{src}")
    lines += ["", "Fix:", *("  " + ln for ln in rule.fix.strip().splitlines())]
    if rule.references:
        lines += ["", "References:", *(f"  - {r.title}: {r.url}" for r in rule.references)]
    lines += ["", "Message:", "  " + " ".join(rule.message.split())]
    return "\n".join(lines) + "\n"


SEVERITY_POLICY = [
    "## Severity policy",
    "",
    "`check` fails the build on errors by default (`--fail-on error`), so a severity is a promise:",
    "",
    "- **error** means *this alone should block a merge*. A rule may report an error only where its",
    "  classification is precise (a kernel known by its function name and its library's naming",
    "  convention, a measured regression that is significant) **and** the problem is a material share",
    "  of the analysed time (the ProfilerSteps, else the trace's GPU span): TC001 at 1% or more of it,",
    "  UTIL001 over steady-state steps, REG001/REG002 beyond their minimum effect. Below that, the same",
    "  finding is a warning (the rule's `at_most` caps say where).",
    "- **warning** is a real problem worth fixing, measured on this trace, whose cost is smaller or",
    "  whose verdict depends on how the trace was taken. Utilization verdicts over a trace without",
    "  ProfilerStep markers, or over one or two steps that may hold the warm-up, are at most warnings and",
    "  say that the window is the whole trace.",
    "- **info** describes what the trace shows (launch outliers, tail effects, missing trace data)",
    "  without claiming a cost.",
    "",
    "Every finding's `impact_us` is the time its fix can win: never more than the analysed window;",
    "host-side waits (syncs, launches, data loading) count only the GPU idle time they cause; launch",
    "overhead is bounded by the launch calls' CPU time. Findings are grouped per root cause (at most",
    "10 per rule and trace, never the same message twice) and ranked by impact. A rule file's",
    "`severity` can be changed per project in the config (`rules: {CODE: {severity: ...}}`).",
]


def _grouping(rule: RuleCore) -> str:
    g = rule.group
    assert g is not None
    by = f"one per {', '.join(g.by)}" if g.by else "one per trace"
    summed = f"; {', '.join(g.sum)} summed over the grouped rows" if g.sum else ""
    return f"{by}{summed}; the {g.top} rows with the most impact listed in the evidence"


def markdown(rules: list[RuleCore]) -> str:
    out = [
        "# perflint rules",
        "",
        "Generated from `rules/*.yaml` by `perflint rules docs`; do not edit by hand.",
        "",
        *SEVERITY_POLICY,
        "",
        "| code | name | severity | groups | summary |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        out.append(f"| [{r.code}](#{r.code.lower()}) | `{r.name}` | {r.severity} | {', '.join(r.groups)} | {r.summary} |")
    for r in rules:
        out += ["", f"## {r.code}", "", f"`{r.name}` — **{r.severity}** — {r.summary}", "", r.rationale.strip(), ""]
        out += [f"- **Selects**: scope `{r.scope}` where `{r.where.strip()}`", f"- **Asserts**: `{r.assert_.strip()}`"]
        if r.requires:
            out.append(f"- **Needs**: {', '.join(r.requires)} (otherwise skipped, with the reason)")
        if r.impact:
            out.append(f"- **Recoverable time**: `{r.impact.strip()}` µs (quiet below `{r.min_impact_us}` µs)")
        if r.group is not None:
            out.append(f"- **Findings**: {_grouping(r)}")
        for cap in r.at_most:
            out.append(f"- **Severity**: at most {cap.severity} where `{cap.when}`")
        if r.params:
            out += ["", "| param | type | default | meaning | source |", "|---|---|---|---|---|"]
            for k, p in r.params.items():
                out.append(f"| `{k}` | {p.type} | `{p.default!r}` | {p.description} | {p.source or ''} |")
        out += ["", "**Fix.** " + " ".join(r.fix.split())]
        if r.references:
            out += ["", *(f"- [{ref.title}]({ref.url})" for ref in r.references)]
    return "\n".join(out) + "\n"


def facts_markdown() -> str:
    """docs/facts.md: every built-in scope a rule can run over, its fields, and the capabilities."""
    from perflint.facts.catalogue import capabilities, scopes

    out = [
        "# Facts: what a rule can use",
        "",
        "<!-- generated by `perflint rules facts --format markdown`; do not edit -->",
        "",
        "A rule's `scope` names one of these tables of rows; `where`, `assert`, `measure`, `impact` and the",
        "message's `{placeholders}` use its fields. Per-trace scopes give rows for each trace (rank);",
        "run-level scopes give rows over all the ranks of a run. A field is null (`exists(x)` is false)",
        "where the trace lacks the data. Units: µs, ms, %, bytes, GiB; a count has no unit.",
        "",
        "Plugins add scopes, fields and capabilities through the `perflint.facts` entry point: a function",
        "called once, with no arguments, that registers them with the decorators of `perflint.facts`",
        "(`fact`, `run_source`, `enricher`, `capability`).",
        "",
        "## Capabilities (`requires:`)",
        "",
        "A rule whose requirement is missing on a trace is reported as skipped there, with the reason.",
        "",
        "| capability | checks |",
        "|---|---|",
    ]
    out += [f"| `{name}` | {what} |" for name, what in capabilities(builtin_only=True).items()]
    for sc in scopes(builtin_only=True):
        out += ["", f"## `{sc.name}`{' (run-level)' if sc.run_level else ''}", ""]
        if sc.doc:
            out += [sc.doc.splitlines()[0], ""]
        out += [f"Key: {', '.join(f'`{k}`' for k in sc.key)}", "", "| field | type | unit | meaning |", "|---|---|---|---|"]
        out += [f"| `{f.name}` | {f.type} | {f.unit} | {f.meaning.replace('|', '/')} |" for f in sc.fields]
    return "\n".join(out) + "\n"
