"""`perflint diff` of two windows of one job that hold different numbers of iterations: totals would
read "better" although every iteration got slower, so a diff without steps compares per iteration
of a repeating range, else per second of window, and says which; a kernel on both sides is never
NEW or GONE."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from perflint.cli import main
from tests.builder import TraceBuilder
from tests.conftest import shared_trace

GEMM = "ampere_sgemm_128x64_nn"
ELTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
SLOWER = 1.14


def _window(path: Path, iterations: int, scale: float, marker: str | None = "train_step", moved_op: bool = False) -> str:
    """A trace without ProfilerStep markers: `iterations` of a forward op running a GEMM and an
    add, every time in an iteration `scale` times its base; with `marker`, each iteration inside a
    user annotation of that name. `moved_op` runs the add under another op (the same kernel name)."""
    b = TraceBuilder()
    period = 1000.0 * scale
    for i in range(iterations):
        t0 = 100.0 + i * period
        if marker:
            b.annotation(marker, ts=t0, dur=950 * scale)
        b.op("aten::mm", ts=t0 + 10 * scale, dur=30 * scale, dims=[[64, 64], [64, 64]])
        b.kernel(GEMM, ts=t0 + 50 * scale, dur=400 * scale, launch_ts=t0 + 20 * scale)
        b.op("aten::mul" if moved_op else "aten::add", ts=t0 + 60 * scale, dur=30 * scale)
        b.kernel(ELTWISE, ts=t0 + 500 * scale, dur=100 * scale, launch_ts=t0 + 70 * scale)
    out = path / f"w{iterations}.json"
    b.write(str(out))
    return str(out)


def _diff(base: str, cur: str, tmp: Path, fmt: str = "json") -> str:
    out = tmp / f"d.{fmt}"
    assert main(["diff", base, cur, "--format", fmt, "--output", str(out)]) == 0
    return out.read_text()


def _groups(pair: dict) -> dict[str, dict]:
    return {r["kernel"]: r for r in pair["rows"] if r["metric"] in ("kernel_group", "new_group", "removed_group")}


def test_fewer_slower_iterations_read_worse_per_iteration(tmp_path: Path) -> None:
    base = _window(tmp_path, 17, 1.0)
    cur = _window(tmp_path, 15, SLOWER, moved_op=True)
    (pair,) = json.loads(_diff(base, cur, tmp_path))["pairs"]
    assert pair["basis"]["kind"] == "iterations"
    assert (pair["basis"]["range"], pair["basis"]["base_n"], pair["basis"]["cur_n"]) == ("train_step", 17, 15)
    groups = _groups(pair)
    assert set(groups) == {GEMM, ELTWISE}
    for r in groups.values():
        assert r["metric"] == "kernel_group"  # the add's kernel under another op is not NEW/GONE
        assert r["change"] == "worse"
        assert r["delta_pct"] == pytest.approx(100 * (SLOWER - 1), abs=0.5)
    rows = {r["metric"]: r for r in pair["rows"]}
    assert rows["kernels_per_step"]["base_median"] == pytest.approx(2.0)
    assert rows["kernels_per_step"]["change"] == "same"
    assert rows["step_time_us"]["delta_pct"] == pytest.approx(100 * (SLOWER - 1), abs=1.0)
    assert rows["step_time_us"]["change"] == "worse"
    text = _diff(base, cur, tmp_path, "text")
    assert "per iteration (range 'train_step', 17 vs 15)" in text
    assert "NEW " not in text and "GONE " not in text
    assert "per iteration (range 'train_step', 17 vs 15)" in _diff(base, cur, tmp_path, "markdown")


def test_without_a_repeating_range_the_basis_is_a_second_of_window(tmp_path: Path) -> None:
    base = _window(tmp_path, 17, 1.0, marker=None)
    cur = _window(tmp_path, 15, SLOWER, marker=None)
    (pair,) = json.loads(_diff(base, cur, tmp_path))["pairs"]
    assert pair["basis"]["kind"] == "seconds"
    # Kernel time per second of window: the same work rate, so the totals' 15-vs-17 drop is gone.
    gemm = _groups(pair)[GEMM]
    total_base, total_cur = 17 * 400.0, 15 * 400.0 * SLOWER
    assert gemm["base_median"] == pytest.approx(total_base / pair["basis"]["base_n"], rel=1e-6)
    assert gemm["cur_median"] == pytest.approx(total_cur / pair["basis"]["cur_n"], rel=1e-6)
    assert "per second of window" in _diff(base, cur, tmp_path, "text")


def test_traces_with_steps_still_compare_per_step(tmp_path: Path) -> None:
    def stepped(n: int, scale: float) -> str:
        b = TraceBuilder()
        for i in range(n):
            t0 = 100.0 + i * 1000.0
            b.step(i + 1, ts=t0, dur=950)
            b.op("aten::mm", ts=t0 + 10, dur=30)
            b.kernel(GEMM, ts=t0 + 50, dur=400 * scale, launch_ts=t0 + 20)
        out = tmp_path / f"s{n}.json"
        b.write(str(out))
        return str(out)

    (pair,) = json.loads(_diff(stepped(8, 1.0), stepped(6, SLOWER), tmp_path))["pairs"]
    assert pair["basis"]["kind"] == "steps"
    assert (pair["basis"]["base_n"], pair["basis"]["cur_n"]) == (6, 4)  # first and last left out
    assert _groups(pair)[GEMM]["change"] == "worse"


def _kernel_names(path: Path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        q = "SELECT value FROM StringIds WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL)"
        return {str(v) for (v,) in con.execute(q)}
    finally:
        con.close()


def test_a_shorter_slower_nsys_window_is_not_read_as_better(tmp_path: Path) -> None:
    """A real Nsight Systems window and a shorter one cut from it with every kernel 14% longer:
    compared per second of window, most kernels do not read better, and a kernel is NEW or GONE
    only when the other window never ran it."""
    nsys = Path(shared_trace("nsysai/h100_2gpu_1s.sqlite"))
    cur = tmp_path / "short.sqlite"
    src = sqlite3.connect(nsys)
    dst = sqlite3.connect(cur)
    src.backup(dst)
    src.close()
    lo, hi = dst.execute("SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    cut = lo + (hi - lo) * 15 // 17
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"):
        dst.execute(f'DELETE FROM "{table}" WHERE start > ?', (cut,))  # noqa: S608 - fixed table names
    dst.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + CAST(("end" - start) * 1.14 AS INTEGER)')
    dst.commit()
    dst.close()
    doc = json.loads(_diff(str(nsys), str(cur), tmp_path))
    names = {side: _kernel_names(path) for side, path in (("new_group", nsys), ("removed_group", cur))}
    for pair in doc["pairs"]:
        assert pair["basis"]["kind"] == "seconds"
        assert pair["basis"]["cur_n"] < pair["basis"]["base_n"]
        assert "per second of window" in pair["basis"]["text"]
        groups = [r for r in pair["rows"] if r["metric"] in ("kernel_group", "new_group", "removed_group")]
        # NEW: not run in the baseline at all; GONE: not run in the current window at all.
        assert all(r["kernel"] not in names[r["metric"]] for r in groups if r["metric"] != "kernel_group")
        better = [r for r in groups if r["change"] == "better"]
        assert len(better) < len(groups) / 2


def test_diff_text_gives_each_value_its_unit(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import FIXTURES

    gpu = FIXTURES / "gpu"
    main(["diff", str(gpu / "clean_bf16.pt.trace.json.gz"), str(gpu / "regress_head.pt.trace.json.gz")])
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")}
    assert re.search(r"\d ms +[\d.]+ ms +\+[\d.]+ ms ", rows["step_time_us"]), rows["step_time_us"]
    assert re.search(r"\d% +[\d.]+% +[-+][\d.]+ pp ", rows["gpu_busy_pct"]), rows["gpu_busy_pct"]
    assert re.search(r"\d (MB|GB) ", rows["peak_memory_bytes"]), rows["peak_memory_bytes"]
    assert not re.search(r"\d[kMG] ", rows["step_time_us"] + rows["memcpy_bytes"])  # no bare 13.8k, 134.22M
