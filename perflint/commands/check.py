"""`perflint check`: run the rules over traces and gate CI on the findings (DESIGN §7)."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any

from perflint.commands.common import add_input_options, jobs_of, report_errors
from perflint.config import Config, apply_suppressions, load_config, select_rules
from perflint.engine.loader import load_rules
from perflint.engine.run import ActiveRule, check_run, check_trace
from perflint.findings import RunResult
from perflint.model import Trace
from perflint.pipeline import run as run_pipeline
from perflint.report import REPORTERS, ReportOptions


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
    p.add_argument("--max-bytes", type=int, default=None, metavar="N", help="markdown size budget (default 1 MiB)")


def _check_one(trace: Trace, active: list[ActiveRule], include_edge_steps: bool) -> Any:
    return check_trace(trace, active, include_edge_steps)


def execute(args: argparse.Namespace, cfg: Config) -> RunResult:
    rules = load_rules(cfg.rule_dirs + list(args.rule_dir))
    active = select_rules(rules, cfg, args.select, args.ignore, args.extend_select)
    include_edges = bool(args.include_edge_steps or cfg.include_edge_steps)
    fn = functools.partial(_check_one, active=active, include_edge_steps=include_edges)
    outcomes = run_pipeline(args.paths, fn, args.input_format, jobs_of(args))
    report_errors(outcomes, args.debug)
    traces = [o.result for o in outcomes if o.error is None]
    run_findings, run_statuses = check_run(traces, active)
    result = RunResult(
        traces=traces,
        errors=[o.error for o in outcomes if o.error],
        run_findings=run_findings,
        run_statuses=run_statuses,
        rules=[{**ar.rule.model_dump(by_alias=True), "severity": ar.severity, "params": ar.params} for ar in active],
        fail_on=args.fail_on or cfg.fail_on or "error",
    )
    by_code = {ar.code: ar.rule for ar in active}
    result.notices.extend(apply_suppressions(result.all_findings(), by_code, cfg))
    return result


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "a" if os.environ.get("GITHUB_STEP_SUMMARY") == path else "w", encoding="utf-8") as fh:
        fh.write(text)


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    result = execute(args, cfg)
    opts = ReportOptions(max_bytes=args.max_bytes)
    fmt = args.format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
    text = REPORTERS[fmt](result, opts)
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    for fmt_name in ("json", "junit", "markdown", "sarif"):
        target = getattr(args, fmt_name)
        if target:
            _write(target, REPORTERS[fmt_name](result, opts))
    for note in result.notices:
        print(f"perflint: notice: {note}", file=sys.stderr)
    code = result.exit_code()
    if args.exit_zero and code == 1:
        return 0
    return code
