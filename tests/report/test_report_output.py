"""Writing a report out: the JSON report goes out as its encoder's UTF-8 bytes, never copied into
a str, and reads the same as the JSON reporter's text wherever it is written."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from perflint.report import REPORTERS, ReportOptions, output
from perflint.report.output import render_output, write_file
from tests.report_sample import sample_result


def test_json_is_written_as_bytes_equal_to_the_text(tmp_path: Path) -> None:
    result = sample_result()
    data = render_output("json", result, ReportOptions())
    assert isinstance(data, bytes)
    text = REPORTERS["json"](result, ReportOptions())
    assert data.decode() == text and text.endswith("}\n")
    write_file(str(tmp_path / "r.json"), data)
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == text
    write_file(str(tmp_path / "r.json"), data, append=True)  # the job summary file is appended to
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == text + text


def test_other_formats_stay_text() -> None:
    assert render_output("text", sample_result(), ReportOptions()) == REPORTERS["text"](sample_result(), ReportOptions())


def test_bytes_onto_a_stdout_without_a_buffer_are_decoded_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A multi-byte character cut by a piece boundary still arrives whole."""
    text = "a" * 5 + "∩µs" * 4 + "\n"
    monkeypatch.setattr(output, "_PIECE", 6)  # every piece ends inside a character somewhere
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    write_file("-", text.encode())
    assert out.getvalue() == text


def test_bytes_onto_a_utf8_stdout_go_to_its_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    out.write("before ")  # what the stream holds already stays first
    monkeypatch.setattr(sys, "stdout", out)
    write_file("-", "∩ µs\n".encode())
    out.flush()
    assert raw.getvalue().decode() == "before ∩ µs\n"


def test_bytes_onto_a_stdout_of_another_encoding_are_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-16")
    monkeypatch.setattr(sys, "stdout", out)
    write_file("-", "µs\n".encode())
    out.flush()
    assert raw.getvalue().decode("utf-16") == "µs\n"


def test_text_is_written_a_piece_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "_PIECE", 4)
    text = "0123456789∩\n"
    write_file(str(tmp_path / "t.txt"), text)
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == text
