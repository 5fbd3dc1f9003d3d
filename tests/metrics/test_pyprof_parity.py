"""perflint's kernel table against pyprof's own (lm.csv from `pyprof.prof` on a real nvprof run):
attribution columns exactly; tc, FLOPs and bytes by measured agreement, so a regression fails."""

from __future__ import annotations

import contextlib
import csv
import io

import pytest

from perflint.cli import main
from tests.conftest import shared_trace

RUN = "pyprof/lm_da6bcc3"
COLS = "kernel,mod,op,dir,sil,tc,flops,bytes,device,stream,block,grid"
GEMM_OPS = {"linear", "matmul", "mm", "bmm", "addmm", "conv1d", "conv2d"}


def _close(ours: str, theirs: str) -> bool:
    if ours == "":
        return False
    a, b = float(ours), float(theirs)
    return abs(a - b) <= 0.01 * abs(b)


@pytest.fixture(scope="module")
def rows() -> list[tuple[dict[str, str], dict[str, str]]]:
    net, ref = shared_trace(f"{RUN}/net.sql"), shared_trace(f"{RUN}/lm.csv")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["kernels", net, "-c", COLS, "--format", "csv"]) == 0
    ours = list(csv.DictReader(io.StringIO(out.getvalue())))
    with open(ref, newline="") as f:
        theirs = list(csv.DictReader(f))
    assert len(ours) == len(theirs) == 284
    return list(zip(ours, theirs))


def _share(pairs: list[tuple[dict[str, str], dict[str, str]]], test: object) -> float:
    assert pairs
    return sum(bool(test(a, b)) for a, b in pairs) / len(pairs)  # type: ignore[operator]


def test_attribution_columns_every_row(rows: list[tuple[dict[str, str], dict[str, str]]]) -> None:
    for col, name in (("kernel", "Kernel"), ("sil", "Sil(ns)"), ("grid", "Grid"), ("block", "Block")):
        assert all(a[col] == b[name] for a, b in rows), col


def test_op_dir_tc(rows: list[tuple[dict[str, str], dict[str, str]]]) -> None:
    for col, name in (("op", "Op"), ("dir", "Direction"), ("tc", "TC")):
        assert _share(rows, lambda a, b: a[col] == b[name]) >= 0.95, col
    # measured: all 284 rows agree on each
    assert all(a["tc"] == b["TC"] and a["op"] == b["Op"] for a, b in rows)


def test_flops(rows: list[tuple[dict[str, str], dict[str, str]]]) -> None:
    gemm = [(a, b) for a, b in rows if b["Op"] in GEMM_OPS and float(b["FLOPs"]) > 0]
    assert len(gemm) == 15 and _share(gemm, lambda a, b: _close(a["flops"], b["FLOPs"])) == 1.0
    counted = [(a, b) for a, b in rows if float(b["FLOPs"]) > 0]
    # pyprof counts a same-shape binary elementwise op as 1.5 FLOPs per element (half the elements
    # touched), perflint 1 per output element as PyTorch's counter does: those 33 rows differ.
    share = _share(counted, lambda a, b: _close(a["flops"], b["FLOPs"]))
    assert len(counted) == 129 and share >= 96 / 129
    differ = {b["Op"] for a, b in counted if not _close(a["flops"], b["FLOPs"])}
    assert differ == {"add_", "__add__"}


def test_bytes(rows: list[tuple[dict[str, str], dict[str, str]]]) -> None:
    counted = [(a, b) for a, b in rows if float(b["Bytes"]) > 0]
    assert len(counted) == 135 and _share(counted, lambda a, b: _close(a["bytes"], b["Bytes"])) >= 0.80
    # pyprof's linear multiplies only the weight by the element size (m*n + m*k + n*k*size);
    # perflint counts all three matrices in bytes
    for a, b in counted:
        if b["Op"] == "linear" and b["Direction"] == "fprop":
            assert float(a["bytes"]) > float(b["Bytes"])
