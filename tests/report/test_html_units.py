"""The HTML report's numbers and labels: durations and sizes in human units, whole numbers without
".0", p-values as the text diff prints them, traces told apart by their paths, and findings that
say the same thing on many ranks shown once with the ranks listed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perflint.baseline.verdict import change_text
from perflint.cli import main
from perflint.findings import Finding
from perflint.report.html import page, render, svg
from tests.builder import write_rank_run
from tests.conftest import shared_trace


@pytest.mark.parametrize(("x", "unit", "text"), [
    (47_200.0, "us", "47.2 ms"), (1_000_000.0, "us", "1.00 s"), (35.2, "us", "35.2 µs"), (250.0, "us", "250 µs"),
    (134_217_728.0, "B", "134 MB"), (2_048.0, "B", "2.0 KB"), (3.5e9, "B", "3.5 GB"), (512.0, "B", "512 B"),
    (0.0, "us", "0"), (42.0, "%", "42%"),
])  # fmt: skip
def test_values_carry_human_units(x: float, unit: str, text: str) -> None:
    assert svg.value(x, unit) == text


def test_unitless_numbers_drop_a_trailing_zero() -> None:
    assert [svg.num(x) for x in (1000.0, 1500.0, 2e6, 0.01, 12.0)] == ["1k", "1.5k", "2M", "0.01", "12"]


def test_table_cells_show_units_and_sort_by_the_raw_value() -> None:
    assert page.n(134_217_728.0) == ("134,217,728", 134_217_728.0)
    assert page.n(12.25, nd=2)[0] == "12.25" and page.n(7.0, "%")[0] == "7%"
    assert page.d(47_200.0) == ("47.2 ms", 47_200.0) and page.d(None) == ("n/a", None)
    assert page.b(134_217_728.0) == ("134 MB", 134_217_728.0)


def test_chart_labels_have_no_scaled_us() -> None:
    out = svg.stacked("t", ["1", "2"], ["kernel", "other"], [[40_000.0, 7_200.0], [30_000.0, 5_000.0]])
    labels = re.findall(r">([^<>]+)</text>", out)
    assert "47.2 ms" in labels and not any(re.search(r"\dk?us", x) for x in labels)
    area = svg.area("t", [0.5] * 100, 1000.0)
    assert ">100 ms</text>" in area


def test_strip_plot_labels_median_and_quartiles_without_overlap() -> None:
    out = svg.strips("t", [("a", [10.0, 20.0, 30.0, 40.0, 50.0]), ("b", [15.0, 45.0])])
    texts = re.findall(r'<text class="ink small" x="([\d.]+)" y="([\d.]+)">([^<]+)</text>', out)
    assert any(t.startswith("median 30.0") for _, _, t in texts) and any(t.startswith("Q1 20.0") for _, _, t in texts)
    # On each line, no two labels' estimated extents meet.
    for y in {y for _, y, _ in texts}:
        spans = sorted((float(x), float(x) + svg.text_w(t, 10)) for x, yy, t in texts if yy == y)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
        assert all(0 <= a and b <= svg.W for a, b in spans)


def test_roofline_points_at_one_spot_share_one_label() -> None:
    pts = [("op a", 10.0, 5.0), ("op b", 10.2, 5.1), ("op c", 100.0, 50.0)]
    out = svg.roofline("t", [("roof", 100.0)], 1000.0, pts)
    labels = re.findall(r'<text class="ink small"[^>]*>([^<]+)</text>', out)
    assert "1,2" in labels and "3" in labels


def test_p_values_are_printed_as_the_text_diff_prints_them() -> None:
    rows = [{"metric": "memcpy_bytes", "base_median": 1e8, "cur_median": 1.34e8, "delta": 3.4e7, "delta_pct": 34.0,
             "p_value": 7.77e-05, "p_better": 0.99, "base_n": 30, "cur_n": 30, "higher_is_worse": True}]  # fmt: skip
    cmp = {"base": "b", "samples": {}, "rows": rows}
    html = page.comparison_block(cmp)
    assert change_text(rows[0], 0.05) in html
    assert ">100 MB<" in html and ">134 MB<" in html


def test_the_diff_page_has_every_p_value_of_the_text_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = shared_trace("kineto/samples/resnet50_num_workers_0"), shared_trace("kineto/samples/resnet50_num_workers_4")
    out = tmp_path / "d.html"
    main(["diff", base, cur, "--html", str(out)])
    text = capsys.readouterr().out
    found = set(re.findall(r"(?:worse|better) p=\S+", text))
    assert found
    html = out.read_text(encoding="utf-8")
    assert found <= set(re.findall(r"(?:worse|better) p=[^\s<]+", html))


def test_distinct_labels_use_the_shortest_distinguishing_suffix() -> None:
    keys = [("/a/run_1/normal_run/profiler", None), ("/a/profiler", None), ("/x/t.json", 0), ("/x/t.json", 1), ("/y/u.json", None)]
    assert page.distinct_labels(keys) == ["normal_run/profiler", "a/profiler", "t.json [rank 0]", "t.json [rank 1]", "u.json"]
    same = [("/r1/p/x.json", None), ("/r2/p/x.json", None)]
    assert page.distinct_labels(same) == ["r1/p/x.json", "r2/p/x.json"]


def _finding(code: str, message: str, trace: str, rank: int | None) -> Finding:
    return Finding(code=code, name="n", severity="info", message=message, trace=trace, rank=rank, fingerprint=f"{trace}{rank}{message}")


def test_findings_with_one_rule_and_message_shape_group_across_ranks() -> None:
    fs = [_finding("SYNC001", f"cudaStreamSynchronize blocks the host for {100 + r}.5 µs in step 3", "/run/t.json", r) for r in range(16)]
    fs.append(_finding("SYNC001", "a different message", "/run/t.json", 0))
    fs.append(_finding("LAUNCH001", "cudaStreamSynchronize blocks the host for 1.5 µs in step 3", "/run/t.json", 0))
    groups = render.group(fs)
    assert [len(g) for g in groups] == [16, 1, 1]
    assert render.where_text(groups[0]) == "16 ranks: 0-15"
    assert render.spans([0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7, 8"
    html = render._group_html(groups[0])
    assert html.count('data-code="SYNC001"') == 1 and "&times;16" in html
    assert all(f"[rank {r}]" in html for r in range(16))  # each rank's own numbers stay reachable


def test_a_many_rank_run_lists_each_repeated_finding_once(tmp_path: Path) -> None:
    run = write_rank_run(tmp_path / "run", 6)
    html_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    main(["check", str(run), "--html", str(html_path), "--json", str(json_path), "--exit-zero"])
    doc = json.loads(json_path.read_text())
    findings = [f for t in doc["traces"] for f in t["findings"]]
    codes = [f["code"] for f in findings]
    repeated = {c for c in codes if codes.count(c) > 1}
    assert repeated  # the run has findings on several ranks to group
    html = html_path.read_text(encoding="utf-8")
    entries = re.findall(r'<details class="finding" data-code="([A-Z]+\d+)"', html)
    assert len(entries) < len(findings) and set(entries) == set(codes)


def test_the_two_step_numbers_say_what_they_are(tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "dataloader.pt.trace.json.gz"
    main(["check", str(fixture), "--html", str(out), "--exit-zero"])
    html = out.read_text(encoding="utf-8")
    single = re.search(r"Median step (\d+) \(a single step: the median of the analysis steps, (\d+) of (\d+) steps", html)
    assert single and int(single.group(2)) <= int(single.group(3))
    mean = re.search(r"Mean step [\d.]+ (µs|ms|s) over (all (\d+) ProfilerSteps, the first and last included|the one ProfilerStep)", html)
    assert mean
    if mean.group(3):
        assert int(mean.group(3)) == int(single.group(3))  # the plugin averages every recorded step
