"""Per-trace work on a dask.distributed cluster.

A trace's own failure is its Outcome (`work.guarded` never raises), so whatever the cluster
raises is the cluster's: the scheduler unreachable or lost, workers that died or cannot run
perflint, no workers left. That stops the run as one `ClusterError` line (exit 2) naming the
scheduler; `--debug` shows the traceback it came from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from perflint.errors import PerflintError, UsageError
from perflint.model import Trace
from perflint.pipeline.shared import Strings
from perflint.pipeline.work import Outcome, Work, run_one
from perflint.readers import ReadOptions


class ClusterError(PerflintError):
    """The dask cluster failed, not a trace: the run stops."""


def run_dask(
    work: list[Work], jobs: int, scheduler: str | None, timeout: float, debug: bool = False, done: Callable[[str], None] | None = None
) -> list[Outcome]:
    """`run_one` for every item of `work` on the cluster at `scheduler` (None: a LocalCluster of
    up to `jobs` worker processes); outcomes in `work` order. `timeout`: seconds to reach the
    scheduler, and to wait while it has no worker; `done(path)`: as each file's task ends."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--executor dask", "needs dask.distributed: install perflint-gpu[dask]") from None
    where = scheduler or "the local dask cluster"
    # The connect timeout also bounds the client's reconnect attempts and the workers' own connects.
    settings: dict[str, Any] = {"distributed.comm.timeouts.connect": f"{timeout}s"}
    with dask.config.set(settings), _quiet(debug):
        cluster = None
        try:
            if scheduler:
                client = _connect(Client, scheduler, timeout)
            else:
                n = max(1, min(jobs, len(work)))
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
                where = f"the local dask cluster at {cluster.scheduler_address}"
                client = Client(cluster, timeout=timeout)
        except Exception as exc:  # a bad address, a refused or silent port, or something else answering there
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close(timeout=timeout)
            within = f" within {timeout:g} s" if isinstance(exc, (OSError, TimeoutError)) else ""
            raise ClusterError(where, f"cannot connect to the dask scheduler{within} ({_why(exc)})") from exc
        try:
            return collect(client, work, where, timeout, done)
        finally:
            with contextlib.suppress(Exception):  # a lost scheduler: nothing left to close cleanly
                client.close(timeout=timeout)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close(timeout=timeout)


def _connect(client_type: Any, address: str, timeout: float) -> Any:
    """A client of the scheduler at `address`, or TimeoutError after `timeout`: a port that accepts
    the connection but does not speak dask's protocol (its dashboard, any HTTP server) leaves
    dask's own handshake waiting for ever, so the connect runs in a daemon thread that the run
    stops waiting for."""
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_type(address, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it was raised
            box["error"] = exc

    th = threading.Thread(target=connect, name="perflint dask connect", daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        raise TimeoutError("something answered there but no dask scheduler did: is it another port of the cluster, its dashboard?")
    if "error" in box:
        raise box["error"]
    return box["client"]


def collect(client: Any, work: list[Work], where: str, timeout: float, done: Callable[[str], None] | None = None) -> list[Outcome]:
    """The outcomes of `work` on `client`, in `work` order; `done(path)` as each file's task
    ends, in any order (the progress line). A failure of the cluster (anything a task raises, or
    no worker for `timeout` seconds) is a `ClusterError` naming `where`.

    What comes back from a worker is a file's outcomes only (`fn`'s per-rank result: findings,
    headline numbers, the rank's row for the run-level rules), never its trace; each result is
    released on the cluster once fetched, and its strings shared with the other ranks' results.
    The per-trace function (the whole rule pack, about 0.1 MB pickled) travels once, as a task of
    its own that every rank's task depends on, instead of once per rank file."""
    carriers: dict[int, Any] = {}
    for _, _, fn, _ in work:
        if id(fn) not in carriers:
            carriers[id(fn)] = client.submit(_carry, fn, pure=False)
    # pure=False: the same file twice is two tasks; each task is one whole file.
    futures = client.map(
        _run_on_worker,
        [path for path, *_ in work],
        [fmt for _, fmt, _, _ in work],
        [carriers[id(fn)] for _, _, fn, _ in work],
        [options for *_, options in work],
        pure=False,
    )
    index = {fut.key: i for i, fut in enumerate(futures)}
    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for fut in futures:
        fut.add_done_callback(finished.put)  # also when it errs or is cancelled (a lost scheduler)
    strings = Strings()  # one copy of the strings the ranks' results share
    results: list[list[Outcome] | None] = [None] * len(futures)
    left = len(futures)
    idle_since: float | None = None
    try:
        while left:
            try:
                fut = finished.get(timeout=min(_POLL_S, timeout))
            except queue.Empty:
                idle_since = _check_workers(client, where, timeout, idle_since)
                continue
            idle_since = None
            i = index[fut.key]
            path = work[i][0]
            try:
                found = _result(fut, path, where)
            except ClusterError:
                # A dead worker fails every task it held at once: name the first file in order.
                first = next((j for j in range(i) if futures[j] is not None and futures[j].status == "error"), None)
                if first is not None:
                    _result(futures[first], work[first][0], where)
                raise
            results[i] = strings(found)
            futures[i] = None
            fut.release()
            left -= 1
            if done is not None:
                done(path)
    finally:
        pending = [f for f in futures if f is not None] + list(carriers.values())
        with contextlib.suppress(Exception):
            client.cancel(pending)
    return [o for found in results if found is not None for o in found]


def _carry(fn: Callable[[Trace], Any]) -> Callable[[Trace], Any]:
    return fn


def _run_on_worker(path: str, fmt: str | None, fn: Callable[[Trace], Any], options: ReadOptions) -> list[Outcome]:
    """`run_one` with the trace read in this process: the cluster decides how many run at once,
    and a reader's forked children would hold this worker's connections open after it died."""
    return run_one((path, fmt, fn, dataclasses.replace(options, workers=1)))


_POLL_S = 1.0  # how often a waiting run checks that the cluster still has workers


def _result(fut: Any, path: str, where: str) -> list[Outcome]:
    """The outcomes of `fut`, which has finished, erred or been cancelled."""
    from concurrent.futures import CancelledError

    from distributed.scheduler import KilledWorker

    try:
        found: list[Outcome] = fut.result()
        return found
    except KilledWorker as exc:
        n = exc.allowed_failures + 1
        who = "a dask worker" if n == 1 else f"{n} dask workers"
        raise ClusterError(where, f"{who} died while analysing {path}; the run stopped") from exc
    except CancelledError as exc:  # the client cancels every future when the scheduler goes
        raise ClusterError(where, "lost the connection to the dask scheduler; the run stopped") from exc
    except Exception as exc:  # run_one never raises: this is the cluster's (a worker without perflint, a lost comm)
        raise ClusterError(where, f"the dask cluster failed while analysing {path} ({_why(exc)}); the run stopped") from exc


def _check_workers(client: Any, where: str, timeout: float, idle_since: float | None) -> float | None:
    """While no task ends, the scheduler is asked for its workers: one with none for `timeout`
    seconds would leave the run waiting for ever. Returns since when it has had none (None: it has some)."""
    try:
        workers = client.nthreads()
    except Exception as exc:
        raise ClusterError(where, f"lost the connection to the dask scheduler ({_why(exc)}); the run stopped") from exc
    if workers:
        return None
    now = time.monotonic()
    if idle_since is None:
        return now
    if now - idle_since >= timeout:
        raise ClusterError(where, f"the dask scheduler has had no workers for {timeout:g} s; the run stopped")
    return idle_since


def _why(exc: BaseException) -> str:
    """The root of `exc`'s chain in a few words (dask wraps a refused connection twice)."""
    root: BaseException = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = str(root).splitlines()[0] if str(root) else ""
    if isinstance(root, OSError) and root.strerror:
        text = root.strerror.lower()
    return f"{type(root).__name__}: {text}" if text and not isinstance(root, OSError) else text or type(root).__name__


@contextlib.contextmanager
def _quiet(debug: bool) -> Iterator[None]:
    """dask logs its retries and a lost worker or scheduler on stderr, and warns when the local
    cluster's HTTP port (8787) is taken, as it is while another local cluster runs: perflint says
    what matters in one line instead (all of it with --debug)."""
    if debug:
        yield
        return
    import logging
    import warnings

    # Process-wide: dask sets its own loggers' levels, and perflint itself does not log.
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(before)

__all__ = ["ClusterError", "collect", "run_dask"]
