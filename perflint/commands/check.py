"""`perflint check`: run the rules over traces and gate CI on the findings."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from perflint.commands.common import (
    REPORT_FILES,
    add_check_options,
    budget_of,
    exclude_of,
    executor_of,
    jobs_of,
    report_errors,
    report_options,
)
from perflint.errors import UsageError
from perflint.pipeline import Prepared
from perflint.report import REPORTERS
from perflint.report.html import add_html_option, check_panels, write_check
from perflint.run import CheckOptions, prepare, run_check

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.findings import RunResult


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="lint traces with the rules; exit 1 when findings reach --fail-on")
    add_check_options(p)
    add_html_option(p)


def options_of(args: argparse.Namespace, cfg: Config) -> CheckOptions:
    """The check run's options from the command line (the config's excludes added)."""
    return CheckOptions(
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        rule_dirs=list(args.rule_dir),
        fail_on=args.fail_on,
        baseline=args.baseline,
        accepted=args.accepted,
        allow_device_mismatch=args.allow_device_mismatch,
        include_edge_steps=args.include_edge_steps,
        input_format=args.input_format,
        jobs=jobs_of(args),
        executor=executor_of(args),
        memory_budget=budget_of(args),
        exclude=exclude_of(args, cfg),
    )


def execute(args: argparse.Namespace, cfg: Config, prepared: Prepared | None = None) -> RunResult:
    """The run's result (perflint.run.run_check); `prepared`: the traces, their read possibly
    begun (else found here). Traces that failed are reported on stderr."""
    result, outcomes = run_check(
        args.paths, options_of(args, cfg), cfg, prepared, extend=check_panels(args)
    )
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

    # The config names files to exclude, so it comes first; then the read begins: a big trace
    # decodes in worker processes while the rules load.
    cfg = load_config(args.config)
    prepared = prepare(args.paths, options_of(args, cfg))
    try:
        result = execute(args, cfg, prepared)
    finally:
        prepared.close()
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
