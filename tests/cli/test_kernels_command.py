"""`perflint kernels` / `perflint ops`: the per-kernel and per-op tables on every format, in every
output format; on the real pyprof run, pyprof's own table (lm.csv) row for row."""

from __future__ import annotations

import csv
import io
import json

import pytest

from perflint.cli import main
from tests.conftest import FIXTURES, shared_trace

RUN = "pyprof/lm_da6bcc3"
PYPROF = {"kernel": "Kernel", "mod": "Module", "op": "Op", "dir": "Direction", "sil": "Sil(ns)", "device": "Device", "stream": "Stream", "block": "Block", "grid": "Grid"}


def _csv(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    assert main(argv) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_pyprof_table_row_for_row(capsys: pytest.CaptureFixture[str]) -> None:
    ours = _csv(["kernels", shared_trace(f"{RUN}/net.sql"), "-c", ",".join(PYPROF), "--format", "csv"], capsys)
    with open(shared_trace(f"{RUN}/lm.csv"), newline="") as f:
        theirs = list(csv.DictReader(f))
    assert len(ours) == len(theirs) == 284
    for col, name in PYPROF.items():
        assert sum(a[col] == b[name] for a, b in zip(ours, theirs)) == 284, col


@pytest.mark.parametrize("path", ["gpu/gemm_fp16_unaligned.pt.trace.json.gz", "nsys/nsys2021_emit_nvtx.sqlite", "mindspore/gpu/data_stall"])
def test_every_format_and_output(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    p = str(FIXTURES / path)
    rows = _csv(["kernels", p, "--format", "csv", "-c", "idx,kernel,sil,category,grid"], capsys)
    assert rows and [int(r["idx"]) for r in rows] == list(range(len(rows)))
    assert main(["kernels", p, "--format", "json", "-c", "idx,kernel,sil"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["kernel"] for r in doc] == [r["kernel"] for r in rows]
    assert main(["kernels", p, "-w", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(rows) + 1 and all(len(line) <= 100 for line in lines)
    assert main(["ops", p, "--format", "tsv"]) == 0
    head, *body = capsys.readouterr().out.splitlines()
    assert head.split("\t")[:3] == ["name", "kind", "calls"] and body


def test_unknown_column_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["kernels", str(FIXTURES / "gpu" / "gemm_fp16_unaligned.pt.trace.json.gz"), "-c", "kernel,nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "unknown column(s) nope" in err[0]
