"""perflint's Python API: `check`, `summary`, `kernels`, `ops`, `comms` and `load`, for test suites and
notebooks. The `check` and `summary` commands run the same runs (perflint.run): the CLI adds
argument parsing and printing, the API keyword arguments and `CheckResult`.

Errors: a problem that stops the whole run (config, rule selector, baseline or accepted-findings
file, an argument) raises a `PerflintError`; in `check` a trace that cannot be read is reported in
`CheckResult.errors` (exit code 2, like the CLI) while the other traces are still checked. The
functions that return traces' data (`summary`, `kernels`, `ops`, `comms`, `load`) raise `InputError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflint.errors import InputError, PerflintError, UsageError
from perflint.findings import FailOn
from perflint.options import CheckOptions, ExecutorKind, PathArg, Selectors

if TYPE_CHECKING:
    from perflint.findings import Finding, RunResult, SkippedFile
    from perflint.model import Trace
    from perflint.pipeline import Outcome

Paths = PathArg | Sequence[PathArg]


def path_list(paths: Paths) -> list[str]:
    """One path or a sequence of them, as strings."""
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise UsageError("paths", "no trace file or directory given")
    return out


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
    config: PathArg | None = None,
    select: Selectors = None,
    ignore: Selectors = None,
    extend_select: Selectors = None,
    rule_dirs: Sequence[PathArg] = (),
    fail_on: FailOn | None = None,
    baseline: PathArg | None = None,
    allow_device_mismatch: bool = False,
    accepted: PathArg | None = None,
    input_format: str | None = None,
    include_edge_steps: bool = False,
    exclude: Sequence[str] = (),
    jobs: int | None = None,
    memory_budget: int | str | None = None,
    executor: ExecutorKind = "process",
    scheduler: str | None = None,
    timeout: float = 10.0,
) -> CheckResult:
    """Lint traces with the rules, as `perflint check` does.

    `paths`: trace files or directories (one path or a list). The keyword arguments are the
    options of `perflint check` (perflint.options.CheckOptions; docs/api.md lists them): rule
    selectors are a list or a comma-separated string, paths a `str` or `os.PathLike`, and
    `None` or the default leaves an option to the config and perflint's defaults, as on the
    command line.

    Raises PerflintError (ConfigError, UsageError, InputError) for what stops the whole run; a
    trace that cannot be read is listed in `errors` and makes `exit_code` 2."""
    given = dict(locals())
    from perflint.run import run_check

    opts = CheckOptions(**{name: value for name, value in given.items() if name != "paths"})
    run, outcomes = run_check(path_list(paths), opts)
    return CheckResult(run=run, errors=[outcome_error(o) for o in outcomes if o.error])


def _raise_first(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        if o.error:
            raise outcome_error(o)


def summary(paths: Paths, *, include_edge_steps: bool = False, timeline: bool = False) -> list[dict[str, Any]]:
    """One dict per trace (rank), with the keys of `summary --format json`'s "traces" entries.
    Raises InputError for the first trace that cannot be read."""
    from perflint.pipeline import Prepared
    from perflint.run import jobs_or_all, run_summary

    prepared = Prepared(path_list(paths), None, jobs_or_all(None))
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


def kernels(trace: Trace | PathArg, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per kernel launch in start-time order: the rows of `perflint kernels`, all its
    columns (docs/api.md lists them) or only `columns`, under the same names."""
    from perflint.listings import kernel_rows

    t = _trace_of(trace)
    if columns is not None:
        from perflint.listings import table_columns

        unknown = [c for c in columns if c not in table_columns([t])[0]]
        if unknown:
            raise UsageError("columns", f"unknown column {unknown[0]}")
    return _guard(t.path, lambda: kernel_rows(t, columns))  # type: ignore[no-any-return]


def ops(trace: Trace | PathArg, group_by: str | None = None) -> list[dict[str, Any]]:
    """One row per op name with its calls and host / device self and total time (docs/api.md),
    most device time first; with `group_by` ("op", "op+shape", "module", "layer") the operator
    view of `perflint ops`, with its Tensor Core and FLOP columns."""
    from perflint.listings import op_rows
    from perflint.op_view import GROUPS, op_view

    if group_by is not None and group_by not in GROUPS:
        raise UsageError("group_by", f"must be one of {', '.join(GROUPS)}, not {group_by!r}")
    t = _trace_of(trace)
    if group_by is None:
        return _guard(t.path, lambda: op_rows(t))  # type: ignore[no-any-return]
    return _guard(t.path, lambda: op_view(t, group_by))  # type: ignore[no-any-return]


def comms(traces: Trace | Paths, *, include_edge_steps: bool = False) -> list[dict[str, Any]]:
    """One row per collective type and process group of each trace's analysis window, as `perflint
    comms` prints them (docs/communication.md), with the trace's "path" and "rank". `traces`: a
    loaded trace (alone: no waits), or trace files / directories (the ranks of a run in one
    directory are joined: their rows get wait_us and transfer_us). Raises InputError for the first
    trace that cannot be read."""
    from perflint.model import Trace

    if isinstance(traces, Trace):
        from perflint.stepmodel.comm_table import trace_table

        t = traces
        doc = _guard(t.path, lambda: trace_table(t, include_edge_steps))
        return [{"path": t.path, "rank": t.rank, **r} for r in doc["collectives"]]
    from perflint.pipeline import Prepared
    from perflint.run import jobs_or_all, run_comms

    outcomes = run_comms(Prepared(path_list(traces), None, jobs_or_all(None)), include_edge_steps)
    _raise_first(outcomes)
    return [{"path": o.result["path"], "rank": o.result["rank"], **r} for o in outcomes for r in o.result["communication"]["collectives"]]
