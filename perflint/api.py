"""perflint's Python API: `check`, `summary`, `kernels`, `ops` and `load`, for test suites and
notebooks. The `check` and `summary` commands run the same functions (`run_check`,
`run_summary`): the CLI only adds argument parsing and printing.

Errors: a problem that stops the whole run (config, rule selector, baseline or accepted-findings
file, an argument) raises a `PerflintError`; in `check` a trace that cannot be read is reported in
`CheckResult.errors` (exit code 2, like the CLI) while the other traces are still checked. The
functions that return one trace's data (`summary`, `kernels`, `ops`, `load`) raise `InputError`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from perflint.errors import InputError, PerflintError, UsageError

if TYPE_CHECKING:
    from perflint.config import Config
    from perflint.engine.run import ActiveRule
    from perflint.facts import Context
    from perflint.findings import Finding, RunResult, SkippedFile, TraceResult
    from perflint.model import Trace
    from perflint.pipeline import Executor, Outcome, Prepared

FailOn = Literal["error", "warning", "info", "never"]
FAIL_ON: tuple[str, ...] = ("error", "warning", "info", "never")
PathArg = str | os.PathLike[str]
Paths = PathArg | Sequence[PathArg]
Selectors = str | Sequence[str] | None


@dataclass(frozen=True)
class CheckOptions:
    """What a check run takes besides the traces and the config; the CLI fills it from its
    options, `check()` from its arguments."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    rule_dirs: list[str] = field(default_factory=list)
    fail_on: str | None = None  # None: the config's, else "error"
    baseline: str | None = None
    accepted: str | None = None
    allow_device_mismatch: bool = False
    include_edge_steps: bool = False
    input_format: str | None = None
    jobs: int | None = None  # None: all cores
    executor: Executor | None = None
    memory_budget: int | None = None
    exclude: list[str] = field(default_factory=list)  # with the config's `exclude` already added


def path_list(paths: Paths) -> list[str]:
    """One path or a sequence of them, as strings."""
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise UsageError("paths", "no trace file or directory given")
    return out


def _selectors(sel: Selectors, what: str) -> list[str] | None:
    """Selectors as a list: a string is split on commas, like the command line's."""
    if sel is None:
        return None
    items = sel.split(",") if isinstance(sel, str) else list(sel)
    if not all(isinstance(s, str) for s in items):
        raise UsageError(what, "selectors must be strings (rule codes, prefixes, names or groups)")
    return [s.strip() for s in items if s.strip()]


def _jobs(jobs: int | None) -> int:
    from perflint.pipeline import default_jobs

    return jobs if jobs and jobs > 0 else default_jobs()


def _check_one(
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


def prepare(paths: list[str], opts: CheckOptions) -> Prepared:
    """The traces found and their reads begun (see pipeline.Prepared)."""
    from perflint.pipeline import Prepared

    return Prepared(paths, opts.input_format, _jobs(opts.jobs), opts.executor, opts.memory_budget, opts.exclude)


def run_check(
    paths: list[str],
    opts: CheckOptions,
    cfg: Config,
    prepared: Prepared | None = None,
    extend: Callable[[Context, TraceResult], None] | None = None,
) -> tuple[RunResult, list[Outcome]]:
    """The run's result and the per-trace outcomes (their errors, with tracebacks for --debug);
    `prepared`: the traces, their read possibly begun (else found here); `extend(ctx, result)`:
    adds to each trace's result (a report that gathers more per trace; picklable)."""
    # The rules and analysis modules are imported here, after the traces' reads have begun: a
    # big trace decodes in worker processes meanwhile.
    from perflint.commands.baseline_io import apply_accepted, load_accepted, load_baseline
    from perflint.engine.loader import load_rules
    from perflint.engine.run import check_run
    from perflint.findings import RunResult, SkippedFile
    from perflint.selection import apply_suppressions, select_rules

    if opts.fail_on is not None and opts.fail_on not in FAIL_ON:
        raise UsageError("fail_on", f"must be one of {', '.join(FAIL_ON)}, not {opts.fail_on!r}")
    rules = load_rules(cfg.rule_dirs + list(opts.rule_dirs))
    active = select_rules(rules, cfg, opts.select, opts.ignore, opts.extend_select)
    include_edges = bool(opts.include_edge_steps or cfg.include_edge_steps)
    # Both files are read before any trace, so a bad one fails fast.
    accepted = load_accepted(opts.accepted) if opts.accepted else None
    jobs = _jobs(opts.jobs)
    baseline = (
        load_baseline(opts.baseline, include_edges, opts.input_format, jobs, opts.memory_budget, opts.exclude)
        if opts.baseline
        else None
    )
    fn: Callable[[Trace], Any] = functools.partial(
        _check_one,
        active=active,
        include_edge_steps=include_edges,
        baseline=baseline,
        allow_mismatch=opts.allow_device_mismatch,
        roots=tuple(paths),
        extend=extend,
    )
    if prepared is None:
        prepared = prepare(paths, opts)
    try:
        outcomes = prepared.run(fn)
    finally:
        prepared.close()
    traces = [o.result for o in outcomes if o.error is None]
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
    by_code = {ar.code: ar.rule for ar in active}
    result.notices.extend(apply_suppressions(result.all_findings(), by_code, cfg))
    if accepted is not None and opts.accepted:
        apply_accepted(result, accepted, opts.accepted)
    return result, outcomes


def outcome_error(o: Outcome) -> InputError:
    """A failed trace's one-line error as an InputError (its file, its problem)."""
    line = o.error or ""
    head = f"{o.path}: "
    return InputError(o.path, line[len(head) :] if line.startswith(head) else line)


@dataclass
class CheckResult:
    """The outcome of `check`: the findings, the gate's verdict and the CLI's exit code.

    `run` is the full result the reports render (per-trace rule statuses, metrics, notices)."""

    run: RunResult
    errors: list[InputError]  # traces that could not be read or analysed, one each

    @property
    def findings(self) -> list[Finding]:
        """The findings that count for the gate (not suppressed, not accepted), ordered as the
        reports order them (severity, then impact)."""
        from perflint.report._common import ordered

        return ordered(self.run.active_findings())

    @property
    def all_findings(self) -> list[Finding]:
        """Every finding, suppressed and accepted ones included (see `Finding.active`)."""
        return self.run.all_findings()

    @property
    def counts(self) -> dict[str, int]:
        """Active findings per severity ("error", "warning", "info"), plus "suppressed" and
        "accepted": the counts of `check --format json`."""
        from perflint.report._common import full_counts

        return full_counts(self.run)

    @property
    def verdict(self) -> str:
        """"passed", "failed" (the gate: a finding at or above fail_on) or "error" (a trace could
        not be read)."""
        from perflint.report._common import verdict

        return verdict(self.run)

    @property
    def exit_code(self) -> int:
        """What `perflint check` exits with: 0 passed, 1 failed, 2 error."""
        return self.run.exit_code()

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def skipped(self) -> list[SkippedFile]:
        """Files a directory scan passed over, with the reason."""
        return self.run.skipped

    @property
    def skipped_rules(self) -> dict[str, str]:
        """Rule code -> why it was skipped (a capability the trace lacks), over all traces."""
        out: dict[str, str] = {}
        for s in [st for t in self.run.traces for st in t.statuses] + self.run.run_statuses:
            if s.status == "skipped":
                out.setdefault(s.code, s.reason or "")
        return out

    def to_json(self) -> str:
        """The JSON report, as `check --format json` writes it (docs/report-json-schema.md)."""
        return self._render("json")

    def to_text(self) -> str:
        """The text report, as `check` prints it."""
        return self._render("text")

    def _render(self, fmt: str) -> str:
        from perflint.report import REPORTERS, ReportOptions

        return REPORTERS[fmt](self.run, ReportOptions())


def check(
    paths: Paths,
    *,
    select: Selectors = None,
    ignore: Selectors = None,
    fail_on: FailOn | None = None,
    config: PathArg | None = None,
    baseline: PathArg | None = None,
    accepted: PathArg | None = None,
) -> CheckResult:
    """Lint traces with the rules, as `perflint check` does.

    `paths`: trace files or directories (one path or a list). `select` / `ignore`: rule
    selectors (codes, prefixes such as "TC", names, groups), a list or a comma-separated string.
    `fail_on`: the gate's severity floor; None takes the config's, else "error". `config`: a
    config file; None finds .perflint.yaml / pyproject.toml from the working directory, as the CLI
    does. `baseline`: a snapshot or traces to compare with (REG rules run). `accepted`: accepted
    findings (`perflint accept`): only new ones fail.

    Raises PerflintError (ConfigError, UsageError, InputError) for what stops the whole run; a
    trace that cannot be read is listed in `errors` and makes `exit_code` 2."""
    from perflint.config import load_config

    files = path_list(paths)
    cfg = load_config(None if config is None else os.fspath(config))
    opts = CheckOptions(
        select=_selectors(select, "select"),
        ignore=_selectors(ignore, "ignore"),
        fail_on=fail_on,
        baseline=None if baseline is None else os.fspath(baseline),
        accepted=None if accepted is None else os.fspath(accepted),
        exclude=list(cfg.exclude),
    )
    run, outcomes = run_check(files, opts, cfg)
    return CheckResult(run=run, errors=[outcome_error(o) for o in outcomes if o.error])


def _summary_one(trace: Trace, include_edge_steps: bool, timeline: bool) -> dict[str, Any]:
    from perflint.metrics.step_breakdown import step_breakdown
    from perflint.trace_summary import add_views, summarize

    out = summarize(trace, include_edge_steps=include_edge_steps)
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

        fn: Callable[[Trace], Any] = functools.partial(_summary_one, include_edge_steps=include_edge_steps, timeline=timeline)
        return prepared.run(wrap(fn) if wrap is not None else fn)
    finally:
        prepared.close()


def _raise_first(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        if o.error:
            raise outcome_error(o)


def summary(paths: Paths, *, include_edge_steps: bool = False, timeline: bool = False) -> list[dict[str, Any]]:
    """One dict per trace (rank), with the keys of `summary --format json`'s "traces" entries.
    Raises InputError for the first trace that cannot be read."""
    from perflint.pipeline import Prepared

    prepared = Prepared(path_list(paths), None, _jobs(None))
    outcomes = run_summary(prepared, include_edge_steps, timeline)
    _raise_first(outcomes)
    return [o.result for o in outcomes]


def _guard(path: str, work: Callable[[], Any]) -> Any:
    """`work()`, with anything but a PerflintError turned into the InputError the CLI would print
    for that trace (the original exception chained, for debugging)."""
    try:
        return work()
    except PerflintError:
        raise
    except MemoryError:
        raise InputError(path, "out of memory while reading the trace") from None
    except Exception as exc:
        raise InputError(path, f"internal error while analysing the trace ({type(exc).__name__}: {exc})") from exc


def load(path: PathArg) -> Trace:
    """The trace in `path`, read and linked (ops, launches and kernels joined): the model that
    metrics and rules read (perflint.model.Trace). InputError when the file holds several ranks."""
    from perflint.graph.build import link
    from perflint.readers import read_trace

    p = os.fspath(path)
    if os.path.isdir(p) and not _claimed(p):
        raise InputError(p, "is a directory: load() reads one trace file")
    return _guard(p, lambda: link(read_trace(p)))  # type: ignore[no-any-return]


def _claimed(path: str) -> bool:
    """A directory a reader reads whole (a profiler output directory of one run)."""
    from perflint.readers import discover

    files, _, _ = discover([path])
    return files == [path]


def _trace_of(trace: Trace | PathArg) -> Trace:
    from perflint.model import Trace

    return trace if isinstance(trace, Trace) else load(trace)


def kernels(trace: Trace | PathArg) -> list[dict[str, Any]]:
    """One row per kernel launch (docs/api.md lists the columns), in time order."""
    from perflint.tables import kernel_rows

    t = _trace_of(trace)
    return _guard(t.path, lambda: kernel_rows(t))  # type: ignore[no-any-return]


def ops(trace: Trace | PathArg, group_by: str | None = None) -> list[dict[str, Any]]:
    """One row per op name with its calls and host / device self and total time (docs/api.md),
    most device time first; with `group_by` ("op", "op+shape", "module", "layer") the operator
    view of `perflint ops`, with its Tensor Core and FLOP columns."""
    from perflint.op_view import GROUPS, op_view
    from perflint.tables import op_rows

    if group_by is not None and group_by not in GROUPS:
        raise UsageError("group_by", f"must be one of {', '.join(GROUPS)}, not {group_by!r}")
    t = _trace_of(trace)
    if group_by is None:
        return _guard(t.path, lambda: op_rows(t))  # type: ignore[no-any-return]
    return _guard(t.path, lambda: op_view(t, group_by))  # type: ignore[no-any-return]
