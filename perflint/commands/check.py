"""`perflint check`: run the rules over traces and gate CI on the findings."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import TYPE_CHECKING, Any

from perflint.commands.common import add_input_options, budget_of, exclude_of, executor_of, jobs_of, report_errors
from perflint.errors import UsageError
from perflint.pipeline import Prepared
from perflint.report import REPORTERS, ReportOptions
from perflint.report.html import add_html_option, with_panels, write_check

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.engine.run import ActiveRule
    from perflint.findings import RunResult
    from perflint.model import Trace

# The rules and analysis modules are imported by `execute`, after the trace's read has begun: a
# big trace decodes in worker processes meanwhile (pipeline.Prepared).


def _csv(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="lint traces with the rules; exit 1 when findings reach --fail-on")
    add_input_options(p)
    p.add_argument("--config", default=None, metavar="FILE", help="config file (default: .perflint.yaml / pyproject.toml)")
    p.add_argument("--select", type=_csv, default=None, metavar="SEL,...", help="only these rules (code, prefix, name, group)")
    p.add_argument("--ignore", type=_csv, default=None, metavar="SEL,...", help="skip these rules")
    p.add_argument("--extend-select", type=_csv, default=None, metavar="SEL,...", help="add rules to the selection")
    p.add_argument("--rule-dir", action="append", default=[], metavar="DIR", help="extra directory of YAML rules")
    p.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default=None)
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when the gate fails (errors still exit 2)")
    p.add_argument("--format", choices=sorted(REPORTERS), default=None, help="report on stdout (default: text)")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write the --format report to FILE")
    for fmt in ("json", "junit", "markdown", "sarif"):
        p.add_argument(f"--{fmt}", default=None, metavar="FILE", help=f"also write a {fmt} report to FILE")
    add_html_option(p)
    add_gate_options(p)
    p.add_argument("--max-bytes", type=_positive, default=None, metavar="N", help="markdown size budget (default 1 MiB)")


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return n


def add_gate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline", default=None, metavar="FILE|TRACE|DIR", help="snapshot (or traces) to compare with: REG rules run"
    )
    p.add_argument("--allow-device-mismatch", action="store_true", help="compare with a baseline from another device")
    p.add_argument("--accepted", default=None, metavar="FILE", help="accepted findings (perflint accept): fail only on new ones")


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
    fn = with_panels(fn, args, include_edges)
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


def _use_color(args: argparse.Namespace) -> bool:
    if args.output or "NO_COLOR" in os.environ:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def run(args: argparse.Namespace) -> int:
    targets = [(name, getattr(args, name)) for name in ("json", "junit", "markdown", "sarif") if getattr(args, name)]
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
    opts = ReportOptions(max_bytes=args.max_bytes, color=_use_color(args))
    fmt = args.format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
    text = REPORTERS[fmt](result, opts)
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    plain = ReportOptions(max_bytes=args.max_bytes, root=opts.root)
    for fmt_name, target in targets:
        _write(target, REPORTERS[fmt_name](result, plain))
    write_check(getattr(args, "html", None), result)
    for note in result.notices:
        print(f"perflint: notice: {note}", file=sys.stderr)
    code = result.exit_code()  # 2 (errors) outranks 1 (gate)
    if args.exit_zero and code == 1:
        return 0
    return code
