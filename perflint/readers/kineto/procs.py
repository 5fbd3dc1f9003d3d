"""The worker pool that decodes one big trace's slices (kineto._start_parallel)."""

from __future__ import annotations

from typing import Any

# Each slice's columns come back pickled through the pool's result pipe: about a third of the
# slice's size, 2-5 MB. Through the default 64 KiB pipe that is 40-80 writer/reader wake-ups
# per slice, 5-10 ms of a worker's time each (0.1-0.2 s of a 200 MB read in all). 1 MiB is
# Linux's default limit for an unprivileged process (/proc/sys/fs/pipe-max-size).
RESULT_PIPE_BYTES = 1 << 20


def slice_pool(workers: int) -> Any:
    """A ProcessPoolExecutor of `workers` forked processes (they inherit the buffer being read)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    widen_result_pipe(pool)
    return pool


def widen_result_pipe(pool: Any, size: int = RESULT_PIPE_BYTES) -> bool:
    """Grow the pipe the workers' results come through; False where that cannot be done (not
    Linux, a smaller system limit, another executor implementation): the pool works as it is."""
    try:
        import fcntl

        fd = pool._result_queue._reader.fileno()  # the executor's private SimpleQueue (CPython 3.8+)
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
        except PermissionError:  # above this system's limit: as much as it allows
            size = min(size, _pipe_max())
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
        return bool(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) >= size)
    except (AttributeError, ImportError, OSError, ValueError):
        return False


def _pipe_max() -> int:
    with open("/proc/sys/fs/pipe-max-size", "rb") as fh:
        return int(fh.read())


__all__ = ["RESULT_PIPE_BYTES", "slice_pool", "widen_result_pipe"]
