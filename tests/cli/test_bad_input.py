"""Bad input: each case exits 2 with exactly one stderr line that names the
file and the problem, never a traceback; in a multi-file run the good file is still summarized."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from perflint.cli import main
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, shared_trace

GOOD = FIXTURES / "cpu" / "sync_item.pt.trace.json.gz"
GOOD_GZ = FIXTURES / "cpu" / "mlp_fp32_unaligned.pt.trace.json.gz"


def _summary(capsys: pytest.CaptureFixture[str], *paths: str | Path) -> tuple[int, str, list[str]]:
    code = main(["summary", *map(str, paths), "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def check_bad(capsys: pytest.CaptureFixture[str], bad: str | Path, problem: str) -> str:
    """`bad` alone and beside a good file: exit 2, one stderr line naming `bad` and matching `problem`."""
    assert GOOD.exists()
    code, out, err = _summary(capsys, bad)
    assert code == 2
    assert len(err) == 1, err
    line = err[0]
    assert "Traceback" not in line and "internal error" not in line
    assert line.startswith(f"perflint: error: {bad}: "), line
    assert re.search(problem, line[len(f"perflint: error: {bad}: "):], re.IGNORECASE), line
    assert json.loads(out)["traces"] == []

    code, out, err = _summary(capsys, bad, GOOD)
    assert code == 2
    assert err == [line]
    doc = json.loads(out)
    assert [t["path"] for t in doc["traces"]] == [str(GOOD)]
    assert doc["errors"] == [{"path": str(bad), "error": line[len("perflint: error: "):]}]
    return line


def _trace_with(tmp_path: Path, mutate: Any, name: str = "bad.json") -> Path:
    """A small valid synthetic trace whose first event of `cat` is changed by `mutate(event)`."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=1000)
    b.op("aten::mm", ts=10, dur=100, dims=[[4, 4], [4, 4]], types=["float", "float"])
    b.kernel("gemm_kernel", ts=150, dur=50, launch_ts=20)
    doc = b.to_dict()
    mutate(doc["traceEvents"])
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _first(events: list[dict[str, Any]], cat: str) -> dict[str, Any]:
    return next(e for e in events if e.get("ph") == "X" and e.get("cat") == cat)


def test_good_trace_alone_is_fine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ok = _trace_with(tmp_path, lambda evs: None, "ok.json")
    code, out, err = _summary(capsys, ok, GOOD)
    assert (code, err) == (0, [])
    assert len(json.loads(out)["traces"]) == 2


def test_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    check_bad(capsys, p, r"empty")


def test_whitespace_only_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "blank.json"
    p.write_bytes(b"  \n\t\n")
    check_bad(capsys, p, r"empty")


def test_empty_gzip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "empty.json.gz"
    p.write_bytes(gzip.compress(b""))
    check_bad(capsys, p, r"empty")


def test_truncated_gzip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = GOOD_GZ.read_bytes()
    p = tmp_path / "cut.pt.trace.json.gz"
    p.write_bytes(data[: len(data) // 2])
    check_bad(capsys, p, r"truncated gzip")


def test_corrupt_gzip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = bytearray(GOOD_GZ.read_bytes())
    data[100:200] = b"\x00" * 100
    p = tmp_path / "corrupt.json.gz"
    p.write_bytes(bytes(data))
    check_bad(capsys, p, r"gzip|invalid json")


def test_gzip_of_invalid_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "bad.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "cat": '))
    check_bad(capsys, p, r"invalid JSON")


def test_invalid_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [{"ph": "X",, }]}')
    check_bad(capsys, p, r"invalid JSON")


def test_counter_trace_with_a_key_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A CUPTI counter trace is decoded twice; the first decode skips an unknown key unread, so a
    byte that is no UTF-8 there surfaced in the second as an internal error (found by test_fuzz)."""
    text = gzip.decompress(Path(shared_trace("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz")).read_bytes())
    assert b"cuda_profiler_range" in text
    p = tmp_path / "mangled.json"
    p.write_bytes(b'{"\xf3chema": 1, ' + text[text.index(b"{") + 1 :])
    check_bad(capsys, p, r"invalid JSON")


def test_truncated_plain_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = gzip.decompress(GOOD.read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(text[: len(text) // 3])
    check_bad(capsys, p, r"invalid JSON.*truncated")


def test_not_json_at_all(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "notes.json"
    p.write_text("hello, this is not JSON\n")
    check_bad(capsys, p, r"not JSON|unrecognized format")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"schemaVersion": 1, "events": []}', r"not a .*trace.*traceEvents"),
        ("[[1, 2], [3, 4]]", r"not a .*trace"),
        ("42", r"not a .*trace|unrecognized format|not JSON"),
        ('"traceEvents"', r"not a .*trace|unrecognized format|not JSON"),
        ('{"traceEvents": {"ph": "X"}}', r"not a .*trace|unexpected value"),
        ('{"traceEvents": []}', r"no events"),
        ("[]", r"no events"),
        ('{"traceEvents": [{"ph": "X", "cat": "foo", "name": "a", "ts": 1, "dur": 2}]}', r"no PyTorch profiler events"),
    ],
    ids=["dict-without-traceEvents", "list-of-lists", "number", "string", "traceEvents-not-a-list", "no-events",
         "empty-list", "chrome-trace-but-not-pytorch"],
)
def test_json_that_is_not_a_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, problem: str) -> None:
    p = tmp_path / "x.json"
    p.write_text(content)
    check_bad(capsys, p, problem)


def test_directory_with_no_traces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "log.txt").write_text("nothing here")
    check_bad(capsys, d, r"no trace files")


def test_missing_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    check_bad(capsys, tmp_path / "does_not_exist.json", r"no such file")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_unreadable_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "secret.json"
    p.write_bytes(GOOD.read_bytes())
    p.chmod(0)
    try:
        check_bad(capsys, p, r"permission denied")
    finally:
        p.chmod(0o644)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_not_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Reading a FIFO with no writer would block forever: it must be refused up front."""
    p = tmp_path / "pipe.json"
    os.mkfifo(p)
    check_bad(capsys, p, r"not a regular file")


def test_dangling_symlink(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "link.pt.trace.json"
    p.symlink_to(tmp_path / "gone.json")
    check_bad(capsys, p, r"no such file")


def _dropped(capsys: pytest.CaptureFixture[str], path: Path, problem: str) -> str:
    """A trace with one damaged event is read: the event dropped, one warning says why."""
    code, out, err = _summary(capsys, path)
    assert (code, err) == (0, [])
    warnings = json.loads(out)["traces"][0]["warnings"]
    hits = [w for w in warnings if w.startswith("1 event with unusable times dropped")]
    assert len(hits) == 1 and re.search(problem, hits[0]), warnings
    return hits[0]


def test_negative_duration(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "kernel").update(dur=-3.5))
    assert "gemm_kernel" in _dropped(capsys, p, r"negative duration")


def test_negative_cpu_op_duration(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "cpu_op").update(dur=-1))
    _dropped(capsys, p, r"negative duration.*aten::mm")


def test_absurd_duration(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    eight_days_us = 8 * 24 * 3600 * 1e6
    p = _trace_with(tmp_path, lambda evs: _first(evs, "kernel").update(dur=eight_days_us))
    _dropped(capsys, p, r"absurd duration|over 7 days")


def test_most_events_damaged_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def damage(evs: list[dict[str, Any]]) -> None:
        for e in evs:
            if e.get("ph") == "X":
                e["dur"] = -1

    check_bad(capsys, _trace_with(tmp_path, damage), r"most events have unusable times")


def test_duration_just_under_seven_days_is_accepted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "cpu_op").update(dur=6.9 * 24 * 3600 * 1e6))
    code, _, err = _summary(capsys, p)
    assert (code, err) == (0, [])


def test_x_event_missing_ts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "cpu_op").pop("ts"))
    _dropped(capsys, p, r"no 'ts'.*aten::mm")


def test_x_event_missing_dur(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "kernel").pop("dur"))
    _dropped(capsys, p, r"no 'dur'.*gemm_kernel")


def test_non_numeric_ts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _trace_with(tmp_path, lambda evs: _first(evs, "cuda_runtime").update(ts="soon"))
    check_bad(capsys, p, r"non-numeric|ts")


def test_infinite_ts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = _trace_with(tmp_path, lambda evs: _first(evs, "cpu_op").update(ts=12.5), "src.json").read_text()
    assert src.count('"ts": 12.5') == 1
    p = tmp_path / "inf.json"
    p.write_text(src.replace('"ts": 12.5', '"ts": 1e400'))
    check_bad(capsys, p, r"non-finite|out of range|out-of-range")


def test_several_bad_files_one_line_each(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "a.json"
    empty.write_text("")
    notrace = tmp_path / "b.json"
    notrace.write_text("{}")
    code = main(["summary", str(empty), str(GOOD), str(notrace), "--format", "json", "-j", "2"])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 2 and "Traceback" not in err
    assert {str(empty), str(notrace)} == {ln.split(": ")[2] for ln in lines}
    assert [t["path"] for t in json.loads(out)["traces"]] == [str(GOOD)]


def test_text_format_still_summarizes_good_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(GOOD_GZ.read_bytes()[:500])
    code = main(["summary", str(bad), str(GOOD), "-j", "1"])
    out, err = capsys.readouterr()
    assert code == 2
    assert len(err.splitlines()) == 1 and str(bad) in err and "Traceback" not in err
    assert str(GOOD) in out


def test_an_unreadable_trace_is_printed_once_where_both_streams_meet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal (or with 2>&1) stderr's error line and the text report would say it twice."""
    bad = tmp_path / "bad.json"
    bad.write_text("{bad")
    for shared, want_in_report in ((False, True), (True, False)):
        monkeypatch.setattr("perflint.commands.common.stdout_is_stderr", lambda shared=shared: shared)
        for fmt in ("text", "concise"):
            code = main(["check", str(bad), str(GOOD), "--format", fmt])
            out, err = capsys.readouterr()
            assert code == 2 and len(err.splitlines()) == 1 and str(bad) in err
            assert (str(bad) in out) is want_in_report, (shared, fmt, out)
            assert "1 unreadable" in out.splitlines()[-1]


def test_stdout_is_stderr_compares_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perflint.commands.common import stdout_is_stderr

    with open(tmp_path / "a", "w") as a, open(tmp_path / "a", "a") as a2, open(tmp_path / "b", "w") as b:
        monkeypatch.setattr("sys.stdout", a)
        monkeypatch.setattr("sys.stderr", a2)
        assert stdout_is_stderr()
        monkeypatch.setattr("sys.stderr", b)
        assert not stdout_is_stderr()
