"""Per-trace work in worker processes and on dask: byte-identical results (issue 6 points 3-4)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perflint.cli import main
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


def test_scheduler_needs_dask(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _out(_check(rank_dir, "--scheduler", "tcp://127.0.0.1:1"), capsys)
    assert code == 2
    assert "--executor dask" in _out.err  # type: ignore[attr-defined]
