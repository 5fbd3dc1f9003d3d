"""The reader protocol: a format is one Reader and one registry entry; discovery offers it the
files and directories it can read; a file may hold several ranks; options are passed in; files of
other applications and exports still to be made get one clear line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflint import readers
from perflint.cli import main
from perflint.errors import InputError
from perflint.model import KERNEL, Trace
from perflint.readers import Reader, ReadOptions, discover, read_traces
from perflint.readers.tables import Strings, Threads, build_trace
from tests.conftest import FIXTURES

GOOD = FIXTURES / "cpu" / "sync_item.pt.trace.json.gz"


class ToyReader(Reader):
    """A directory holding `toy.marker` is one run; each line of the marker is one rank's kernel
    time in µs. Records the options of each read."""

    name = "toy"
    title = "toy profiler output"
    seen: list[ReadOptions] = []

    def sniff(self, path: str, head: bytes) -> bool:
        return False

    def claims_dir(self, path: str, files: list[str]) -> bool:
        return "toy.marker" in files

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        self.seen.append(options)
        lines = Path(path, "toy.marker").read_text().split()
        out = []
        for rank, dur in enumerate(lines):
            strings, threads = Strings(), Threads()
            t = threads.id(1, 1)
            name = strings.id("volta_sgemm_128x64_nn")
            out.append(
                build_trace(
                    path,
                    "toy",
                    strings,
                    threads,
                    runtime={"name": [strings.id("cudaLaunchKernel")], "thread": [t], "ts": [0.0], "dur": [5.0], "correlation": [1]},
                    gpu={"kind": [KERNEL], "name": [name], "ts": [10.0], "dur": [float(dur)], "correlation": [1], "stream": [7]},
                    rank=rank,
                    world_size=len(lines),
                )
            )
        return out


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> type[ToyReader]:
    ToyReader.seen = []
    monkeypatch.setitem(readers.READERS, "toy", ToyReader())
    return ToyReader


def _toy_run(root: Path, durations: str) -> Path:
    run = root / "run"
    run.mkdir(parents=True)
    (run / "toy.marker").write_text(durations)
    (run / "ignored.json").write_text("{}")  # inside a claimed directory: not scanned as a file
    return run


def test_claimed_directory_is_one_run_of_several_ranks(toy: type[ToyReader], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _toy_run(tmp_path / "runs", "100 300")
    (tmp_path / "runs" / "rank0.json.gz").write_bytes(GOOD.read_bytes())
    files, errors, skipped = discover([str(tmp_path / "runs")])
    assert files == [str(tmp_path / "runs" / "rank0.json.gz"), str(run)] and not errors and not skipped
    assert [t.rank for t in read_traces(str(run))] == [0, 1]
    rc = main(["summary", str(tmp_path / "runs"), "--format", "json", "-j", "1", "--memory-budget", "1G"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    toy_traces = [t for t in doc["traces"] if t["path"] == str(run)]
    assert [t["rank"] for t in toy_traces] == [0, 1]
    assert [t["kernels"]["time_us"] for t in toy_traces] == [100.0, 300.0]
    assert {t["path"] for t in doc["traces"]} == {str(run), str(tmp_path / "runs" / "rank0.json.gz")}
    # The options came in the call, not through module state.
    assert toy.seen and toy.seen[-1].memory_budget == 1 << 30 and toy.seen[-1].workers == 1


def test_claimed_directory_named_directly(toy: type[ToyReader], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _toy_run(tmp_path, "50")
    rc = main(["summary", str(run), "--format", "json", "-j", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and [t["path"] for t in doc["traces"]] == [str(run)]


def test_input_format_names_a_reader(toy: type[ToyReader], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["summary", str(GOOD), "--input-format", "nope", "--format", "json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "unknown format 'nope'" in err[0] and "toy" in err[0]


def _summary(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, dict[str, Any], list[str]]:
    rc = main(["summary", *map(str, paths), "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err.strip().splitlines()


def _other_app_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE moz_places (id INTEGER, url TEXT)")
    con.execute("INSERT INTO moz_places VALUES (1, 'https://example.com')")
    con.commit()
    con.close()
    return path


def test_sqlite_of_another_application(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _other_app_db(tmp_path / "places.sqlite")
    rc, doc, err = _summary(capsys, db, GOOD)
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"perflint: error: {db}: SQLite database that is neither") and "moz_places" in err[0]
    assert [t["path"] for t in doc["traces"]] == [str(GOOD)]
    # Met in a directory scan it is not a trace: skipped, with the reason.
    files, errors, skipped = discover([str(tmp_path)])
    assert files == [] and [p for p, _ in skipped] == [str(db)] and "neither an Nsight" in skipped[0][1]


def test_corrupt_sqlite_is_an_error_even_in_a_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _other_app_db(tmp_path / "x.sqlite").read_bytes()
    bad = tmp_path / "runs" / "report.sqlite"
    bad.parent.mkdir()
    bad.write_bytes(good[:100] + b"\x00garbage" * 200)
    (tmp_path / "runs" / "rank0.json.gz").write_bytes(GOOD.read_bytes())
    rc, doc, err = _summary(capsys, tmp_path / "runs")
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"perflint: error: {bad}: ")
    assert "corrupt" in err[0] or "truncated" in err[0]
    assert len(doc["traces"]) == 1  # the other trace is still summarized


@pytest.mark.parametrize("suffix", [".nsys-rep", ".qdrep"])
def test_nsight_report_gets_the_export_command(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rep = tmp_path / f"report1{suffix}"
    rep.write_bytes(b"\x00\x01binary nsight report")
    rc, doc, err = _summary(capsys, rep)
    assert rc == 2 and len(err) == 1 and f"nsys export --type sqlite report1{suffix}" in err[0]
    (tmp_path / "rank0.json.gz").write_bytes(GOOD.read_bytes())
    files, errors, skipped = discover([str(tmp_path)])
    assert files == [str(tmp_path / "rank0.json.gz")] and not errors
    assert skipped == [(str(rep), f"Nsight Systems report: export it with `nsys export --type sqlite report1{suffix}` and check the .sqlite file")]


def test_unrecognized_content_names_what_perflint_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "trace.bin"
    p.write_bytes(b"\x89PNG\r\n\x1a\n not a trace")
    rc, _, err = _summary(capsys, p)
    assert rc == 2 and len(err) == 1 and "unrecognized format" in err[0] and "Kineto" in err[0]


def test_every_format_says_why_a_headline_number_is_null(capsys: pytest.CaptureFixture[str]) -> None:
    """The summary has the same keys on every format; a number a format cannot give is null and a
    warning names it."""
    from tests.conftest import shared_trace

    paths = [
        FIXTURES / "gpu" / "clean_bf16.pt.trace.json.gz",
        GOOD,
        *sorted((FIXTURES / "nsys").glob("*.sqlite")),
        FIXTURES / "mindspore" / "gpu" / "two_rank",
        Path(shared_trace("pyprof/lm_da6bcc3/net.sql")),
    ]
    rc, doc, _ = _summary(capsys, *paths)
    assert rc == 0 and {t["path"] for t in doc["traces"]} == {str(p) for p in paths}
    formats_seen = 0
    for t in doc["traces"]:
        said = " ".join(t["warnings"])
        for group, key in (("device", "name"), ("steps", "median_us"), ("gpu", "utilization_pct"), ("gpu", "sm_efficiency_pct"), ("gpu", "achieved_occupancy_pct")):
            if t[group][key] is None and (group == "device" or group == "steps" or t["kernels"]["count"]):
                token = "device.*" if group == "device" else key
                assert token in said, (t["path"], group, key, said)
                formats_seen += 1
    assert formats_seen >= 5  # the check above was exercised on the formats that lack data


def test_an_integer_column_beyond_its_type_is_bad_input() -> None:
    strings, threads = Strings(), Threads()
    grid = np.array([[2**31, 1, 1]], dtype=np.int64)
    with pytest.raises(InputError, match=r"x\.json: GPU activity grid: values beyond 32 bits"):
        build_trace("x.json", "toy", strings, threads, gpu={"kind": [KERNEL], "name": [strings.id("k")], "grid": grid})
    ok = build_trace("x.json", "toy", strings, threads, gpu={"kind": [KERNEL], "name": [strings.id("k")], "grid": grid >> 1})
    assert ok.gpu.grid.dtype == np.int32 and ok.gpu.grid.tolist() == [[2**30, 0, 0]]


def test_check_help_names_every_format_and_suffix(capsys: pytest.CaptureFixture[str]) -> None:
    from perflint.readers import READERS, trace_suffixes

    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    path_help = text[text.index("PATH trace files") : text.index("options:")]
    assert all(s + "," in path_help or s + ";" in path_help or s + ")" in path_help for s in trace_suffixes()), path_help
    fmt_help = text[text.rindex("--input-format NAME") :][:200]
    assert all(name in fmt_help for name in READERS), fmt_help
