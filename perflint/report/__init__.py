"""Reports render a finished `RunResult`; they never read traces.

`REPORTERS` is the explicit registry (format name -> render function); third parties add
formats through the `perflint.reporters` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from perflint.findings import RunResult


@dataclass(frozen=True)
class ReportOptions:
    max_bytes: int | None = None  # markdown budget (default 1 MiB, GitHub's job-summary limit)
    color: bool = False  # ANSI colour in the text report (a terminal, and NO_COLOR unset)
    root: str | None = None  # SARIF/annotation/Code Quality paths are made relative to this (default: cwd)
    width: int | None = None  # the text report wraps to this many columns; None: one line per item
    # The unreadable traces' lines already went to the stream this report is printed on (stderr
    # and stdout are one terminal or file): the text reports count them without repeating them.
    errors_shown: bool = False


Reporter = Callable[[RunResult, ReportOptions], str]


_BUILTIN: dict[str, tuple[str, str]] = {
    "text": ("perflint.report.text", "render_text"),
    "json": ("perflint.report.json_report", "render_json"),
    "junit": ("perflint.report.junit", "render_junit"),
    "markdown": ("perflint.report.markdown", "render_markdown"),
    "sarif": ("perflint.report.sarif", "render_sarif"),
    "github": ("perflint.report.github", "render_github"),
    "concise": ("perflint.report.concise", "render_concise"),
    "gitlab": ("perflint.report.gitlab", "render_gitlab"),
}


class _Registry(Mapping[str, Reporter]):
    """Format name -> renderer, imported on first use: a run renders one or two formats, and
    importing all of them (junit_xml, the SARIF model) is start-up time every run pays."""

    def __init__(self) -> None:
        from perflint.plugins import entry_points

        self._spec: dict[str, Any] = dict(_BUILTIN)
        for ep in entry_points(group="perflint.reporters"):
            self._spec[ep.name] = ep
        self._loaded: dict[str, Reporter] = {}

    def __getitem__(self, name: str) -> Reporter:
        got = self._loaded.get(name)
        if got is None:
            spec = self._spec[name]
            if isinstance(spec, tuple):
                import importlib

                got = getattr(importlib.import_module(spec[0]), spec[1])
            else:
                got = spec.load()
            self._loaded[name] = got
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._spec)

    def __len__(self) -> int:
        return len(self._spec)


    def builtin(self, name: str) -> bool:
        """`name` is perflint's own format (no plugin took its name)."""
        return self._spec.get(name) == _BUILTIN.get(name)


REPORTERS: _Registry = _Registry()
