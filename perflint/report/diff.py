"""Rendering `perflint diff` rows (text, markdown, json); the verdict on each row is
perflint.baseline.verdict's. The JSON report carries the minimum effect, the change and its
significance on every row.
"""

from __future__ import annotations

from typing import Any

import orjson

from perflint.baseline.verdict import MIN_EFFECT, MIN_EFFECT_TEXT, assessed, change_text, kind_of
from perflint.units import fmt_duration, fmt_size

GROUPS = ("kernel_group", "new_group", "removed_group")
LABEL_WIDTH = 72  # text table: labels are shortened in the middle to this, longer where two would read alike


def value_text(r: dict[str, Any], x: float | None, signed: bool = False) -> str:
    """A row's value in its kind's unit: times in µs/ms/s, bytes in KB/MB/GB, percentages with %;
    `signed`: a delta, with its sign."""
    if x is None:
        return "n/a"
    kind = kind_of(r["metric"])
    sign = "+" if signed and x > 0 else ""
    if kind == "time":
        return sign + fmt_duration(x)
    if kind == "bytes":
        return sign + fmt_size(x)
    if kind == "pct":
        return f"{sign}{x:.1f}" + (" pp" if signed else "%")
    return sign + _num(x)


def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    ax = abs(x)
    if ax >= 1e9:
        return f"{x / 1e9:.2f}G"
    if ax >= 1e6:
        return f"{x / 1e6:.2f}M"
    if ax >= 1e4:
        return f"{x / 1e3:.1f}k"
    return f"{x:.1f}" if ax >= 10 else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"


def basis_text(pair: dict[str, Any]) -> str:
    """What a pair was compared per, in words ("" for a pair made without one)."""
    b = pair.get("basis")
    return str(b["text"]) if b else ""


def sections(pairs: list[dict[str, Any]], top: int) -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per pair: its title, the rows of its table, and its critical-path rows (the bound_by rows
    that split the median step's change)."""
    out = []
    for pair in pairs:
        rows = pair["rows"]
        scal = [r for r in rows if r["metric"] not in ("category", "bound_by", *GROUPS)]
        cats = [r for r in rows if r["metric"] == "category"]
        bound = [r for r in rows if r["metric"] == "bound_by"]
        groups = [r for r in rows if r["metric"] in GROUPS]
        groups.sort(key=lambda r: -abs(r.get("delta") or 0.0) * max(r.get("cur_n") or 1, r.get("base_n") or 1))
        title = f"{pair['base']} -> {pair['current']}" + (f" [rank {pair['rank']}]" if pair.get("rank") is not None else "")
        out.append((title, scal + cats + groups[:top], bound))
    return out


def bound_split(bound: list[dict[str, Any]]) -> tuple[float, float, list[tuple[str, float, float, float, float | None]]]:
    """The median step's change split along its critical path: the step before and after, and per
    category that moved (label, baseline, current, delta, % of the change or None), largest first."""
    base = sum(r["base_median"] or 0.0 for r in bound)
    cur = sum(r["cur_median"] or 0.0 for r in bound)
    change = cur - base
    rows = []
    for r in sorted(bound, key=lambda r: -abs(r["delta"] or 0.0)):
        d = r["delta"] or 0.0
        if abs(d) < MIN_EFFECT["time"][0] and not r["base_median"] and not r["cur_median"]:
            continue
        pct = 100.0 * d / change if abs(change) > 0 else None
        rows.append((r["label"], r["base_median"] or 0.0, r["cur_median"] or 0.0, d, pct))
    return base, cur, rows


def share_text(pct: float | None) -> str:
    return "n/a" if pct is None else ("0%" if abs(pct) < 0.5 else f"{pct:+.0f}%")


def step_change_text(base: float, cur: float) -> str:
    change = cur - base
    return f"{fmt_duration(base)} -> {fmt_duration(cur)} ({'+' if change >= 0 else '-'}{fmt_duration(abs(change))})"


def _bound_lines(bound: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str, str, str, str]]]:
    """The critical-path split as text: a heading and a row of cells per category that moved."""
    base, cur, split = bound_split(bound)
    head = f"median step {step_change_text(base, cur)}, split along its critical path:"
    rows = [(label, fmt_duration(b), fmt_duration(c), ("+" if d > 0 else "") + fmt_duration(d), share_text(pct)) for label, b, c, d, pct in split]
    return head, rows


def row_label(r: dict[str, Any]) -> str:
    m: str = r["metric"]
    if m == "category":
        return f"category {r['key']}"
    if m == "bound_by":
        return f"bound by {r['label']}"
    if m in GROUPS:
        tag = {"new_group": "NEW ", "removed_group": "GONE "}.get(m, "")
        ren = f" (was {r['renamed_from']})" if r.get("renamed_from") else ""
        return f"{tag}{r['key']}{ren}"
    return m


def _short_label(r: dict[str, Any]) -> str:
    """A kernel group for the text table: the kernel's short name first (what tells two groups
    apart), then its op and input dims; the top-level op and full names are in the other formats."""
    m = r["metric"]
    if m not in GROUPS or not r.get("kernel"):
        return row_label(r)
    from perflint.kernelnames.parse import short_name

    tag = {"new_group": "NEW ", "removed_group": "GONE "}.get(m, "")
    ren = f" (was {short_name(r['renamed_from'])})" if r.get("renamed_from") else ""
    where = " ".join(x for x in (r.get("op") or "", _dims(r.get("input_dims"))) if x)
    return f"{tag}{short_name(r['kernel'])}{ren}" + (f" @ {where}" if where else "")


def _dims(dims: Any) -> str:
    """Input dims as 32x256x14x14: shapes only (the empty entries of scalars and None are dropped)."""
    if not isinstance(dims, list):
        return str(dims or "")
    shapes = ["x".join(str(n) for n in d) for d in dims if isinstance(d, list) and d]
    return f"({', '.join(shapes)})" if shapes else ""


def _middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    head = (width - 3 + 1) // 2
    return text[:head] + "..." + text[len(text) - (width - 3 - head) :]


def fit_labels(labels: list[str], width: int = LABEL_WIDTH) -> list[str]:
    """Labels shortened in the middle (the op at the start, the kernel at the end both stay), each
    as wide as it takes to differ from every other one."""
    widths = [width] * len(labels)
    while True:
        out = [_middle(t, w) for t, w in zip(labels, widths)]
        seen: dict[str, list[int]] = {}
        for i, t in enumerate(out):
            seen.setdefault(t, []).append(i)
        clash = [i for same in seen.values() if len(set(labels[j] for j in same)) > 1 for i in same if out[i] != labels[i]]
        if not clash:
            return out
        for i in clash:
            widths[i] += 20


def render_diff_text(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 15) -> str:
    lines = []
    for pair, (title, rows, bound) in zip(pairs, sections(pairs, top)):
        labels = fit_labels([_short_label(r) for r in rows])
        w = max([LABEL_WIDTH, *map(len, labels)])
        lines.append(f"== {title}")
        if basis_text(pair):
            lines.append(f"  compared {basis_text(pair)}")
        lines.append(f"  {'metric':<{w}} {'baseline':>10} {'current':>10} {'delta':>10} {'pct':>8}  change")
        for r, label in zip(rows, labels):
            lines.append(
                f"  {label:<{w}} {value_text(r, r['base_median']):>10} {value_text(r, r['cur_median']):>10} "
                f"{value_text(r, r['delta'], True):>10} "
                f"{_pct(r['delta_pct']):>8}  {change_text(r, alpha)}"
            )
        if bound:
            head, brows = _bound_lines(bound)
            lines.append(f"  {head}")
            for label, b, c, d, share in brows:
                lines.append(f"    {label:<{w - 2}} {b:>10} {c:>10} {d:>10} {share:>8}  of the change")
    lines.append(
        f"medians over analysis steps; same: below the minimum effect ({MIN_EFFECT_TEXT}); "
        f"significance: one-sided Mann-Whitney U, * = p < {alpha:g}"
    )
    return "\n".join(lines) + "\n"


def render_diff_markdown(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 15) -> str:
    out = ["# perflint diff", ""]
    for pair, (title, rows, bound) in zip(pairs, sections(pairs, top)):
        out += [f"## {title}", ""]
        if basis_text(pair):
            out += [f"Compared {basis_text(pair)}.", ""]
        out += ["| metric | baseline | current | delta | % | change |", "|---|---:|---:|---:|---:|---|"]
        for r in rows:
            label = row_label(r).replace("|", "\\|")
            out.append(
                f"| {label} | {value_text(r, r['base_median'])} | {value_text(r, r['cur_median'])} | {value_text(r, r['delta'], True)} | "
                f"{_pct(r['delta_pct'])} | {change_text(r, alpha)} |"
            )
        out.append("")
        if bound:
            head, brows = _bound_lines(bound)
            out += [f"The {head}", "", "| critical path | baseline | current | delta | share of the change |", "|---|---:|---:|---:|---:|"]
            out += [f"| {label} | {b} | {c} | {d} | {share} |" for label, b, c, d, share in brows]
            out.append("")
    out.append(
        f"Medians over analysis steps; same: below the minimum effect ({MIN_EFFECT_TEXT}); significance: one-sided Mann-Whitney U, * = p < {alpha:g}."
    )
    return "\n".join(out) + "\n"


def render_diff_json(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 0) -> str:
    """Every row (no --top), full names, with its minimum effect, change and significance; each
    pair with its `basis` (what it was compared per: perflint.baseline.compare.basis)."""
    out = [{**p, "rows": [assessed(r, alpha) for r in p["rows"]]} for p in pairs]
    return orjson.dumps({"schema": "perflint-diff", "schema_version": 1, "alpha": alpha, "pairs": out},
                        option=orjson.OPT_INDENT_2).decode() + "\n"
