"""One trace's work, guarded: whatever goes wrong becomes that trace's one-line error, so a
bad file (or a perflint bug on it) costs only itself."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflint.errors import NotATrace, PerflintError
from perflint.graph.build import link
from perflint.graph.load import load_trace
from perflint.model import Trace
from perflint.readers import PendingRead, budget


@dataclass
class Outcome:
    path: str
    result: Any = None
    error: str | None = None  # one line: "<path>: <problem>"
    debug: str | None = None  # traceback of an unexpected failure, shown with --debug
    not_a_trace: bool = False  # the error says the file holds no profiler events (errors.NotATrace)


# (path, input format, the per-trace function, this process's memory budget)
Work = tuple[str, str | None, Callable[[Trace], Any], int | None]


def guarded(path: str, work: Callable[[], Any]) -> Outcome:
    try:
        return Outcome(path, result=work())
    except NotATrace as exc:
        return Outcome(path, error=exc.line(), not_a_trace=True)
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


def run_one(args: Work, pending: PendingRead | None = None) -> Outcome:
    path, fmt, fn, memory_budget = args
    budget.MEMORY_BUDGET = memory_budget  # here too: a worker process or a dask worker
    return guarded(path, lambda: fn(link(pending.result()) if pending is not None else load_trace(path, fmt)))


__all__ = ["Outcome", "Work", "guarded", "run_one"]
