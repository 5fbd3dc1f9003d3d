"""Reports render a finished `RunResult`; they never read traces.

`REPORTERS` is the explicit registry (format name -> render function); third parties add
formats through the `perflint.reporters` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perflint.findings import RunResult


@dataclass(frozen=True)
class ReportOptions:
    max_bytes: int | None = None  # markdown budget (default 1 MiB, GitHub's job-summary limit)
    color: bool = False  # ANSI colour in the text report (a terminal, and NO_COLOR unset)
    root: str | None = None  # SARIF/annotation paths are made relative to this (default: cwd)


Reporter = Callable[[RunResult, ReportOptions], str]


def _registry() -> dict[str, Reporter]:
    from perflint.report.json_report import render_json
    from perflint.report.text import render_text

    reg: dict[str, Reporter] = {"text": render_text, "json": render_json}
    for mod, fn, name in (
        ("perflint.report.junit", "render_junit", "junit"),
        ("perflint.report.markdown", "render_markdown", "markdown"),
        ("perflint.report.sarif", "render_sarif", "sarif"),
        ("perflint.report.github", "render_github", "github"),
    ):
        try:
            module = __import__(mod, fromlist=[fn])
        except ModuleNotFoundError:
            continue
        reg[name] = getattr(module, fn)
    from importlib.metadata import entry_points

    for ep in entry_points(group="perflint.reporters"):
        reg[ep.name] = ep.load()
    return reg


REPORTERS: dict[str, Reporter] = _registry()
