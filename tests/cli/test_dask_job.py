"""A multi-rank job on dask: each rank's work stays on the workers and only its summary and
findings come back, the run-level rules are computed from those on the client, the report is
the one `--jobs` gives, and the progress line counts ranks as the cluster finishes them."""

from __future__ import annotations

import dataclasses
import functools
import json
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint import findings
from perflint.cli import main
from perflint.model import Trace
from perflint.options import CheckOptions
from perflint.pipeline import Outcome, cluster
from perflint.readers.source import read_bytes
from perflint.report import progress
from perflint.run import run_check
from tests.conftest import SHARED, shared_trace

# Ranks 0 and 1 of a real 128-rank job: different enough that the run-level rules find stragglers.
SOURCES = ("hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz")
RANKS = 6

# A local cluster warns when another one holds its HTTP port (8787): other runs on this machine.
pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")


def _job(d: Path, sources: list[dict[str, Any]], ranks: int) -> Path:
    """`ranks` rank files tiled from the real ranks in `sources` (rank i holds source i % len)."""
    d.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        doc = sources[r % len(sources)]
        doc["distributedInfo"] = {**(doc.get("distributedInfo") or {}), "rank": r, "world_size": ranks}
        (d / f"rank{r}.json").write_text(json.dumps(doc))
    return d


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sources = [json.loads(read_bytes(shared_trace(s))) for s in SOURCES]
    return _job(tmp_path_factory.mktemp("job"), sources, RANKS)


@pytest.fixture(scope="module")
def scheduler() -> Any:
    """An in-process cluster of one worker (threads): quick to start, results still pass through dask."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c.scheduler_address


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["check", *argv, "--format", "json", "--fail-on", "never"])
    return code, json.loads(capsys.readouterr().out)


def test_local_cluster_of_processes_gives_the_report_of_jobs(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """perflint's own LocalCluster (worker processes: every result crosses a process boundary
    pickled) against --jobs 1: the same JSON report, run-level findings included."""
    pytest.importorskip("dask.distributed")
    code, want = _json([str(job), "--jobs", "1"], capsys)
    got_code, got = _json([str(job), "--executor", "dask", "--jobs", "2"], capsys)
    assert (got_code, got) == (code, want)
    assert len(got["traces"]) == RANKS and not got["errors"]
    # The run-level rules ran on the client, from the ranks' rows.
    assert any(f["code"] == "STRAG001" for f in got["run_findings"]), got["run_statuses"]
    assert {s["code"] for s in got["run_statuses"]} >= {"STRAG001", "STAGE001"}


def _foreign(x: Any, where: str = "result") -> list[str]:
    """Where `x` holds anything but plain data and perflint's result records: a trace, a numpy
    array or scalar, an object of another kind."""
    if x is None or isinstance(x, (str, int, float, bool)):
        return []
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _foreign(v, f"{where}.{k}")]
    if isinstance(x, (list, tuple)):
        return [p for i, v in enumerate(x) for p in _foreign(v, f"{where}[{i}]")]
    if dataclasses.is_dataclass(x) and type(x) in (findings.TraceResult, findings.Finding, findings.RuleStatus, Outcome):
        return [p for f in dataclasses.fields(x) for p in _foreign(getattr(x, f.name), f"{where}.{f.name}")]
    return [f"{where}: {type(x).__module__}.{type(x).__name__}"]


def test_a_rank_brings_back_its_summary_never_its_trace(tmp_path: Path, scheduler: str) -> None:
    """What a rank's task sends to the client is plain data (no Trace, no arrays), and it does
    not grow with the trace: ten times the events add only the rank's collective rows."""
    src = shared_trace(SOURCES[0])
    tool = SHARED / "tools" / "scale_trace.py"
    subprocess.run([sys.executable, str(tool), src, str(tmp_path / "big.json"), "--repeat", "10"], check=True, capture_output=True)
    one = _job(tmp_path / "one", [json.loads(read_bytes(src))], 2)
    ten = _job(tmp_path / "ten", [json.loads((tmp_path / "big.json").read_bytes())], 2)
    opts = CheckOptions(executor="dask", scheduler=scheduler)
    sizes = {}
    for d in (one, ten):
        result, outcomes = run_check([str(d)], opts)
        assert not result.errors and len(outcomes) == 2
        assert _foreign(outcomes) == []
        sizes[d.name] = len(pickle.dumps(outcomes[0]))
    trace_ratio = (ten / "rank0.json").stat().st_size / (one / "rank0.json").stat().st_size
    assert trace_ratio > 9
    assert sizes["ten"] < 1.5 * sizes["one"], sizes
    assert sizes["one"] < 0.05 * (one / "rank0.json").stat().st_size


def test_foreign_sees_a_trace_or_an_array() -> None:
    """The check above can fail: a result holding a numpy array or a Trace is reported."""
    assert _foreign({"a": [1, np.arange(3)]}) == ["result.a[1]: numpy.ndarray"]
    assert _foreign([Outcome("p", result=Trace.__new__(Trace))]) == ["result[0].result: perflint.model.Trace"]


_carried: list[int] = []


def _counting_carry(fn: Any) -> Any:
    _carried.append(1)
    return fn


def test_the_rule_pack_travels_once(job: Path, scheduler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-trace function (the whole rule pack) is one task that every rank's task depends
    on, not a copy inside each rank's task."""
    monkeypatch.setattr(cluster, "_carry", _counting_carry)
    _carried.clear()
    result, _ = run_check([str(job)], CheckOptions(executor="dask", scheduler=scheduler))
    assert len(result.traces) == RANKS
    assert len(_carried) == 1


class _Tty:
    """A terminal stand-in for stderr: what was written, with the time of each write."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.writes.append(s)
        return len(s)

    def flush(self) -> None:
        pass


def _slow_path(trace: Trace, delay_s: float) -> str:
    time.sleep(delay_s)  # ranks end well apart, so the line is drawn between them
    return trace.path


def test_progress_counts_ranks_as_the_cluster_ends_them(job: Path, scheduler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CI", "GITHUB_ACTIONS", "PERFLINT_NO_PROGRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    from perflint.pipeline import Executor, run

    outcomes = run([str(job)], functools.partial(_slow_path, delay_s=0.3), executor=Executor("dask", scheduler))
    assert [o.error for o in outcomes] == [None] * RANKS
    lines = [w for w in tty.writes if w.startswith("\r\x1b[2Kperflint: reading traces")]
    counts = [int(w.split("] ")[1].split("/")[0]) for w in lines]
    assert all(w.split("] ")[1].split(" ")[0].endswith(f"/{RANKS}") for w in lines)
    assert counts == sorted(counts)  # never goes back
    assert set(range(1, RANKS)) & set(counts), counts  # drawn while ranks were still running
    assert tty.writes[-1] == "\r\x1b[2K"  # erased at the end


def test_no_progress_line_off_a_terminal(job: Path, scheduler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    tty = _Tty()
    monkeypatch.setattr(tty, "isatty", lambda: False)
    monkeypatch.setattr(sys, "stderr", tty)
    from perflint.pipeline import Executor, run

    run([str(job)], functools.partial(_slow_path, delay_s=0.3), executor=Executor("dask", scheduler))
    assert tty.writes == []


def test_runs_without_dask_installed(job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """dask is an extra: without it every executor but dask works."""
    for name in ("dask", "distributed", "dask.distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    code = main(["check", str(job), "--jobs", "1", "--format", "json", "--fail-on", "never"])
    assert code == 0
    assert len(json.loads(capsys.readouterr().out)["traces"]) == RANKS


def test_the_schedulers_own_http_port_fails_in_one_line_within_the_timeout(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The port a real scheduler serves its dashboard and health pages on, given as the scheduler."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c:
        address = f"tcp://127.0.0.1:{c.scheduler.http_server.port}"
        t0 = time.monotonic()
        code = main(["check", str(job), "--executor", "dask", "--scheduler", address, "--timeout", "2"])
        elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 10
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"perflint: error: {address}: cannot connect to the dask scheduler within 2 s"), err
