"""A trace made invalid JSON by a known writer bug (a frame name with bare quotes) is read with the
name repaired and a warning; any other invalid JSON stays an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflint.errors import InputError
from perflint.readers import read_trace
from perflint.readers.kineto.repair import escape_name_quotes
from tests.builder import TraceBuilder

BAD_NAME = 'torch/profiler/x.py(0):     """'


def _kineto_text() -> str:
    """A small trace written as Kineto writes it: one key per line."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=1000)
    b.op("aten::mm", ts=10, dur=100, dims=[[4, 4], [4, 4]], types=["float", "float"])
    b.op("python_frame", ts=200, dur=50)
    return json.dumps(b.to_dict(), indent=2)


def test_bare_quotes_in_a_name_are_repaired(tmp_path: Path) -> None:
    text = _kineto_text().replace('"name": "python_frame"', f'"name": "{BAD_NAME}"')
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # what the profiler wrote is not JSON
    trace = read_trace(str(path))
    assert any("1 event name with unescaped quotes repaired" in w for w in trace.warnings), trace.warnings
    assert BAD_NAME in {trace.strings[int(i)] for i in trace.ops.name}


def test_other_invalid_json_is_still_an_error(tmp_path: Path) -> None:
    text = _kineto_text()
    path = tmp_path / "t.json"
    path.write_text(text.replace('"name": "python_frame"', '"name" "python_frame"'))
    with pytest.raises(InputError, match="invalid JSON"):
        read_trace(str(path))


def test_escaped_names_are_left_alone() -> None:
    good = b'  "name": "a \\"quoted\\" name",\n  "name": "plain"\n'
    assert escape_name_quotes(good) is None
    fixed = escape_name_quotes(b'  "name": "a "b" c",\n')
    assert fixed is not None and json.loads(b"{" + fixed[0].strip().rstrip(b",") + b"}") == {"name": 'a "b" c'}
