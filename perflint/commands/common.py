"""Options and helpers shared by the commands that read traces."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from perflint.errors import UsageError
from perflint.pipeline import Executor, Outcome, default_jobs
from perflint.readers.budget import parse_size

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
    p.add_argument(
        "--jobs", "-j", type=int, default=None, metavar="N", help="worker processes for rank files (default: all cores)"
    )
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


def budget_of(args: argparse.Namespace) -> int | None:
    return getattr(args, "memory_budget", None)


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
    return args.jobs if args.jobs and args.jobs > 0 else default_jobs()


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
        print(f"perflint: notice: skipped {path}: {why}", file=sys.stderr)


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
