"""The runs over traces that the CLI and the Python API share: a check (`run_check`), a summary
(`run_summary`) and a snapshot (`run_snapshot`, and `load_baseline`, which reads a snapshot file
or snapshots traces). The commands add argument parsing and printing, the API its keyword
arguments and its result object; what a run finds worth saying comes back in its result, never
printed here.

The rules and analysis modules are imported inside the functions, after the traces' reads have
begun (pipeline.Prepared): a big trace decodes in worker processes meanwhile.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from perflint.errors import NOTHING_TO_CHECK, InputError
from perflint.options import CheckOptions, budget, check_choices, path_or_none, selectors

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.engine.run import ActiveRule
    from perflint.facts import Context
    from perflint.findings import RunResult, TraceResult
    from perflint.model import Trace
    from perflint.pipeline import Executor, Outcome, Prepared


def jobs_or_all(jobs: int | None) -> int:
    """`jobs` worker processes, or one per core when not given."""
    from perflint.pipeline import default_jobs

    return jobs if jobs and jobs > 0 else default_jobs()


def executor_of(opts: CheckOptions, debug: bool = False) -> Executor:
    """Where per-trace work runs; `debug` keeps dask's own log lines."""
    from perflint.pipeline import Executor

    check_choices(opts)
    return Executor(opts.executor, opts.scheduler, opts.timeout, debug)


def _excluded(opts: CheckOptions, cfg: Config | None) -> list[str]:
    """The option's globs, then the config's."""
    return [*opts.exclude, *(cfg.exclude if cfg is not None else [])]


def _edge_steps(opts: CheckOptions, cfg: Config | None) -> bool:
    return bool(opts.include_edge_steps or (cfg is not None and cfg.include_edge_steps))


def check_one(
    trace: Trace,
    active: list[ActiveRule],
    include_edge_steps: bool,
    baseline: dict[str, Any] | None = None,
    allow_mismatch: bool = False,
    roots: tuple[str, ...] = (),
    extend: Callable[[Context, TraceResult], None] | None = None,
) -> TraceResult:
    """The rules over one trace, in its context: the run's options and the trace's entry of the
    baseline; `extend(ctx, result)` adds to the result."""
    from perflint.baseline.identity import trace_role
    from perflint.engine.run import check_trace
    from perflint.facts import Context

    against = None
    if baseline is not None:
        from perflint.baseline.trace_baseline import trace_baseline

        against = trace_baseline(baseline, trace, allow_mismatch)
    ctx = Context(trace, include_edge_steps, against)
    result = check_trace(ctx, active, trace_role(trace.path, roots))
    if extend is not None:
        extend(ctx, result)
    return result


def prepare(paths: list[str], opts: CheckOptions, cfg: Config | None = None, debug: bool = False) -> Prepared:
    """The traces found (the config's excludes too) and their reads begun (see pipeline.Prepared)."""
    from perflint.pipeline import Prepared

    return Prepared(paths, opts.input_format, jobs_or_all(opts.jobs), executor_of(opts, debug), budget(opts.memory_budget), _excluded(opts, cfg))


@dataclass
class SnapshotRun:
    """A snapshot of traces: the document (perflint-snapshot), one line per trace that could not
    be read, and the files a directory scan passed over, with the reason."""

    document: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def run_snapshot(paths: list[str], opts: CheckOptions, cfg: Config | None = None, debug: bool = False) -> SnapshotRun:
    """The snapshot of the traces under `paths`, read as `opts` and `cfg` say."""
    from perflint.baseline.snapshot import snapshot_document, snapshot_of

    prepared = prepare(paths, opts, cfg, debug)
    fn = functools.partial(snapshot_of, include_edge_steps=_edge_steps(opts, cfg))
    try:
        outcomes = prepared.run(fn)
    finally:
        prepared.close()
    snaps = [o.result for o in outcomes if o.error is None]
    return SnapshotRun(snapshot_document(snaps), [o.error for o in outcomes if o.error], list(prepared.skipped))


def load_baseline(path: str, opts: CheckOptions, cfg: Config | None = None) -> SnapshotRun:
    """A snapshot file, or a trace / directory of traces snapshotted on the fly (in local worker
    processes, whatever executor the run's own traces use); a trace that cannot be read makes
    the whole baseline unusable (InputError)."""
    from perflint.baseline.files import is_snapshot_file, read_snapshot

    if is_snapshot_file(path):
        return SnapshotRun(read_snapshot(path))
    if not os.path.exists(path):
        raise InputError(path, "baseline not found")
    snap = run_snapshot([path], replace(opts, executor="process", scheduler=None), cfg)
    if snap.errors:
        raise InputError(path, f"cannot use as baseline: {snap.errors[0]}")
    return snap


def skipped_notice(path: str, why: str) -> str:
    """The notice of a file a directory scan passed over."""
    return f"skipped {path}: {why}"


def run_check(
    paths: list[str],
    opts: CheckOptions,
    cfg: Config | None = None,
    prepared: Prepared | None = None,
    extend: Callable[[Context, TraceResult], None] | None = None,
) -> tuple[RunResult, list[Outcome]]:
    """The run's result and the per-trace outcomes (their errors, with tracebacks for --debug).
    `cfg`: the config (else read as `opts.config` says); `prepared`: the traces, their read
    possibly begun (else found here); `extend(ctx, result)`: adds to each trace's result (a
    report that gathers more per trace; picklable)."""
    from perflint.baseline.accepted import apply_accepted, load_accepted
    from perflint.config import load_config
    from perflint.engine.loader import load_rules
    from perflint.engine.run import check_run
    from perflint.engine.waits import split_waits
    from perflint.findings import RunResult, SkippedFile
    from perflint.selection import apply_suppressions, select_rules
    from perflint.stepmodel.comm_table import add_waits
    from perflint.stepmodel.join import RankEntry, caused_waits, join_ranks, late_fields

    check_choices(opts)
    if cfg is None:
        cfg = load_config(path_or_none(opts.config))
    rules = load_rules(cfg.rule_dirs + [os.fspath(d) for d in opts.rule_dirs])
    active = select_rules(
        rules, cfg, selectors(opts.select, "select"), selectors(opts.ignore, "ignore"), selectors(opts.extend_select, "extend_select")
    )
    # Both files are read before any trace, so a bad one fails fast.
    accepted_path = path_or_none(opts.accepted)
    accepted = load_accepted(accepted_path) if accepted_path else None
    baseline_path = path_or_none(opts.baseline)
    baseline = load_baseline(baseline_path, opts, cfg) if baseline_path else None
    fn: Callable[[Trace], Any] = functools.partial(
        check_one,
        active=active,
        include_edge_steps=_edge_steps(opts, cfg),
        baseline=None if baseline is None else baseline.document,
        allow_mismatch=opts.allow_device_mismatch,
        roots=tuple(paths),
        extend=extend,
    )
    if prepared is None:
        prepared = prepare(paths, opts, cfg)
    try:
        outcomes = prepared.run(fn)
    finally:
        prepared.close()
    traces = [o.result for o in outcomes if o.error is None]
    entries = [RankEntry(t.path, t.rank, t.collectives, t.metrics["step_model"]) for t in traces]
    join_ranks(entries)
    for t in traces:
        add_waits(t.metrics["communication"], t.collectives, t.metrics["step_model"].get("ranks"))
    caused = caused_waits(entries)
    for t in traces:
        if t.rank_row and t.rank is not None:
            t.rank_row["late_cost_us"] = caused.get((t.path, t.rank))
            t.rank_row.update(late_fields(t.metrics["step_model"].get("ranks")))
    split_waits(traces, active)
    run_findings, run_statuses = check_run(traces, active)
    result = RunResult(
        traces=traces,
        errors=[o.error for o in outcomes if o.error],
        run_findings=run_findings,
        run_statuses=run_statuses,
        rules=[{**ar.rule.dump(), "severity": ar.severity, "params": ar.params} for ar in active],
        fail_on=opts.fail_on or cfg.fail_on or "error",
        skipped=[SkippedFile(p, why) for p, why in prepared.skipped],
    )
    if paths and not traces and not result.errors and result.skipped:
        # Every file found turned out not to be a trace: a gate that checked nothing must not pass.
        result.errors.append(f"{' '.join(paths)}: {NOTHING_TO_CHECK}: no trace among the files found ({len(result.skipped)} skipped)")
    if baseline is not None:
        result.notices.extend(skipped_notice(p, why) for p, why in baseline.skipped)
    by_code = {ar.code: ar.rule for ar in active}
    result.notices.extend(apply_suppressions(result.all_findings(), by_code, cfg))
    if accepted is not None and accepted_path:
        apply_accepted(result, accepted, accepted_path)
    return result, outcomes


def _summary_one(trace: Trace, include_edge_steps: bool, timeline: bool, active: list[ActiveRule]) -> dict[str, Any]:
    from perflint.engine.run import check_trace
    from perflint.facts import Context
    from perflint.metrics.step_breakdown import step_breakdown
    from perflint.trace_summary import add_views, summarize

    out = summarize(trace, include_edge_steps=include_edge_steps)
    # What fixing every finding of the built-in rules would save: the check's what-if of them all.
    checked = check_trace(Context(trace, include_edge_steps=include_edge_steps), active)
    out["step_model"]["what_if_all"] = checked.metrics["step_model"]["what_if_all"]
    out["steps"]["breakdown"], why = step_breakdown(trace)
    if why and out["steps"]["median_us"] is not None:  # without steps the summary already says why
        out["warnings"].append(why)
    add_views(trace, out)
    if timeline:
        from perflint.metrics.tb_gpu import gpu_timeline

        out["timeline"] = gpu_timeline(trace)
    return out


def run_summary(
    prepared: Prepared,
    include_edge_steps: bool = False,
    timeline: bool = False,
    wrap: Callable[[Callable[[Trace], Any]], Callable[[Trace], Any]] | None = None,
) -> list[Outcome]:
    """One outcome per trace whose result is its summary (the `summary --format json` entry);
    `wrap(fn)`: the per-trace function extended (a report that gathers more per trace)."""
    try:
        from perflint import trace_summary  # noqa: F401 (imported while the workers decode)
        from perflint.config import Config
        from perflint.engine.loader import load_rules
        from perflint.selection import select_rules

        active = select_rules(load_rules(), Config())
        fn: Callable[[Trace], Any] = functools.partial(_summary_one, include_edge_steps=include_edge_steps, timeline=timeline, active=active)
        outcomes = prepared.run(wrap(fn) if wrap is not None else fn)
    finally:
        prepared.close()
    from perflint.stepmodel.comm_table import join_tables

    join_tables([o.result for o in outcomes if o.error is None])
    return outcomes


def _comms_one(trace: Trace, include_edge_steps: bool) -> dict[str, Any]:
    from perflint.stepmodel import step_model
    from perflint.stepmodel.comm_table import comms

    doc, rows = comms(step_model(trace, include_edge_steps), on_path=False)
    return {"path": trace.path, "rank": trace.rank, "label": trace.label, "communication": doc, "_collectives": rows}


def run_comms(prepared: Prepared, include_edge_steps: bool = False) -> list[Outcome]:
    """One outcome per trace whose result is {"path", "rank", "label", "communication"}: its
    per-collective table, the ranks of each run joined (`perflint comms`). No replay: the join's
    waits need none."""
    try:
        fn: Callable[[Trace], Any] = functools.partial(_comms_one, include_edge_steps=include_edge_steps)
        outcomes = prepared.run(fn)
    finally:
        prepared.close()
    from perflint.stepmodel.comm_table import join_tables

    join_tables([o.result for o in outcomes if o.error is None])
    return outcomes
