"""The HTML report (`--html FILE` on check, summary and diff): one self-contained page, CSS, script
and SVG charts inline, nothing fetched. The commands call only what is here; the rest is imported
when a report is asked for, so runs without --html pay nothing for it.

Per trace, the panels (aggregates per kernel, op, step and time bucket) are gathered where the
trace is analysed, in the worker that holds it (perflint.panels); `render` draws them with the findings.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflint.findings import RunResult


def add_html_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", default=None, metavar="FILE", help="also write a self-contained HTML report to FILE")


def with_panels(fn: Any, args: argparse.Namespace, include_edge_steps: bool = False) -> Any:
    """`fn` (summary's per-trace function) gathering the report's panels too when `args.html` asks
    for a report."""
    if not getattr(args, "html", None):
        return fn
    from perflint.panels import SummaryWithPanels

    return SummaryWithPanels(fn, include_edge_steps)


def check_panels(args: argparse.Namespace) -> Any:
    """What adds the report's panels to each checked trace's result (`extend` of a check run)
    when `args.html` asks for a report, else None."""
    if not getattr(args, "html", None):
        return None
    from perflint.panels import add_panels

    return add_panels


def write_check(path: str | None, result: RunResult) -> None:
    if path:
        from perflint.report.html.render import render_check, write

        write(path, render_check(result))


def write_summary(path: str | None, traces: list[dict[str, Any]], errors: list[str]) -> None:
    """Takes the panels out of the summary dicts (`with_panels` put them there) and writes the page."""
    panels = [t.pop("_html") for t in traces if "_html" in t]
    if path:
        from perflint.report.html.render import render_summary, write

        write(path, render_summary(panels, errors))


def write_diff(path: str | None, base: dict[str, Any], cur: dict[str, Any], pairs: list[dict[str, Any]], alpha: float, top: int) -> None:
    if path:
        from perflint.report.html.render import render_diff, write

        write(path, render_diff(base, cur, pairs, alpha, top))
