"""`perflint diff` reads right: unchanged is "same", a change below the minimum effect of its kind
is never significant, NEW/GONE rows can be told apart (full names in JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflint.baseline.compare import _row
from perflint.baseline.verdict import MIN_EFFECT, assess
from perflint.cli import main
from perflint.report.diff import fit_labels, render_diff_json, render_diff_text
from tests.conftest import FIXTURES, shared_trace


def _pair(rows: list[dict]) -> list[dict]:
    return [{"base": "a.json", "current": "b.json", "rank": None, "rows": rows}]


def _line(text: str, start: str) -> str:
    return next(l for l in text.splitlines() if l.strip().startswith(start))


def test_unchanged_is_same_not_worse() -> None:
    r = _row("memcpy_bytes", "memcpy_bytes", [19e6] * 6, [19e6] * 6, True)
    assert assess(r, 0.05) == ("same", False, None)
    assert _line(render_diff_text(_pair([r])), "memcpy_bytes").endswith("  same")


def test_a_tiny_change_is_never_significant() -> None:
    # 4 bytes more on every one of 20 steps: the test's p is ~0, the effect is nothing.
    r = _row("memcpy_bytes", "memcpy_bytes", [1_000_000.0] * 20, [1_000_004.0] * 20, True)
    assert r["p_value"] < 0.001
    assert assess(r, 0.05)[0] == "same"
    assert "*" not in _line(render_diff_text(_pair([r])), "memcpy_bytes")
    # Above the minimum effect (4 KiB and 1%) it is a significant regression.
    big = _row("memcpy_bytes", "memcpy_bytes", [1_000_000.0] * 20, [1_100_000.0] * 20, True)
    assert assess(big, 0.05)[:2] == ("worse", True)
    # Half a microsecond on a step, one GPU-busy point in the good direction.
    assert assess(_row("step_time_us", "step_time_us", [100.0] * 9, [100.5] * 9, True), 0.05)[0] == "same"
    busy = _row("gpu_busy_pct", "gpu_busy_pct", [50.0, 51.0, 50.5] * 3, [51.5, 52.5, 52.0] * 3, False)
    assert assess(busy, 0.05)[:2] == ("better", True)
    assert set(MIN_EFFECT) == {"time", "bytes", "count", "pct"}


def test_new_and_gone_groups_can_be_told_apart() -> None:
    prefix = "aten::conv2d > aten::cudnn_convolution [[32, 256, 28, 28]] : "
    kernels = [f"void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, {v}>(int, int)" for v in ("true", "false")]
    rows = [
        _row("new_group", prefix + kernels[0], [0.0] * 4, [200.0] * 4, True, kernel=kernels[0], op="aten::cudnn_convolution",
             input_dims=[[32, 256, 28, 28], []]),
        _row("removed_group", prefix + kernels[1], [190.0] * 4, [0.0] * 4, True, kernel=kernels[1], op="aten::cudnn_convolution",
             input_dims=[[32, 256, 28, 28], []]),
    ]
    text = render_diff_text(_pair(rows))
    new, gone = _line(text, "NEW "), _line(text, "GONE ")
    assert new.split("  ")[1] != gone.split("  ")[1].replace("GONE", "NEW")
    doc = json.loads(render_diff_json(_pair(rows)))
    assert [r["kernel"] for r in doc["pairs"][0]["rows"]] == kernels  # full names
    assert [r["change"] for r in doc["pairs"][0]["rows"]] == ["worse", "better"]
    assert all("min_effect" in r and "significant" in r for r in doc["pairs"][0]["rows"])


def test_fit_labels_widens_only_what_would_read_alike() -> None:
    a, b, c = "x" * 40 + "A" + "y" * 40, "x" * 40 + "B" + "y" * 40, "short"
    out = fit_labels([a, b, c], width=30)
    assert len(set(out)) == 3 and out[2] == "short"
    assert out[:2] == [a, b]  # they differ only in the middle: shown whole
    d, e = "p" * 50 + "1", "p" * 50 + "2"  # the end differs: the shortened labels already do
    assert fit_labels([d, e], width=30) == ["p" * 14 + "..." + "p" * 12 + "1", "p" * 14 + "..." + "p" * 12 + "2"]


def _diff_json(base: str, cur: str, tmp: Path) -> dict:
    out = tmp / "d.json"
    assert main(["diff", base, cur, "--format", "json", "--output", str(out)]) == 0
    (pair,) = json.loads(out.read_text())["pairs"]
    return pair


@pytest.mark.parametrize("which", ["regress", "workers"])
def test_diff_splits_the_median_step_change_along_the_critical_path(which: str, tmp_path: Path) -> None:
    """The bound-by rows of a diff add up to the change of the median step; the category that
    grew is the one the change was made in (GEMM time for odd dims, data loading for fewer
    loader workers)."""
    if which == "regress":
        base, cur, grown = str(FIXTURES / "gpu/regress_base.pt.trace.json.gz"), str(FIXTURES / "gpu/regress_head.pt.trace.json.gz"), "gpu_gemm"
    else:
        base, cur = (shared_trace(f"kineto/samples/resnet50_num_workers_{n}") for n in (4, 0))
        grown = "data_loading"
    pair = _diff_json(base, cur, tmp_path)
    rows = {r["metric"]: r for r in pair["rows"] if r["metric"] != "bound_by"}
    bound = [r for r in pair["rows"] if r["metric"] == "bound_by"]
    step = rows["step_time_us"]
    assert bound and step["delta"] > 0
    assert sum(r["delta"] for r in bound) == pytest.approx(step["delta"], rel=1e-3, abs=1.0)
    assert max(bound, key=lambda r: r["delta"])["key"] == grown
    text = tmp_path / "d.txt"
    assert main(["diff", base, cur, "--output", str(text)]) == 0
    assert "split along its critical path:" in text.read_text()


def test_a_step_regression_names_the_categories_that_grew(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    main(["check", str(FIXTURES / "gpu/regress_head.pt.trace.json.gz"), "--baseline", str(FIXTURES / "gpu/regress_base.pt.trace.json.gz"),
          "--select", "REG001", "--json", str(out), "--output", str(tmp_path / "r.txt"), "--jobs", "1"])  # fmt: skip
    (f,) = json.loads(out.read_text())["traces"][0]["findings"]
    assert f["code"] == "REG001"
    assert "on the critical path GPU gemm +7." in f["message"]
