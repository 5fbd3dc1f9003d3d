"""Reader for PyTorch profiler / Kineto Chrome-trace JSON (every vintage in the corpus): the read
paths. A file is decoded whole, slice by slice (chunked.py) or in forked workers, and each slice
goes to the column builder (slices.py, builder.py); PERFLINT_READER=reference selects the
whole-file decode and the event-by-event reference builder (reference.py).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from perflint.errors import InputError
from perflint.model import Trace
from perflint.readers import budget
from perflint.readers.kineto.builder import ColumnBuilder
from perflint.readers.kineto.chunked import Fallback, after, chunk_bytes, decode_range, last_slice, plan_iter, read_sliced
from perflint.readers.kineto.reference import build_trace_reference
from perflint.readers.kineto.repair import escape_name_quotes
from perflint.readers.kineto.schema import DECODER, STRICT_DECODER, Event, StrictSlice, TraceFile
from perflint.readers.kineto.slices import add_slice, adder
from perflint.readers.protocol import ReadOptions
from perflint.readers.source import GzipStream, PendingRead, Unavailable, open_source, read_bytes
from perflint.units import plural


def decode(path: str, data: bytes) -> tuple[list[Event], TraceFile | None]:
    try:
        doc = DECODER.decode(data)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        if "traceEvents" in msg and "missing required field" in msg:
            raise InputError(path, "not a Chrome/Kineto trace: JSON object has no 'traceEvents'") from None
        if msg.startswith("Expected `object`"):
            raise InputError(path, f"not a Chrome/Kineto trace: {msg}") from None
        raise InputError(path, f"unexpected value in trace: {msg}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"invalid JSON: not UTF-8 text (byte {exc.start})") from None
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "truncated" in msg.lower():
            raise InputError(path, f"invalid JSON: input is truncated ({msg})") from None
        raise InputError(path, f"invalid JSON: {msg}") from None
    if isinstance(doc, list):
        return doc, None
    return doc.traceEvents, doc


def build_trace(path: str, events: list[Event], doc: TraceFile | None, data: bytes | None = None) -> Trace:
    """Columns from decoded events (the fast builder). `data` is only used for the rare CUPTI counter mode."""
    builder = ColumnBuilder(path)
    add_slice(builder, events)
    return builder.finish(doc, (lambda: data) if data is not None else None)


_WORK_BUF: Any = None  # the parent's mapped file, inherited by the forked workers
# Slices per worker: equal slices handed out in turn, so the workers finish close together.
RANGES_PER_WORKER = 6
# A streamed .gz: smaller slices, so that its ring (a few slices per worker) stays small.
STREAM_RANGES_PER_WORKER = 12
# Files above this go through the slicer even when one slice would hold them: small slices
# decode and build faster (their objects stay in the CPU cache; see chunked.SUB_BYTES).
SLICED_MIN_BYTES = 1 << 20


def _read_workers(n_slices: int, want: int = 0) -> int:
    """Processes for `n_slices` slices: `want` (ReadOptions.workers; 0: all cores), unless
    PERFLINT_READ_WORKERS says otherwise."""
    import multiprocessing

    raw = os.environ.get("PERFLINT_READ_WORKERS")
    want = int(raw) if raw and raw.isdigit() else want
    if want <= 0:
        want = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if multiprocessing.parent_process() is not None or "fork" not in multiprocessing.get_all_start_methods():
        return 1  # already a worker (--jobs over many files, dask): no nested pools
    return max(1, min(want, n_slices))


def _in_worker() -> bool:
    import multiprocessing

    return multiprocessing.parent_process() is not None


def _slice_worker(args: tuple[str, int, int]) -> Any:
    path, lo, hi = args
    gc.disable()
    builder = ColumnBuilder(path)
    try:
        if not decode_range(_WORK_BUF, lo, hi, adder(builder)):
            return None
    except InputError as exc:  # PerflintError does not pickle: send its parts
        return ("error", exc.source, exc.problem)
    return builder.export()


class _ParallelRead:
    """A parallel read under way: slices decoded and turned into columns in forked workers,
    merged in file order by `finish`.

    For a plain buffer every slice is submitted by `_start_parallel`, so the workers decode while
    the caller does other work (loading the rules) before it calls `finish`. A GzipStream is
    decompressed as its slices are handed out, into a ring that holds a few slices per worker (a
    slice is merged before its bytes are reused); `begin` has a thread do that while the caller
    loads its rules (the decompressor releases the GIL), else `finish` does it."""

    def __init__(
        self, path: str, data: Any, n: int, start: int, cuts: Any, pool: Any, progress: Callable[[int, int], None] | None = None
    ) -> None:
        self.path, self.data, self.n, self.start, self.cuts, self.pool = path, data, n, start, cuts, pool
        self.progress = progress
        self.stream = data if isinstance(data, GzipStream) else None
        self.builder = ColumnBuilder(path)
        self.pending: list[tuple[int, int, Any]] = []
        self.next_pos = start + 1  # where the slice being cut (or the last one) begins
        self.work_buf = _WORK_BUF  # restored when the read ends (a read may run inside another's window)
        self.thread: threading.Thread | None = None
        self.outcome: tuple[Trace | None, BaseException | None] = (None, None)  # the thread's
        self.stop = False  # set by `cancel`: the thread hands out no more slices
        self.gc_was_enabled = False

    def begin(self) -> None:
        """A stream's read carried on by a thread from now on. Its first slice is submitted here:
        the workers are forked by the caller's thread, never while another thread may hold an
        import lock."""
        stream = self.stream
        assert stream is not None
        self.gc_was_enabled = gc.isenabled()
        gc.disable()  # for the whole read: `_read` enables it again
        stream.floor, stream.make_room = self.next_pos, self._make_room
        first = next(self.cuts, None)
        if first is not None:
            self.submit(*first)
        self.thread = threading.Thread(target=self._background, name="perflint-gunzip", daemon=True)
        self.thread.start()

    def _background(self) -> None:
        try:
            self.outcome = (_finished(self), None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread by `finish`
            self.outcome = (None, exc)

    def cancel(self) -> None:
        if self.thread is not None:
            self.stop = True
            self.thread.join()
        self.close()

    def submit(self, lo: int, hi: int) -> None:
        global _WORK_BUF
        _WORK_BUF = self.data  # the workers are forked at the first submit and see it
        self.pending.append((lo, hi, self.pool.submit(_slice_worker, (self.path, lo, hi))))
        self.next_pos = after(self.data, hi)

    def _merge_first(self) -> None:
        """Merge the oldest slice (waiting for it); Fallback if its cut was false."""
        lo, hi, fut = self.pending.pop(0)
        st = fut.result()
        if st is None:
            raise Fallback
        if isinstance(st, tuple):
            raise InputError(st[1], st[2])
        self.builder.merge(st)
        del st
        if self.stream is not None:
            self.stream.floor = self.pending[0][0] if self.pending else self.next_pos
        if self.progress is not None:
            self.progress(hi, self.n)

    def _make_room(self, floor: int) -> bool:
        """The ring needs the bytes below `floor`: merge the slices that live there."""
        stream = self.stream
        try:
            while stream is not None and stream.floor < floor and self.pending:
                self._merge_first()
        except Fallback:
            return False
        return stream is not None and stream.floor >= floor

    def finish(self) -> Trace | None:
        """The trace; None when the slicing failed (the caller reads the file another way)."""
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            trace, exc = self.outcome
            if exc is not None:
                raise exc
            return trace
        stream, data = self.stream, self.data
        if stream is not None and thread is None:
            stream.floor, stream.make_room = self.next_pos, self._make_room
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            try:
                for lo, hi in self.cuts:
                    if self.stop:
                        raise Fallback
                    self.submit(lo, hi)
                    while self.pending and self.pending[0][2].done():
                        self._merge_first()
                if stream is not None and not stream.finish():
                    raise Fallback
                # Meanwhile, here: the last slice and the metadata around the array.
                last = last_slice(data, self.start, self.next_pos, self.n)
                if last is None:
                    raise Fallback
                while self.pending:
                    self._merge_first()
            except (Fallback, Unavailable):
                return None
            finally:
                self.close()
            events, doc = last
            add_slice(self.builder, events)
            del events
            if stream is not None:
                return self.builder.finish(doc, lambda: read_bytes(self.path))  # the ring holds only the end
            return self.builder.finish(doc, lambda: bytes(data))
        finally:
            if was_enabled:
                gc.enable()

    def close(self) -> None:
        """Stop the workers (slices not started are dropped; running ones end with the pool)."""
        global _WORK_BUF
        for _, _, f in self.pending:
            f.cancel()
        self.pending = []
        self.pool.shutdown(wait=True)
        _WORK_BUF = self.work_buf
        if self.stream is not None:
            self.stream.make_room = None


def _start_parallel(
    path: str, data: Any, size: int, workers: int = 0, progress: Callable[[int, int], None] | None = None
) -> _ParallelRead | None:
    """A parallel read of `data` (see _ParallelRead), its slices already submitted when `data`
    is a plain buffer; None when it cannot be done (then the sequential slicer runs)."""
    stream = data if isinstance(data, GzipStream) else None
    n = stream.size if stream is not None else len(data)
    workers = workers or _read_workers(max(1, n // size))
    if workers < 2 and (stream is None or _in_worker()):
        return None  # one worker: for a plain file the in-process slicer does the same
    parts = (RANGES_PER_WORKER if stream is None else STREAM_RANGES_PER_WORKER) * workers
    if stream is not None and not stream.use_ring((2 * workers + 2) * min(size, n // parts + 1)):
        return None
    planned = plan_iter(data, size, parts, n, stream.fill if stream is not None else None)
    if planned is None:
        return None
    start, cuts = planned
    ranges: list[tuple[int, int]] = []
    if stream is None:  # a plain buffer: all cuts first (fewer than two: the slicer does better)
        try:
            ranges = list(cuts)
        except Fallback:
            return None
        if len(ranges) < 2:
            return None
        cuts = iter(())
    from perflint.readers.kineto.procs import slice_pool

    try:
        pool = slice_pool(workers)
        job = _ParallelRead(path, data, n, start, cuts, pool, progress)
        try:
            for lo, hi in ranges:
                job.submit(lo, hi)
        except BaseException:
            job.close()
            raise
    except (OSError, RuntimeError, AssertionError):  # no processes here (sandbox, daemonic parent)
        return None
    return job


def _read_parallel(
    path: str, data: Any, size: int, workers: int = 0, progress: Callable[[int, int], None] | None = None
) -> Trace | None:
    """Slices decoded and turned into columns in forked workers, merged in file order here.
    None when it cannot be done (then the sequential slicer runs)."""
    job = _start_parallel(path, data, size, workers, progress)
    return None if job is None else _finished(job)


def _finished(job: _ParallelRead) -> Trace | None:
    try:
        return job.finish()
    except (OSError, RuntimeError, AssertionError):  # a worker died (BrokenProcessPool is a RuntimeError)
        return None


def _read_whole(path: str, data: bytes) -> Trace:
    """The whole document in one decode: strictly typed when the strict schema takes it."""
    try:
        doc: Any = STRICT_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        try:
            events, doc = decode(path, data)  # the lenient decode words any error
        except InputError as exc:
            return _repaired(path, data, exc)
        return build_trace(path, events, doc, data)
    if isinstance(doc, list):
        events, doc = doc, None
    else:
        events = doc.traceEvents
        doc.traceEvents = []
    builder = ColumnBuilder(path)
    add_slice(builder, StrictSlice(events, lambda: decode(path, data)[0]))
    del events
    return builder.finish(doc, lambda: data)


def _repaired(path: str, data: bytes, exc: InputError) -> Trace:
    """The trace of a document that is invalid JSON only through a known writer bug, with a warning
    saying what was repaired; else `exc`."""
    fixed = escape_name_quotes(data) if "invalid JSON" in str(exc) else None
    if fixed is None:
        raise exc
    try:
        events, doc = decode(path, fixed[0])
    except InputError:
        raise exc from None
    trace = build_trace(path, events, doc, fixed[0])
    trace.warnings.append(f"{plural(fixed[1], 'event name')} with unescaped quotes repaired (a profiler export bug)")
    return trace


def _reference() -> bool:
    return os.environ.get("PERFLINT_READER") == "reference"


def read_kineto(path: str, data: Any = None, options: ReadOptions | None = None) -> Trace:
    """`data`: the file's bytes, an mmap of a big plain file or a GzipStream of a big .gz (see
    `source.open_source`).

    Big files are decoded in forked workers, files above SLICED_MIN_BYTES slice by slice
    (chunked.py), the rest in one go; PERFLINT_READER=reference selects the whole-file
    decode and the event-by-event reference builder.
    """
    return start_kineto(path, data, options).result()  # type: ignore[no-any-return]


def start_kineto(path: str, data: Any = None, options: ReadOptions | None = None) -> PendingRead:
    """`read_kineto` begun: a big plain file's slices go to the worker processes now, so that the
    caller can do other work (import and load the rules) while they decode. `.result()` ends the
    read and raises its errors; `.cancel()` abandons it."""
    opts = options or ReadOptions()
    if data is None:
        data = open_source(path)
    stream = data if isinstance(data, GzipStream) else None
    size = chunk_bytes()
    n = stream.size if stream is not None else len(data)
    workers = _read_workers(max(1, n // size), opts.workers)
    plan = budget.plan(n, workers, size, gz=stream is not None, memory_budget=opts.memory_budget)
    size = plan.slice_bytes
    job = None
    # Tiny forced slices (a small budget) read sequentially.
    if stream is None and not _reference() and n > 2 * size and size >= 1 << 20 and plan.workers > 1:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            job = _start_parallel(path, data, size, plan.workers, opts.progress)
        finally:
            if was_enabled:
                gc.enable()
    elif stream is not None and not _reference():
        job = _begin_stream(path, stream, size, plan.workers, opts.progress)
    return PendingRead(lambda: _read(path, data, plan, job, opts.progress), job.cancel if job is not None else None)


def _begin_stream(
    path: str, stream: GzipStream, size: int, workers: int, progress: Callable[[int, int], None] | None = None
) -> _ParallelRead | None:
    """A big .gz: its decompression and the decoding of its slices under way in the background
    (see _ParallelRead.begin); None: `_read` reads it in the caller's time."""
    was_enabled = gc.isenabled()
    job = None
    try:
        job = _start_parallel(path, stream, size, workers, progress)
        if job is not None:
            job.begin()
    except (Fallback, Unavailable, OSError, RuntimeError, AssertionError):
        if job is not None:
            job.cancel()
        if was_enabled:
            gc.enable()
        return None
    return job


def _read(
    path: str, data: Any, plan: budget.Plan, job: _ParallelRead | None, progress: Callable[[int, int], None] | None = None
) -> Trace:
    stream = data if isinstance(data, GzipStream) else None
    size = plan.slice_bytes
    # The cyclic GC would rescan millions of freshly allocated objects.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        trace = None
        if stream is not None:  # a big .gz: slices decoded while the rest is decompressed
            if job is not None:
                was_enabled = was_enabled or job.gc_was_enabled  # `begin` turned it off
                trace = _finished(job)
            elif not _reference():
                trace = _read_parallel(path, stream, size, plan.workers, progress)
            if trace is not None:
                return _noted(trace, plan.note)
            data = stream.complete()
            job = None
        if _reference():
            whole = data if isinstance(data, bytes) else bytes(data)
            events, doc = decode(path, whole)
            return build_trace_reference(path, events, doc, whole if b"cuda_profiler_range" in whole else None)
        if job is not None:
            trace = _finished(job)
        elif stream is not None and len(data) > 2 * size and size >= 1 << 20 and plan.workers > 1:
            trace = _read_parallel(path, data, size, plan.workers, progress)  # the .gz, now whole in memory
        if trace is None and len(data) > min(size, SLICED_MIN_BYTES):
            builder = ColumnBuilder(path)
            ok, doc = read_sliced(data, adder(builder), size, progress)
            if ok:
                trace = builder.finish(doc, lambda: bytes(data))
            del builder
        if trace is None:
            whole = data if isinstance(data, bytes) else bytes(data)
            trace = _read_whole(path, whole)
    finally:
        if was_enabled:
            gc.enable()
        if stream is not None:
            stream.close()
    return _noted(trace, plan.note)


def _noted(trace: Trace, note: str | None) -> Trace:
    if note:
        trace.warnings.append(note)
    return trace
