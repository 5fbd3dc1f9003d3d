"""Rank files in forked worker processes, read before the per-trace work exists.

`perflint check DIR --jobs N` imports and validates its config and rule pack (a few tenths of a
second) before it knows what to run on each trace. The workers do not wait for that: each reads
and links its first trace at once, then waits at a gate for the work function, which the parent
publishes once, pickled into a shared map the workers inherited when they were forked.
"""

from __future__ import annotations

import mmap
import pickle
import struct
from collections.abc import Callable, Iterator
from typing import Any

from perflint.model import Trace
from perflint.pipeline.work import Outcome, Work, apply, read_errors, read_linked
from perflint.readers import ReadOptions

_GATE: Gate | None = None  # set just before the workers are forked: each inherits its run's gate
_HEADER = struct.Struct("<q")


class Gate:
    """The work function, published once by the parent and read once by each worker."""

    CAPACITY = 64 << 20  # address space only: the pages written are the pickle's

    def __init__(self, ctx: Any) -> None:
        self.ready = ctx.Event()
        self.buf = mmap.mmap(-1, self.CAPACITY)  # anonymous and shared: the workers see the writes
        self._fn: Callable[[Trace], Any] | None = None
        self._loaded = False

    def publish(self, fn: Callable[[Trace], Any] | None) -> None:
        """`fn` for every worker; None: the run stopped. Raises if `fn` does not pickle (or is
        too big), without opening the gate."""
        data = b"" if fn is None else pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
        if _HEADER.size + len(data) > self.CAPACITY:
            raise ValueError(f"the per-trace work pickles to {len(data)} bytes")
        self.buf[_HEADER.size : _HEADER.size + len(data)] = data
        self.buf[: _HEADER.size] = _HEADER.pack(len(data))
        self.ready.set()

    def wait(self) -> Callable[[Trace], Any] | None:
        """In a worker: the published function (unpickled once per process)."""
        if not self._loaded:
            self.ready.wait()
            (n,) = _HEADER.unpack(self.buf[: _HEADER.size])
            self._fn = pickle.loads(self.buf[_HEADER.size : _HEADER.size + n]) if n else None
            self._loaded = True
        return self._fn


def _read_then_run(args: Work) -> list[Outcome]:
    path, fmt, _, options = args
    read = read_linked(path, fmt, options)
    if read.result is None:
        return [read]
    gate = _GATE
    assert gate is not None
    fn = gate.wait()
    if fn is None:
        return [Outcome(path, error=f"{path}: not analysed (the run stopped)")]
    traces, read.result = read.result, None
    return read_errors(read) + apply(path, traces, fn)


class RankPool:
    """`files` submitted to `jobs` forked workers now; `results(fn)` gives their outcomes in order."""

    def __init__(self, files: list[str], fmt: str | None, jobs: int, memory_budget: int | None) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _GATE
        ctx = multiprocessing.get_context("fork")
        self.gate = Gate(ctx)
        n = min(jobs, len(files))
        share = None if memory_budget is None else max(1, memory_budget // n)  # the run's budget, shared
        self.pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx)
        _GATE = self.gate  # the workers are all forked at the first submit (fork start method)
        try:
            options = ReadOptions(workers=1, memory_budget=share)
            self.futures = [self.pool.submit(_read_then_run, (f, fmt, None, options)) for f in files]  # type: ignore[arg-type]
        except BaseException:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.gate.buf.close()
            raise
        self.open = True

    def results(self, fn: Callable[[Trace], Any]) -> Iterator[list[Outcome]]:
        """Each file's outcomes (one per trace in it, or its error), in file order."""
        self.gate.publish(fn)
        for fut in self.futures:
            yield fut.result()

    def close(self) -> None:
        """Let waiting workers go (a run that never published stops them) and end the pool."""
        if not self.open:
            return
        self.open = False
        if not self.gate.ready.is_set():
            self.gate.publish(None)
        for fut in self.futures:
            fut.cancel()
        self.pool.shutdown(wait=True)
        self.gate.buf.close()


__all__ = ["Gate", "RankPool"]
