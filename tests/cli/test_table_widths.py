"""Text tables: columns sized to their content within -w, names cut so they stay apart, numbers
never cut; kernel op attribution and module totals as a user reads them."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from perflint.cli import main
from perflint.report.text_table import cut_column, fit_widths, render
from tests.conftest import shared_trace

PYPROF = "pyprof/lm_da6bcc3/net.sql"
BERT = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"


def _table(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def _csv_col(argv: list[str], col: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    lines = _table([*argv, "--format", "csv", "-c", col], capsys)
    return [x.strip('"') for x in lines[1:]]


def test_asked_columns_keep_their_content_when_the_width_allows(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(PYPROF)
    ops = _csv_col(["kernels", path], "op", capsys)
    cats = _csv_col(["kernels", path], "category", capsys)
    lines = _table(["kernels", path, "-w", "300", "-c", "op,category"], capsys)
    assert "…" not in "\n".join(lines) and max(map(len, ops)) > 16 and max(map(len, cats)) > 10
    shown = [ln.split() for ln in lines[1:]]
    assert [r[0] for r in shown] == ops and [r[1] for r in shown] == cats


def test_small_width_is_honoured_by_cutting_text_not_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(PYPROF)
    sil = _csv_col(["kernels", path], "sil", capsys)
    lines = _table(["kernels", path, "-w", "40", "-c", "idx,sil,kernel,op"], capsys)
    assert all(len(x) <= 40 for x in lines)
    assert any("…" in x for x in lines[1:])
    assert [ln.split()[1] for ln in lines[1:]] == sil


def test_input_shapes_are_not_cut_when_the_width_allows(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    shapes = _csv_col(["ops", path, "--group-by", "op+shape"], "input_shape", capsys)
    lines = _table(["ops", path, "--group-by", "op+shape", "-w", "400", "-c", "input_shape,name"], capsys)
    assert max(map(len, shapes)) > 25 and "…" not in "\n".join(lines)
    assert max(shapes, key=len) in "\n".join(lines)


def test_layer_rows_stay_distinct(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    full = _csv_col(["ops", path, "--group-by", "layer"], "layer", capsys)
    assert len(set(full)) > 5 and max(map(len, full)) > 60
    for width in ([], ["-w", "60"]):  # unlimited when piped; cut, yet apart
        lines = _table(["ops", path, "--group-by", "layer", *width, "-c", "layer,calls"], capsys)
        shown = [ln.rsplit(None, 1)[0].strip() for ln in lines[1:] if ln.split()[:-1]]
        assert len(set(shown)) == len(set(full))  # the empty key is "(outside any layer)"
        assert (max(map(len, lines)) <= 60) if width else (max(full, key=len) in shown)


def test_cut_names_stay_apart() -> None:
    names = [f"Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT{i}x64x64_MI16x16x1_SN_LDSB1_AFC1_WG32_8_1" for i in (128, 256, 64)]
    got = cut_column(names, 40)
    assert all(len(x) <= 40 for x in got)
    assert all(f"MT{i}x" in x for i, x in zip((128, 256, 64), got))  # where they differ is shown
    assert cut_column(["a" * 50, "a" * 50], 20) == [cut_column(["a" * 50], 20)[0]] * 2  # equal stays equal
    w = fit_widths(["name", "n"], [["x" * 50, "123456"]], 20)
    assert w[1] == 6 and sum(w) + 2 <= 20


def test_summary_keeps_distinct_kernels_apart(capsys: pytest.CaptureFixture[str]) -> None:
    out = "\n".join(_table(["summary", shared_trace("tracelens/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")], capsys))
    top = out.split("Top kernels:")[1].split("Kernel view")[0].splitlines()
    cijk = [ln[ln.index("Cijk_") :].split("  [")[0] for ln in top if "Cijk_" in ln]
    assert len(cijk) >= 2 and len(set(cijk)) == len(cijk)


def test_gemm_op_is_the_launching_op_not_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    ops = _csv_col(["kernels", path], "op", capsys)
    assert ops and not any(o.startswith("ProfilerStep#") for o in ops)
    assert "aten::addmm" in ops


def test_module_view_does_not_count_the_step_twice(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    lines = _table(["ops", path, "--group-by", "module", "--format", "csv", "-c", "module,device_self_us,device_total_us"], capsys)
    rows = [ln.rsplit(",", 2) for ln in lines[1:]]
    self_sum = sum(float(r[1]) for r in rows)
    # Outside every module only the ops' own time counts: not the whole step again.
    outside = [r for r in rows if r[0] in ("", '""')]
    assert outside and all(float(r[2]) == pytest.approx(float(r[1])) for r in outside)
    assert float(outside[0][2]) < self_sum


def test_long_number_headers_give_way_and_stay_apart(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz")
    lines = _table(["kernels", path, "-w", "160"], capsys)
    head = next(ln for ln in lines if ln.startswith("idx")).split()  # under a line of header heads
    counters = [h for h in head if h.startswith("sm")]
    assert len(counters) == 9 and len(set(counters)) == 9
    assert all(any(op in h for h in counters) for op in ("dadd", "hfma", "fmul"))
    assert max(len(x) for x in lines) <= 160
    assert any("aten::" in x for x in lines[1:])  # the text columns kept some room


def test_terminal_width_is_the_default_on_a_terminal(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = shared_trace(PYPROF)
    piped = _table(["kernels", path], capsys)
    assert max(map(len, piped)) > 70  # piped: no limit
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((70, 24)))
    lines = _table(["kernels", path], capsys)
    rows = [ln for ln in lines if ln.split() and ln.split()[0].isdigit()]
    assert len(rows) == len(piped) - 1 and max(map(len, lines)) <= 70


def test_the_row_outside_every_module_has_a_name_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    lines = _table(["ops", path, "--group-by", "module", "-c", "module,calls"], capsys)
    names = [ln.rsplit(None, 1)[0].strip() for ln in lines[1:]]
    assert "(outside any module)" in names and "" not in names
    csv_rows = _table(["ops", path, "--group-by", "module", "--format", "csv", "-c", "module,calls"], capsys)
    assert any(r.split(",")[0] in ("", '""') for r in csv_rows[1:])  # scripts keep the empty key


def test_a_narrowed_header_takes_two_lines_rather_than_be_cut(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(BERT)
    lines = _table(["ops", path, "--group-by", "module", "-w", "120"], capsys)
    top, bottom = lines[0].split(), lines[1].split()
    assert "device_" in top and "self_us" in bottom and "total_us" in bottom, lines[:2]
    assert not any("…" in h for h in top + bottom) and max(map(len, lines)) <= 120
    assert render(["a_long_header"], [["1"]], None) == ["a_long_header", "            1"]  # room: one line
