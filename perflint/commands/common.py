"""Options and helpers shared by the commands that read traces."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflint.errors import UsageError
from perflint.pipeline import Executor, Outcome, default_jobs
from perflint.readers.budget import parse_size
from perflint.report import REPORTERS, ReportOptions
from perflint.run import skipped_notice

if TYPE_CHECKING:
    from perflint.config import Config


def add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace files (.json, .json.gz) or directories of rank files")
    p.add_argument("--input-format", default=None, metavar="NAME", help="trace format, overriding detection (kineto)")
    p.add_argument(
        "--include-edge-steps",
        action="store_true",
        help="keep the first (warm-up) and last ProfilerStep, which are excluded by default",
    )
    add_jobs_option(p)
    p.add_argument(
        "--memory-budget",
        type=_size,
        default=None,
        metavar="SIZE",
        help="memory a trace's read may use, e.g. 2G (default: the memory available); a smaller "
        "budget reads in smaller slices, one at a time",
    )
    add_exclude_option(p)
    add_executor_options(p)


def add_jobs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--jobs", "-j", type=positive_int, default=None, metavar="N", help="worker processes for rank files (default: all cores)"
    )


def positive_int(text: str) -> int:
    """argparse type of a count that must be 1 or more (a bad value is a usage error, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {n}")
    return n


def add_exclude_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip files matching GLOB (relative to a directory given, or a base name); repeatable",
    )


def exclude_of(args: argparse.Namespace, cfg: Config | None = None) -> list[str]:
    """--exclude globs, then the config's `exclude`."""
    return list(getattr(args, "exclude", None) or []) + list(cfg.exclude if cfg is not None else [])


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


BUDGET_ENV = "PERFLINT_MEMORY_BUDGET"


def budget_of(args: argparse.Namespace) -> int | None:
    """--memory-budget, else PERFLINT_MEMORY_BUDGET; a malformed variable is a usage error here,
    where a user reads the answer, rather than a budget silently ignored."""
    given: int | None = getattr(args, "memory_budget", None)
    if given is not None:
        return given
    raw = os.environ.get(BUDGET_ENV)
    if not raw:
        return None
    try:
        return parse_size(raw)
    except ValueError as exc:
        raise UsageError(BUDGET_ENV, str(exc)) from None


def add_executor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        choices=("process", "dask"),
        default="process",
        help="where per-trace work runs: local worker processes (default) or a dask.distributed cluster",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDR",
        help="dask scheduler address (tcp://host:8786) for --executor dask; default: a local cluster",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="--executor dask: seconds to reach the scheduler, and to wait while it has no worker (default 10)",
    )


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not s > 0 or s == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return s


def jobs_of(args: argparse.Namespace) -> int:
    return int(args.jobs) if args.jobs else default_jobs()


def executor_of(args: argparse.Namespace) -> Executor:
    """Where per-trace work runs (--executor/--scheduler/--timeout)."""
    kind = getattr(args, "executor", "process") or "process"
    scheduler = getattr(args, "scheduler", None)
    if scheduler and kind != "dask":
        raise UsageError("--scheduler", "needs --executor dask")
    return Executor(kind, scheduler, getattr(args, "timeout", 10.0), bool(getattr(args, "debug", False)))


def report_skipped(skipped: list[tuple[str, str]]) -> None:
    """One notice line per file a directory scan passed over, on stderr."""
    for path, why in skipped:
        print(f"perflint: notice: {skipped_notice(path, why)}", file=sys.stderr)


def write_json(path: str, doc: Any) -> None:
    """A snapshot or accepted-findings document into `path`, or onto stdout for "-"."""
    from perflint.baseline.files import json_bytes

    data = json_bytes(doc)
    if path == "-":
        sys.stdout.write(data.decode())
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def report_errors(outcomes: list[Outcome], debug: bool) -> bool:
    """Print one line per failed trace on stderr; True when any failed."""
    failed = False
    for o in outcomes:
        if o.error:
            failed = True
            print(f"perflint: error: {o.error}", file=sys.stderr)
            if debug and o.debug:
                print(o.debug, file=sys.stderr)
    return failed


# --- `check` (and `accept`, which takes the same options) ------------------------------------

REPORT_FILES = ("json", "junit", "markdown", "sarif", "gitlab")  # --json FILE etc.: reports written besides stdout's
_REPORT_HELP = {
    "json": "also write the JSON report to FILE",
    "junit": "also write a JUnit XML report to FILE (Jenkins, GitLab, Buildkite)",
    "markdown": "also write the Markdown report to FILE (a job summary, a PR comment)",
    "sarif": "also write a SARIF 2.1.0 report to FILE (GitHub code scanning)",
    "gitlab": "also write a GitLab Code Quality report to FILE",
}
MIN_MARKDOWN_BYTES = 256  # the verdict and the counts line always fit


def _csv(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def add_check_options(p: argparse.ArgumentParser) -> None:
    """The options of `perflint check`: inputs, rule selection, the gate and the reports."""
    add_input_options(p)
    p.add_argument("--config", default=None, metavar="FILE", help="config file (default: .perflint.yaml / pyproject.toml)")
    p.add_argument("--select", type=_csv, default=None, metavar="SEL,...", help="only these rules (code, prefix, name, group)")
    p.add_argument("--ignore", type=_csv, default=None, metavar="SEL,...", help="skip these rules")
    p.add_argument("--extend-select", type=_csv, default=None, metavar="SEL,...", help="add rules to the selection")
    p.add_argument("--rule-dir", action="append", default=[], metavar="DIR", help="extra directory of YAML rules")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default=None,
        help="lowest severity that fails the gate (exit 1); default: the config's, else error",
    )
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when the gate fails (errors still exit 2)")
    p.add_argument(
        "--format",
        choices=sorted(REPORTERS),
        default=None,
        help="report on stdout (default: text; github under GitHub Actions); concise: one 'path:line: CODE message' line per finding",
    )
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write the --format report to FILE")
    for fmt in REPORT_FILES:
        p.add_argument(f"--{fmt}", default=None, metavar="FILE", help=_REPORT_HELP[fmt])
    add_gate_options(p)
    p.add_argument(
        "--max-bytes",
        type=_markdown_budget,
        default=None,
        metavar="N",
        help=f"size budget of the Markdown report in bytes (default 1 MiB; at least {MIN_MARKDOWN_BYTES})",
    )
    p.add_argument(
        "--source-root",
        default=None,
        metavar="DIR",
        help="SARIF, annotation and Code Quality paths are written relative to DIR "
        "(default: the git repository's root, else the working directory)",
    )


def _markdown_budget(text: str) -> int:
    n = positive_int(text)
    if n < MIN_MARKDOWN_BYTES:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_MARKDOWN_BYTES} (room for the verdict and counts)")
    return n


def add_gate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline", default=None, metavar="FILE|TRACE|DIR", help="snapshot (or traces) to compare with: REG rules run"
    )
    p.add_argument("--allow-device-mismatch", action="store_true", help="compare with a baseline from another device")
    p.add_argument("--accepted", default=None, metavar="FILE", help="accepted findings (perflint accept): fail only on new ones")


def use_color(args: argparse.Namespace) -> bool:
    """ANSI colour on a terminal; never into a file, nor with a non-empty NO_COLOR (an empty one
    does not count, https://no-color.org); FORCE_COLOR forces it."""
    if getattr(args, "output", None) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return _stdout_is_tty()


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def text_width(args: argparse.Namespace) -> int | None:
    """Wrap the text report to the terminal (COLUMNS wins); None, unwrapped, into a pipe, a file or a
    CI log, where wrapping breaks grep and the log viewer wraps anyway."""
    if getattr(args, "output", None) or not _stdout_is_tty():
        return None
    return max(40, shutil.get_terminal_size().columns)


def source_root(args: argparse.Namespace) -> str:
    """--source-root, else the git repository around the working directory, else the working
    directory: code scanning places a result only on a path relative to the repository root."""
    given: str | None = getattr(args, "source_root", None)
    if given:
        return os.path.abspath(given)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return str(d)
    return str(here)


def report_options(args: argparse.Namespace, color: bool | None = None) -> ReportOptions:
    """The options every report of a `check` run is rendered with (stdout's: colour and width)."""
    on = use_color(args) if color is None else color
    return ReportOptions(
        max_bytes=getattr(args, "max_bytes", None),
        color=on,
        root=source_root(args),
        width=text_width(args) if color is None else None,
    )
