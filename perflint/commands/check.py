"""`perflint check`: run the rules over traces and gate CI on the findings."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from perflint.commands.common import REPORT_FILES, add_check_options, add_report_options, options_of, report_errors, report_options
from perflint.errors import UsageError
from perflint.report import REPORTERS
from perflint.report.html import add_html_option, check_panels, write_check
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


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    # The job summary file is shared by every step of a job: append, never truncate it.
    append = os.environ.get("GITHUB_STEP_SUMMARY") == path
    try:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(path, f"cannot write the report: {exc.strerror or exc}") from None


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
    text = REPORTERS[fmt](result, opts)
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    plain = report_options(args, color=False)
    for fmt_name, target in targets:
        _write(target, REPORTERS[fmt_name](result, plain))
    write_check(getattr(args, "html", None), result)
    for note in result.notices:
        print(f"perflint: notice: {note}", file=sys.stderr)
    code = result.exit_code()  # 2 (errors) outranks 1 (gate)
    if args.exit_zero and code == 1:
        return 0
    return code
