"""Rendering `perflint diff` rows (text, markdown, json)."""

from __future__ import annotations

from typing import Any

import orjson

UNITS = {"step_time_us": "us", "gpu_busy_pct": "%", "memcpy_bytes": "B", "peak_memory_bytes": "B", "category": "us"}


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


def _sig(r: dict[str, Any], alpha: float) -> str:
    """Two one-sided tests: the smaller p says which way the run moved."""
    pw, pb = r.get("p_value"), r.get("p_better")
    if pw is None or pb is None or r.get("base_n", 0) < 2 or r.get("cur_n", 0) < 2:
        return "n/a"
    if pw <= pb:
        return f"worse p={pw:.3f}{' *' if pw < alpha else ''}"
    return f"better p={pb:.3f}{' *' if pb < alpha else ''}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"


def _sections(pairs: list[dict[str, Any]], top: int) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for pair in pairs:
        rows = pair["rows"]
        scal = [r for r in rows if r["metric"] not in ("category", "kernel_group", "new_group", "removed_group")]
        cats = [r for r in rows if r["metric"] == "category"]
        groups = [r for r in rows if r["metric"] in ("kernel_group", "new_group", "removed_group")]
        groups.sort(key=lambda r: -abs(r.get("delta") or 0.0) * max(r.get("cur_n") or 1, r.get("base_n") or 1))
        title = f"{pair['base']} -> {pair['current']}" + (f" [rank {pair['rank']}]" if pair.get("rank") is not None else "")
        out.append((title, scal + cats + groups[:top]))
    return out


def _label(r: dict[str, Any]) -> str:
    m = r["metric"]
    if m == "category":
        return f"category {r['key']}"
    if m in ("kernel_group", "new_group", "removed_group"):
        tag = {"new_group": "NEW ", "removed_group": "GONE "}.get(m, "")
        ren = f" (was {r['renamed_from'][:40]})" if r.get("renamed_from") else ""
        return f"{tag}{r['key']}{ren}"
    return m


def render_diff_text(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 15) -> str:
    lines = []
    for title, rows in _sections(pairs, top):
        lines.append(f"== {title}")
        lines.append(f"  {'metric':<60} {'baseline':>10} {'current':>10} {'delta':>10} {'pct':>8}  significance")
        for r in rows:
            label = _label(r)
            label = label if len(label) <= 60 else label[:57] + "..."
            lines.append(
                f"  {label:<60} {_num(r['base_median']):>10} {_num(r['cur_median']):>10} {_num(r['delta']):>10} "
                f"{_pct(r['delta_pct']):>8}  {_sig(r, alpha)}"
            )
    lines.append("medians over analysis steps; significance: one-sided Mann-Whitney U, * = p < %.2f" % alpha)
    return "\n".join(lines) + "\n"


def render_diff_markdown(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 15) -> str:
    out = ["# perflint diff", ""]
    for title, rows in _sections(pairs, top):
        out += [f"## {title}", "", "| metric | baseline | current | delta | % | significance |", "|---|---:|---:|---:|---:|---|"]
        for r in rows:
            label = _label(r).replace("|", "\\|")
            out.append(
                f"| {label} | {_num(r['base_median'])} | {_num(r['cur_median'])} | {_num(r['delta'])} | "
                f"{_pct(r['delta_pct'])} | {_sig(r, alpha)} |"
            )
        out.append("")
    out.append(f"Medians over analysis steps; significance: one-sided Mann-Whitney U, * = p < {alpha}.")
    return "\n".join(out) + "\n"


def render_diff_json(pairs: list[dict[str, Any]], alpha: float = 0.05, top: int = 0) -> str:
    return orjson.dumps({"schema": "perflint-diff", "schema_version": 1, "alpha": alpha, "pairs": pairs},
                        option=orjson.OPT_INDENT_2).decode() + "\n"
