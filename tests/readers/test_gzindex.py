"""Random access into gzip content through saved decompressor states: every read gives the bytes
a plain decompression gives, in any order, and a seek to a saved point resumes there instead of
decompressing from the start."""

from __future__ import annotations

import gzip
import io
import random
import zlib

import pytest

from perflint.readers import gzindex
from perflint.readers.gzindex import Index, IndexedGzip

# Two gzip members one after the other (as `cat a.gz b.gz` makes), then zero padding.
PARTS = [bytes(random.Random(s).choices(b"abcdefgh{}[]:,0123456789 ", k=300_000)) for s in (1, 2)]
CONTENT = b"".join(PARTS)
DATA = gzip.compress(PARTS[0]) + gzip.compress(PARTS[1]) + b"\x00" * 64


def test_reads_at_marks_in_any_order_equal_the_content() -> None:
    marks = list(range(1000, len(CONTENT), 37_000))
    index = Index(marks)
    order = marks + marks[::-1] + random.Random(3).sample(marks, len(marks))
    for at in order:
        g = IndexedGzip(io.BytesIO(DATA), index)
        g.seek(at)
        assert g.read(5000) == CONTENT[at : at + 5000], at
    assert [p[0] for p in index.points] == marks  # a point at every mark, in order, once
    g = IndexedGzip(io.BytesIO(DATA), index)
    g.seek(marks[-1] + 10)
    assert g.out == marks[-1]  # resumed at the last point: nothing before it decompressed again
    assert g.read() == CONTENT[marks[-1] + 10 :]  # to the end, across the second gzip member
    assert g.read(10) == b""


def test_reads_between_marks_and_relative_seeks() -> None:
    index = Index([200_000, 450_000])
    g = IndexedGzip(io.BytesIO(DATA), index)
    assert g.read(10) == CONTENT[:10]
    g.seek(100, io.SEEK_CUR)
    assert g.tell() == 110 and g.read(3) == CONTENT[110:113]
    g.seek(500_000)
    assert g.read(7) == CONTENT[500_000:500_007]
    g.seek(5)  # behind what is decoded and before every point: from the start again
    assert g.out == 0 and g.read(4) == CONTENT[5:9]
    with pytest.raises(io.UnsupportedOperation):
        g.seek(0, io.SEEK_END)


def test_marks_beyond_the_limit_are_thinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzindex, "MAX_MARKS", 10)
    index = Index(list(range(0, 100_000, 1000)))
    assert len(index.marks) <= 10 and index.marks[0] == 0 and index.marks == sorted(index.marks)


def test_damaged_data_raises() -> None:
    g = IndexedGzip(io.BytesIO(DATA[: len(DATA) // 3]), Index([]))
    with pytest.raises(EOFError):
        g.read()
    bad = bytearray(gzip.compress(PARTS[0]))
    bad[-6] ^= 0xFF  # the CRC
    with pytest.raises(zlib.error):
        IndexedGzip(io.BytesIO(bytes(bad)), Index([])).read()
