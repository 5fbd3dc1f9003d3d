"""Per-trace work in worker processes and on dask: byte-identical results, and a failing cluster
stops the run with one line and exit 2 (a failing trace costs only itself)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from perflint.model import Trace
from perflint.pipeline import ClusterError, Executor, run
from perflint.readers.source import read_bytes
from tests.conftest import shared_trace

RANK_SOURCE = "hta/trace_filter/sampled_rank-0.json.gz"


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four copies of a real rank with distinct ranks."""
    doc = json.loads(read_bytes(shared_trace(RANK_SOURCE)))
    d = tmp_path_factory.mktemp("ranks")
    for r in range(4):
        doc["distributedInfo"] = {**(doc.get("distributedInfo") or {}), "rank": r, "world_size": 4}
        (d / f"rank{r}.json").write_text(json.dumps(doc))
    return d


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    cap = capsys.readouterr()
    _out.err = cap.err  # type: ignore[attr-defined]
    return code, cap.out


def _check(d: Path, *extra: str) -> list[str]:
    return ["check", str(d), "--format", "json", "--fail-on", "never", *extra]


def test_jobs_byte_identical(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _out(_check(rank_dir, "--jobs", "1"), capsys)
    two = _out(_check(rank_dir, "--jobs", "2"), capsys)
    assert one == two
    assert one[1].count('"path"') >= 4
    s1 = _out(["summary", str(rank_dir), "--format", "json", "--jobs", "1"], capsys)
    s2 = _out(["summary", str(rank_dir), "--format", "json", "--jobs", "2"], capsys)
    assert s1 == s2


def test_dask_local_cluster_identical(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("dask.distributed")
    want = _out(_check(rank_dir, "--jobs", "1"), capsys)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        got = _out(_check(rank_dir, "--executor", "dask", "--scheduler", cluster.scheduler_address), capsys)
    assert got == want


def test_dask_missing_is_a_usage_error(
    rank_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as if not installed
    code, _ = _out(_check(rank_dir, "--executor", "dask"), capsys)
    assert code == 2
    assert "install perflint-gpu[dask]" in _out.err  # type: ignore[attr-defined]
    # snapshot and summary run on the executor they are given too
    for argv in (["snapshot", str(rank_dir), "-o", "-"], ["summary", str(rank_dir)]):
        code, _ = _out([*argv, "--executor", "dask"], capsys)
        assert code == 2 and "install perflint-gpu[dask]" in _out.err, argv  # type: ignore[attr-defined]


def test_scheduler_needs_dask(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _out(_check(rank_dir, "--scheduler", "tcp://127.0.0.1:1"), capsys)
    assert code == 2
    assert "--executor dask" in _out.err  # type: ignore[attr-defined]


UNREACHABLE = "tcp://127.0.0.1:1"  # nothing listens on port 1: the connection is refused


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("extra", [[], ["--exit-zero"]])
def test_unreachable_scheduler_is_one_line_and_exit_2(
    rank_dir: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    pytest.importorskip("dask.distributed")
    t0 = time.monotonic()
    code, _ = _out(_check(rank_dir, "--executor", "dask", "--scheduler", UNREACHABLE, "--timeout", "0.5", *extra), capsys)
    elapsed = time.monotonic() - t0
    assert code == 2  # --exit-zero turns only the gate's 1 into 0
    line = _one_line(_out.err)  # type: ignore[attr-defined]
    assert line.startswith(f"perflint: error: {UNREACHABLE}: cannot connect to the dask scheduler within 0.5 s"), line
    assert elapsed < 20  # the 0.5 s timeout, not dask's default 30 s


def test_a_port_that_is_not_a_dask_scheduler_fails_within_the_timeout(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A port that accepts the connection but speaks another protocol (the dashboard's, any HTTP
    server) used to leave the dask handshake waiting for ever."""
    pytest.importorskip("dask.distributed")
    import http.server
    import threading

    # Threaded: the handler of dask's connection waits on it for ever, and shutdown() must not.
    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.server_address[1]}"
    try:
        t0 = time.monotonic()
        code, _ = _out(_check(rank_dir, "--executor", "dask", "--scheduler", address, "--timeout", "2"), capsys)
        elapsed = time.monotonic() - t0
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2 and elapsed < 10
    line = _one_line(_out.err)  # type: ignore[attr-defined]
    assert line.startswith(f"perflint: error: {address}: cannot connect to the dask scheduler within 2 s"), line


def test_unreachable_scheduler_summary(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("dask.distributed")
    code = main(["summary", str(rank_dir), "--executor", "dask", "--scheduler", UNREACHABLE, "--timeout", "0.5"])
    assert code == 2
    assert UNREACHABLE in _one_line(capsys.readouterr().err)


def test_unreachable_scheduler_debug_keeps_the_traceback(rank_dir: Path) -> None:
    pytest.importorskip("dask.distributed")
    with pytest.raises(ClusterError) as info:
        main(["--debug", *_check(rank_dir, "--executor", "dask", "--scheduler", UNREACHABLE, "--timeout", "0.5")])
    assert isinstance(info.value.__cause__, OSError)  # dask's own error, shown under it


@pytest.mark.parametrize("bad", ["0", "-1", "soon", "inf"])
def test_timeout_must_be_positive_seconds(rank_dir: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(_check(rank_dir, "--executor", "dask", "--timeout", bad))
    assert info.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_bad_trace_on_dask_costs_only_itself(rank_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("dask.distributed")
    for f in sorted(rank_dir.iterdir()):
        (tmp_path / f.name).symlink_to(f)
    bad = tmp_path / "rank9.json"
    bad.write_text('{"traceEvents": [')
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        code, out = _out(
            _check(tmp_path, "--executor", "dask", "--scheduler", cluster.scheduler_address, "--exit-zero"), capsys
        )
    assert code == 2
    line = _one_line(_out.err)  # type: ignore[attr-defined]
    assert line.startswith(f"perflint: error: {bad}: "), line
    assert len(json.loads(out)["traces"]) == 4  # the other traces were checked


def test_scheduler_with_no_workers_stops_the_run(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every worker gone (none here from the start): the run stops after --timeout instead of waiting for ever."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        code, _ = _out(_check(rank_dir, "--executor", "dask", "--scheduler", addr, "--timeout", "1"), capsys)
    assert code == 2
    line = _one_line(_out.err)  # type: ignore[attr-defined]
    assert line == f"perflint: error: {addr}: the dask scheduler has had no workers for 1 s; the run stopped"


def test_scheduler_lost_mid_run(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None)
    addr = cluster.scheduler_address

    def close_once_submitted() -> None:  # no worker: the tasks wait on the scheduler until it goes
        deadline = time.monotonic() + 60
        while not cluster.scheduler.tasks and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.close()

    closer = threading.Thread(target=close_once_submitted)
    closer.start()
    try:
        code, _ = _out(_check(rank_dir, "--executor", "dask", "--scheduler", addr, "--timeout", "30"), capsys)
    finally:
        closer.join()
        cluster.close()
    assert code == 2
    line = _one_line(_out.err)  # type: ignore[attr-defined]
    assert line == f"perflint: error: {addr}: lost the connection to the dask scheduler; the run stopped"


def _die(trace: Trace) -> Any:
    """Per-trace work that kills the dask worker process running it."""
    os._exit(3)


def test_worker_killed_mid_run(rank_dir: Path) -> None:
    """A worker process that dies under a trace, on a real LocalCluster: dask gives up on the
    task (after no retries here) and the run stops naming the scheduler and the trace."""
    distributed = pytest.importorskip("dask.distributed")
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            addr = cluster.scheduler_address
            with pytest.raises(ClusterError) as info:
                run([str(rank_dir)], _die, executor=Executor("dask", addr, timeout=10))
    assert info.value.line() == f"{addr}: a dask worker died while analysing {rank_dir / 'rank0.json'}; the run stopped"
