"""Reads begin before the rules load (pipeline.Prepared): a single big trace decodes in worker
processes, and --jobs rank workers read their first traces, while the parent imports and
validates. Results are unchanged, and a bad config or rule file found meanwhile still ends the
run with one line and exit 2, leaving no workers."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import threading
from pathlib import Path

import pytest

from perflint import pipeline
from perflint.cli import main
from perflint.graph.build import link
from perflint.pipeline import Prepared
from perflint.readers import source, start_read
from perflint.readers.source import read_bytes
from tests.conftest import shared_trace
from tests.readers.test_perf_equivalence import _reference, assert_same_trace

SRC = "tracelens/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"  # 8.6 MB of JSON


@pytest.fixture
def big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plain trace of several 1 MiB slices, read by two workers."""
    path = tmp_path / "rank0.json"
    path.write_bytes(read_bytes(shared_trace(SRC)))
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", str(1 << 20))
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "2")
    return path


@pytest.fixture
def big_gz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The same trace gzipped, streamed (as a big .gz is) through a ring to two workers."""
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(gzip.compress(read_bytes(shared_trace(SRC)), 1))
    monkeypatch.setattr(source, "GZ_STREAM_MIN_BYTES", 1 << 20)
    monkeypatch.setenv("PERFLINT_CHUNK_BYTES", str(1 << 20))
    monkeypatch.setenv("PERFLINT_READ_WORKERS", "2")
    return path


def _gunzip_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "perflint-gunzip"]


def test_gz_decompresses_and_decodes_before_the_result_is_asked(big_gz: Path) -> None:
    """A .gz is decompressed by a thread (slices handed to the workers as they come) from
    `start_read` on, not from `result()`: the rules load meanwhile."""
    pending = start_read(str(big_gz))
    try:
        assert pending.started
        assert len(multiprocessing.active_children()) == 2
        (thread,) = _gunzip_threads()
        thread.join(timeout=120)
        assert not thread.is_alive()  # the whole read done, nobody asked
        (got,) = pending.result()
    finally:
        pending.cancel()
    assert multiprocessing.active_children() == [] and _gunzip_threads() == []
    assert_same_trace(_reference(str(big_gz), read_bytes(str(big_gz))), got)


def test_abandoned_gz_read_stops_its_thread_and_workers(big_gz: Path) -> None:
    pending = start_read(str(big_gz))
    assert pending.started and _gunzip_threads()
    pending.cancel()
    assert not pending.started and multiprocessing.active_children() == [] and _gunzip_threads() == []
    with pytest.raises(RuntimeError):
        pending.result()


def test_gz_report_identical_to_the_plain_file(big: Path, big_gz: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def check(path: Path) -> dict[str, object]:
        assert main(["check", str(path), "--format", "json", "--fail-on", "never"]) == 0
        doc = json.loads(capsys.readouterr().out)
        doc.pop("generated_at", None)
        return doc

    text = json.dumps(check(big_gz)).replace("rank0.json.gz", "rank0.json")
    assert json.loads(text) == check(big)


def test_read_begins_in_workers_and_gives_the_same_trace(big: Path) -> None:
    prepared = Prepared([str(big)], jobs=2)
    try:
        assert prepared.pending is not None and prepared.pending.started
        assert len(multiprocessing.active_children()) == 2  # decoding while we get on
        (out,) = prepared.run(lambda t: t)
    finally:
        prepared.close()
    assert out.error is None
    assert_same_trace(link(_reference(str(big), big.read_bytes())), out.result)
    assert multiprocessing.active_children() == []


def test_abandoned_read_stops_its_workers(big: Path) -> None:
    pending = start_read(str(big))
    assert pending.started
    pending.cancel()
    assert not pending.started and multiprocessing.active_children() == []
    with pytest.raises(RuntimeError):
        pending.result()


@pytest.mark.parametrize("trace", ["big", "big_gz"])
def test_bad_config_during_the_read(
    trace: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path: Path = request.getfixturevalue(trace)
    cfg = tmp_path / "perflint.yaml"
    cfg.write_text("fail-on: sometimes\n")
    assert main(["check", str(path), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cfg) in err[0], err
    assert multiprocessing.active_children() == [] and _gunzip_threads() == []


def test_errors_surface_when_the_result_is_asked(tmp_path: Path) -> None:
    missing = start_read(str(tmp_path / "nope.json"))
    assert not missing.started
    with pytest.raises(Exception, match="nope.json"):
        missing.result()


def test_reports_identical_to_the_reference_reader(big: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def check() -> tuple[int, dict[str, object]]:
        code = main(["check", str(big), "--format", "json"])
        doc = json.loads(capsys.readouterr().out)
        doc.pop("generated_at", None)
        return code, doc

    early = check()
    monkeypatch.setenv("PERFLINT_READER", "reference")
    assert check() == early


@pytest.fixture
def ranks(tmp_path: Path) -> Path:
    """Three small rank files and one that is not a trace."""
    doc = json.loads(read_bytes(shared_trace("hta/trace_filter/sampled_rank-0.json.gz")))
    for r in range(3):
        doc["distributedInfo"] = {**(doc.get("distributedInfo") or {}), "rank": r, "world_size": 3}
        (tmp_path / f"rank{r}.json").write_text(json.dumps(doc))
    (tmp_path / "rank3.json").write_text('{"traceEvents": [')
    return tmp_path


def _digest(outcomes: list) -> list[tuple[str, object, object]]:
    return [(o.path, o.error, None if o.result is None else o.result.findings) for o in outcomes]


def test_small_rank_files_wait_for_the_rules(ranks: Path) -> None:
    """Workers forked before the rules load import the analysis modules again: not worth it for
    a few small files, which go to workers forked after it (inheriting the modules)."""
    prepared = Prepared([str(ranks)], jobs=2)
    try:
        assert prepared.ranks is None and multiprocessing.active_children() == []
    finally:
        prepared.close()


def test_rank_workers_read_before_the_work_exists(ranks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "RANK_POOL_MIN_BYTES", 0)
    import functools

    from perflint.config import Config
    from perflint.engine.loader import load_rules
    from perflint.run import check_one
    from perflint.selection import select_rules

    prepared = Prepared([str(ranks)], jobs=2)
    try:
        assert prepared.ranks is not None  # submitted: the workers are reading already
        assert len(multiprocessing.active_children()) == 2
        active = select_rules(load_rules([]), Config(), None, None, None)
        fn = functools.partial(check_one, active=active, include_edge_steps=False)
        early = prepared.run(fn)
    finally:
        prepared.close()
    assert multiprocessing.active_children() == []
    serial = Prepared([str(ranks)], jobs=1)
    assert serial.ranks is None
    want = serial.run(fn)
    assert _digest(early) == _digest(want)
    assert [o.error is not None for o in early] == [False, False, False, True]
    assert "rank3.json" in (early[3].error or "")


def test_rank_workers_stop_when_the_run_does(ranks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "RANK_POOL_MIN_BYTES", 0)
    prepared = Prepared([str(ranks)], jobs=2)
    assert prepared.ranks is not None
    prepared.close()  # e.g. a bad rule file: the waiting workers are let go
    assert multiprocessing.active_children() == []


def test_bad_rule_dir_with_rank_workers(
    ranks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "RANK_POOL_MIN_BYTES", 0)
    bad = tmp_path / "rules"
    bad.mkdir()
    (bad / "X.yaml").write_text("code: nope\n")
    assert main(["check", str(ranks), "--jobs", "2", "--rule-dir", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "X.yaml" in err[0], err
    assert multiprocessing.active_children() == []


def test_rank_pool_report_byte_identical(ranks: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def report(*extra: str) -> tuple[int, str]:
        code = main(["check", str(ranks), "--format", "json", "--fail-on", "never", *extra])
        return code, capsys.readouterr().out

    serial = report("--jobs", "1")
    monkeypatch.setattr(pipeline, "RANK_POOL_MIN_BYTES", 0)
    assert report("--jobs", "2") == serial
