"""`perflint check`: run the rules over traces and gate CI on the findings."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflint.commands.common import (
    REPORT_FILES,
    add_check_options,
    add_report_options,
    options_of,
    report_errors,
    report_options,
    write_all,
)
from perflint.errors import UsageError
from perflint.report.html import add_html_option, check_panels, write_check
from perflint.report.output import render_output, write_file
from perflint.run import prepare, run_check

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.findings import RunResult


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="lint traces with the rules; exit 1 when findings reach --fail-on")
    add_check_options(p)
    add_report_options(p)
    add_html_option(p)


def execute(args: argparse.Namespace, cfg: Config) -> RunResult:
    """The run's result (perflint.run.run_check). The read begins before the rules load: a big
    trace decodes in worker processes meanwhile. Traces that failed are reported on stderr."""
    opts = options_of(args)
    prepared = prepare(args.paths, opts, cfg, args.debug)
    try:
        result, outcomes = run_check(args.paths, opts, cfg, prepared, extend=check_panels(args))
    finally:
        prepared.close()
    report_errors(outcomes, args.debug)
    return result


def _report(path: str, fmt: str, result: RunResult, opts: Any) -> None:
    _write(path, render_output(fmt, result, opts))


def _write(path: str, text: str | bytes) -> None:
    # The job summary file is shared by every step of a job: append, never truncate it.
    write_file(path, text, "the report", append=os.environ.get("GITHUB_STEP_SUMMARY") == path)


def run(args: argparse.Namespace) -> int:
    targets = [(name, getattr(args, name)) for name in REPORT_FILES if getattr(args, name)]
    outputs = [t for _, t in targets] + ([args.output] if args.output else [])
    dup = {t for t in outputs if t != "-" and outputs.count(t) > 1}
    if dup:
        raise UsageError(sorted(dup)[0], "two reports would write to the same file")
    from perflint.config import load_config

    # The config names files to exclude, so it comes first.
    result = execute(args, load_config(args.config))
    opts = report_options(args)
    fmt = args.format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
    text = render_output(fmt, result, opts)
    plain = report_options(args, color=False)
    writes: list[Callable[[], object]] = [lambda: _write(args.output or "-", text)]
    writes += [functools.partial(_report, t, f, result, plain) for f, t in targets]
    writes.append(lambda: write_check(getattr(args, "html", None), result))
    failed = write_all(writes, args.debug)
    for note in result.notices:
        print(f"perflint: notice: {note}", file=sys.stderr)
    code = 2 if failed else result.exit_code()  # 2 (errors) outranks 1 (gate)
    if args.exit_zero and code == 1:
        return 0
    return code

