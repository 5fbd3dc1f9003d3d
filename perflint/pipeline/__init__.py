"""Per-trace work over many files: each file is read and analysed independently, so a bad
file costs only itself, and files can go to worker processes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflint.errors import InputError
from perflint.model import Trace
from perflint.pipeline.cluster import ClusterError  # dask itself is imported only when a run uses it
from perflint.pipeline.shared import Strings
from perflint.pipeline.work import Outcome, Work
from perflint.pipeline.work import run_one as _run_one
from perflint.readers import PendingRead, ReadOptions, archive, discover, start_read

if TYPE_CHECKING:
    from perflint.pipeline.ranks import RankPool


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@dataclass
class Executor:
    """Where per-trace work runs: "process" (local worker processes, `jobs` of them) or "dask"
    (a dask.distributed cluster at `scheduler`, or a LocalCluster of `jobs` workers when None).
    `timeout`: seconds to reach the dask scheduler; `debug`: keep dask's own log lines."""

    kind: str = "process"
    scheduler: str | None = None
    timeout: float = 10.0
    debug: bool = False


class Prepared:
    """The traces under `paths`, found, and their reads begun, so that the caller loads its rules
    while they decode: one file read here starts in `readers.start_read` (a big one decodes in
    worker processes); rank files for local --jobs workers go to a `ranks.RankPool` (each worker
    reads its first trace, then waits for the work) when they are big enough for that to pay.
    `run(fn)` does the work; `close()` abandons reads that `run` never ended (a bad config or
    rule file). Files a directory scan passed over are in `skipped`, with the reason."""

    def __init__(
        self,
        paths: list[str],
        fmt: str | None = None,
        jobs: int = 1,
        executor: Executor | None = None,
        memory_budget: int | None = None,
        exclude: list[str] | tuple[str, ...] = (),
    ) -> None:
        self.fmt, self.jobs, self.executor, self.memory_budget = fmt, jobs, executor or Executor(), memory_budget
        self.files, self.errors, self.skipped = discover(paths, exclude)  # skipped: (path, reason) pairs
        self.named = {os.path.normpath(p) for p in paths if os.path.isfile(p) or archive.split(p)}  # asked for by name (a member too)
        self.pending: PendingRead | None = None
        self.ranks: RankPool | None = None
        if self.executor.kind != "dask" and jobs > 1 and len(self.files) > 1 and _trace_bytes(self.files) >= RANK_POOL_MIN_BYTES:
            self.ranks = _rank_pool(self.files, fmt, jobs, memory_budget)
        # One big file: its slices go to `jobs` processes; the progress line is hooked in later.
        self.relay = _ProgressRelay()
        self.options = ReadOptions(workers=jobs, memory_budget=memory_budget, progress=self.relay)
        if self.executor.kind != "dask" and len(self.files) == 1:
            self.pending = start_read(self.files[0], fmt, self.options)

    def close(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        if self.ranks is not None:
            self.ranks.close()
            self.ranks = None

    def run(self, fn: Callable[[Trace], Any]) -> list[Outcome]:
        """`fn(trace)` for every trace, in path order. `fn` must be picklable for jobs > 1."""
        ex, jobs, memory_budget = self.executor, self.jobs, self.memory_budget
        outcomes = [Outcome(e.source, error=e.line()) for e in self.errors]
        solo = ReadOptions(workers=jobs, memory_budget=memory_budget)  # picklable: no progress hook
        work: list[Work] = [(f, self.fmt, fn, solo) for f in self.files]
        from perflint.report.progress import Progress  # stderr, TTY only, after a second

        strings = Strings()  # results from worker processes: one copy of the strings they share

        with Progress(len(work)) as progress:
            if ex.kind == "dask" and work:
                from perflint.pipeline.cluster import run_dask

                # The progress line counts files as the cluster finishes them, in any order.
                outcomes.extend(run_dask(work, jobs, ex.scheduler, ex.timeout, ex.debug, progress.advance))
            elif self.ranks is not None:
                ranks, self.ranks = self.ranks, None
                try:
                    for found in ranks.results(fn):
                        outcomes.extend(strings(found))
                        progress.advance(found[0].path)
                finally:
                    ranks.close()
            elif jobs > 1 and len(work) > 1:  # no fork here: the work goes with each trace
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                # fork: workers inherit the loaded rules and modules instead of re-importing them.
                methods = multiprocessing.get_all_start_methods()
                ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
                n = min(jobs, len(work))
                # The budget is the whole run's: shared by the workers.
                share = ReadOptions(workers=1, memory_budget=None if memory_budget is None else max(1, memory_budget // n))
                work = [(p, f, fn, share) for p, f, fn, _ in work]
                with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
                    for found in pool.map(_run_one, work):
                        outcomes.extend(strings(found))
                        progress.advance(found[0].path)
            else:
                self.relay.hook(progress, len(work) == 1)
                try:
                    for path, f, fn_, _ in work:
                        progress.current = path
                        pending, self.pending = self.pending, None
                        outcomes.extend(_run_one((path, f, fn_, self.options), pending))
                        progress.advance(path)
                finally:
                    self.relay.hook(progress, False)
        return self._sorted_out(outcomes)

    def _sorted_out(self, outcomes: list[Outcome]) -> list[Outcome]:
        """A scanned file that proved to hold no profiler events joins `skipped` (a notice);
        named on the command line, it stays an error."""
        kept = []
        for o in outcomes:
            if o.not_a_trace and os.path.normpath(o.path) not in self.named and o.error:
                self.skipped.append((o.path, o.error.split(": ", 1)[-1]))
            else:
                kept.append(o)
        return kept


def run(
    paths: list[str],
    fn: Callable[[Trace], Any],
    fmt: str | None = None,
    jobs: int = 1,
    executor: Executor | None = None,
    memory_budget: int | None = None,
) -> list[Outcome]:
    """`fn(trace)` for every trace under `paths`, in path order. `fn` must be picklable for jobs > 1."""
    prepared = Prepared(paths, fmt, jobs, executor, memory_budget)
    try:
        return prepared.run(fn)
    finally:
        prepared.close()


# Rank workers forked before the rules load import the analysis modules themselves (about 0.2 s
# each) instead of inheriting them: worth it only when the reads take longer than that.
RANK_POOL_MIN_BYTES = 64 << 20
_GZ_RATIO = 8  # a .gz trace's JSON is several times its size on disk


def _trace_bytes(files: list[str]) -> int:
    total = 0
    for f in files:
        try:
            total += os.path.getsize(f) * (_GZ_RATIO if f.endswith(".gz") else 1)
        except OSError:
            pass  # the read reports it
    return total


def _rank_pool(files: list[str], fmt: str | None, jobs: int, memory_budget: int | None) -> RankPool | None:
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    from perflint.pipeline.ranks import RankPool

    try:
        return RankPool(files, fmt, jobs, memory_budget)
    except (OSError, RuntimeError, AssertionError):  # no processes here (sandbox, daemonic parent): run() decides
        return None


class _ProgressRelay:
    """The read's progress callback (ReadOptions.progress), given to the reader when the read
    begins; it reaches the progress line only once `run` hooks it (a single big file on a TTY)."""

    def __init__(self) -> None:
        self.progress: Any = None

    def hook(self, progress: Any, on: bool) -> None:
        self.progress = progress if on and getattr(progress, "on", False) else None

    def __call__(self, done: int, total: int) -> None:
        progress = self.progress
        if progress is not None:
            name = os.path.basename(str(progress.current)).split(" ")[0]
            progress.current = f"{name} {100 * done // max(total, 1)}%"


__all__ = ["ClusterError", "Executor", "InputError", "Outcome", "Prepared", "default_jobs", "run"]
