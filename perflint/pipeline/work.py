"""One trace's work, guarded: whatever goes wrong becomes that trace's one-line error, so a
bad file (or a perflint bug on it) costs only itself."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflint.errors import NotATrace, PartialRead, PerflintError
from perflint.graph.build import link
from perflint.model import Trace
from perflint.readers import PendingRead, ReadOptions, read_traces


@dataclass
class Outcome:
    path: str
    result: Any = None
    error: str | None = None  # one line: "<path>: <problem>"
    debug: str | None = None  # traceback of an unexpected failure, shown with --debug
    not_a_trace: bool = False  # the error says the file holds no profiler events (errors.NotATrace)


# (path, input format, the per-trace function, how this process may read)
Work = tuple[str, str | None, Callable[[Trace], Any], ReadOptions]


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


def read_linked(path: str, fmt: str | None, options: ReadOptions, pending: PendingRead | None = None) -> Outcome:
    """The traces in `path` (one per rank), read and linked, as an Outcome whose result is
    their list; `pending`: the read, already begun. Where only some ranks could be read, the
    result holds those and the error the others' lines (see `read_outcomes`)."""

    def read() -> list[Trace]:
        try:
            return [link(t) for t in (pending.result() if pending is not None else read_traces(path, fmt, options))]
        except PartialRead as exc:
            partial.extend(exc.errors)
            return [link(t) for t in exc.traces]

    partial: list[PerflintError] = []
    got = guarded(path, read)
    if partial and got.error is None:
        got.error = "\n".join(e.line() for e in partial)
    return got


def read_errors(read: Outcome) -> list[Outcome]:
    """The error outcomes of a read: one per line (a rank that could not be read)."""
    return [Outcome(read.path, error=line) for line in (read.error or "").splitlines() if line]


def apply(path: str, traces: list[Trace], fn: Callable[[Trace], Any]) -> list[Outcome]:
    """`fn` on each trace of one file, each guarded on its own. The list is emptied as it goes,
    so that a trace is freed once its work is done."""
    out = []
    traces.reverse()
    while traces:
        trace = traces.pop()
        out.append(guarded(path, lambda: fn(trace)))
        del trace
    return out


def run_one(args: Work, pending: PendingRead | None = None) -> list[Outcome]:
    """One file's outcomes: one per trace in it, or its one error."""
    path, fmt, fn, options = args
    read = read_linked(path, fmt, options, pending)
    if read.result is None:
        return [read]
    traces, read.result = read.result, None
    return read_errors(read) + apply(path, traces, fn)


__all__ = ["Outcome", "Work", "apply", "guarded", "read_errors", "read_linked", "run_one"]
