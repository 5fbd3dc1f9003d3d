"""Per-trace work over many files: each file is read and analysed independently, so a bad
file costs only itself, and files can go to worker processes."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflint.errors import InputError, PerflintError
from perflint.model import Trace
from perflint.graph.load import load_trace
from perflint.readers import discover


@dataclass
class Outcome:
    path: str
    result: Any = None
    error: str | None = None  # one line: "<path>: <problem>"
    debug: str | None = None  # traceback of an unexpected failure, shown with --debug


def _run_one(args: tuple[str, str | None, Callable[[Trace], Any]]) -> Outcome:
    path, fmt, fn = args
    try:
        trace = load_trace(path, fmt)
        return Outcome(path, result=fn(trace))
    except PerflintError as exc:
        return Outcome(path, error=exc.line())
    except MemoryError:
        return Outcome(path, error=f"{path}: out of memory while reading the trace")
    except Exception as exc:  # a bug in perflint must still not lose the other traces
        return Outcome(
            path,
            error=f"{path}: internal error while analysing the trace ({type(exc).__name__}: {exc})",
            debug=traceback.format_exc(),
        )


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run(
    paths: list[str], fn: Callable[[Trace], Any], fmt: str | None = None, jobs: int = 1
) -> list[Outcome]:
    """`fn(trace)` for every trace under `paths`, in path order. `fn` must be picklable for jobs > 1."""
    files, errors = discover(paths)
    outcomes = [Outcome(e.source, error=e.line()) for e in errors]
    work = [(f, fmt, fn) for f in files]
    from perflint.report.progress import Progress  # stderr, TTY only, after a second

    with Progress(len(work)) as progress:
        if jobs > 1 and len(work) > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
                for o in pool.map(_run_one, work):
                    outcomes.append(o)
                    progress.advance(o.path)
        else:
            for w in work:
                progress.current = w[0]
                outcomes.append(_run_one(w))
                progress.advance(w[0])
    return outcomes


__all__ = ["InputError", "Outcome", "default_jobs", "run"]
