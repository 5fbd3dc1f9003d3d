"""`perflint check`: run the rules over traces and gate CI on the findings."""

from __future__ import annotations

import argparse
import functools
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

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.engine.run import ActiveRule
    from perflint.findings import RunResult
    from perflint.model import Trace

# The rules and analysis modules are imported by `execute`, after the trace's read has begun: a
# big trace decodes in worker processes meanwhile (pipeline.Prepared).


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="lint traces with the rules; exit 1 when findings reach --fail-on")
    add_check_options(p)


def _check_one(
    trace: Trace,
    active: list[ActiveRule],
    include_edge_steps: bool,
    baseline: Any = None,
    allow_mismatch: bool = False,
    roots: tuple[str, ...] = (),
) -> Any:
    from perflint.engine.run import check_trace
    from perflint.identity import trace_role

    return check_trace(trace, active, include_edge_steps, baseline, allow_mismatch, trace_role(trace.path, roots))


def execute(args: argparse.Namespace, cfg: Config, prepared: Prepared | None = None) -> RunResult:
    """The run's result; `prepared`: the traces, their read possibly begun (else found here)."""
    from perflint.commands.baseline_io import apply_accepted, load_accepted, load_baseline
    from perflint.config import apply_suppressions, select_rules
    from perflint.engine.loader import load_rules
    from perflint.engine.run import check_run
    from perflint.findings import RunResult, SkippedFile

    rules = load_rules(cfg.rule_dirs + list(args.rule_dir))
    active = select_rules(rules, cfg, args.select, args.ignore, args.extend_select)
    include_edges = bool(args.include_edge_steps or cfg.include_edge_steps)
    # Both files are read before any trace, so a bad one fails fast.
    accepted = load_accepted(args.accepted) if args.accepted else None
    exclude = exclude_of(args, cfg)
    baseline = (
        load_baseline(args.baseline, include_edges, args.input_format, jobs_of(args), budget_of(args), exclude)
        if args.baseline
        else None
    )
    fn = functools.partial(
        _check_one,
        active=active,
        include_edge_steps=include_edges,
        baseline=baseline,
        allow_mismatch=args.allow_device_mismatch,
        roots=tuple(args.paths),
    )
    if prepared is None:
        prepared = Prepared(args.paths, args.input_format, jobs_of(args), executor_of(args), budget_of(args), exclude)
    try:
        outcomes = prepared.run(fn)
    finally:
        prepared.close()
    report_errors(outcomes, args.debug)
    traces = [o.result for o in outcomes if o.error is None]
    run_findings, run_statuses = check_run(traces, active)
    result = RunResult(
        traces=traces,
        errors=[o.error for o in outcomes if o.error],
        run_findings=run_findings,
        run_statuses=run_statuses,
        rules=[{**ar.rule.dump(), "severity": ar.severity, "params": ar.params} for ar in active],
        fail_on=args.fail_on or cfg.fail_on or "error",
        skipped=[SkippedFile(p, why) for p, why in prepared.skipped],
    )
    by_code = {ar.code: ar.rule for ar in active}
    result.notices.extend(apply_suppressions(result.all_findings(), by_code, cfg))
    if accepted is not None:
        apply_accepted(result, accepted, args.accepted)
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
    prepared = Prepared(args.paths, args.input_format, jobs_of(args), executor_of(args), budget_of(args), exclude_of(args, cfg))
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
    for note in result.notices:
        print(f"perflint: notice: {note}", file=sys.stderr)
    code = result.exit_code()  # 2 (errors) outranks 1 (gate)
    if args.exit_zero and code == 1:
        return 0
    return code
