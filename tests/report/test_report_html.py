"""The HTML report (`--html FILE` on check, summary and diff): self-contained, the run's findings
and the traces' charts on it, small for many traces; and, in a real headless browser, free of
script errors with tables that sort when their header is clicked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.report.html.svg import strips
from tests.builder import TraceBuilder, write_rank_run
from tests.conftest import ROOT
from tests.report.browser import chromium

GPU = ROOT / "fixtures" / "gpu"
MAX_BYTES = 5 * 1024 * 1024


@pytest.fixture(scope="module")
def check_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, object]]:
    out = tmp_path_factory.mktemp("html")
    page, js = out / "check.html", out / "check.json"
    assert main(["check", str(GPU), "--html", str(page), "--json", str(js), "--exit-zero"]) == 0
    import json

    return page.read_text(encoding="utf-8"), json.loads(js.read_text())


def test_check_page_is_self_contained_and_small(check_page: tuple[str, dict[str, object]]) -> None:
    html, _ = check_page
    assert len(html.encode()) <= MAX_BYTES
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "nothing may be fetched"
    assert "<script>" in html and "<style>" in html
    assert "prefers-color-scheme:dark" in html


def test_check_page_has_every_finding_and_the_verdict(check_page: tuple[str, dict[str, object]]) -> None:
    html, doc = check_page
    codes = {f["code"] for t in doc["traces"] for f in t["findings"]}  # type: ignore[index, union-attr]
    assert codes
    on_page = set(re.findall(r'data-code="([A-Z]+\d+)"', html))
    assert codes <= on_page
    assert "perflint: FAILED (fail-on error):" in html


def test_check_page_has_the_charts_each_with_its_table(check_page: tuple[str, dict[str, object]]) -> None:
    html, doc = check_page
    n_traces = len(doc["traces"])  # type: ignore[arg-type]
    assert html.count('class="chart stacked"') == n_traces  # every fixture has ProfilerSteps
    assert html.count('class="chart area"') >= n_traces
    assert html.count('class="chart strips"') == 1  # step time per trace
    figures = html.count('<figure class="fig">')
    assert figures and html.count("<details><summary>Table:") == figures
    # The fixtures ran on an H100, whose peaks are known: a roofline per trace whose ops have FLOPs
    # and bytes, and a reason where none has them.
    assert html.count("<h3>Roofline</h3>") == n_traces
    drawn = html.count('class="chart roofline"')
    assert drawn and html.count("<p class=mut>Not drawn:") == n_traces - drawn
    assert html.count("<h3>Top kernels</h3>") == n_traces and html.count("<h3>Top ops</h3>") == n_traces


def test_check_page_shows_what_bounds_each_step(check_page: tuple[str, dict[str, object]]) -> None:
    """Per trace the bound-by bar, the median step's critical path over its lanes, and the what-if
    table with every finding whose fix the model replayed, then all of them together."""
    html, doc = check_page
    traces = doc["traces"]  # type: ignore[index]
    bounded = [t for t in traces if t["metrics"]["step_model"]["bound_by"]]  # type: ignore[index]
    assert bounded
    assert html.count('class="chart shares"') == len(bounded)
    pathed = [t for t in bounded if t["metrics"]["step_model"]["critical_path"]]  # type: ignore[index]
    assert pathed and html.count('class="chart lanes"') == len(pathed)
    for t in pathed:
        for run in t["metrics"]["step_model"]["critical_path"]:  # type: ignore[index]
            assert f">{run['lane']}<" in html  # every lane the path crosses is drawn
    fixed = [t for t in traces if (t["metrics"]["step_model"]["what_if_all"] or {}).get("what_ifs")]  # type: ignore[index, union-attr]
    assert fixed and html.count("<h3>What if it were fixed</h3>") == len(fixed)
    assert html.count("fixes together</td>") == len(fixed)


def test_the_json_report_of_the_same_run_carries_no_panels(check_page: tuple[str, dict[str, object]]) -> None:
    _, doc = check_page
    for t in doc["traces"]:  # type: ignore[union-attr]
        assert "panels" not in t and "_html" not in t["metrics"]  # type: ignore[index, operator]


def test_check_with_a_baseline_shows_before_and_after(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    main(["check", str(GPU / "regress_head.pt.trace.json.gz"), "--baseline", str(GPU / "regress_base.pt.trace.json.gz"),
          "--html", str(page), "--exit-zero"])
    html = page.read_text()
    assert "Against the baseline" in html
    assert re.search(r"step_time_us: (worse|better) p=\d", html)


def test_diff_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "d.html"
    assert main(["diff", str(GPU / "regress_base.pt.trace.json.gz"), str(GPU / "regress_head.pt.trace.json.gz"),
                 "--html", str(page)]) == 0
    text = capsys.readouterr().out
    html = page.read_text()
    assert html.count('class="chart strips"') == 2  # step time and GPU busy, before and after
    m = re.search(r"step_time_us .* ((worse|better) p=\S+)", text)
    assert m and m.group(1).split(" *")[0] in html  # the same test result as the text report


def test_summary_page_and_json_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "s.html"
    trace = str(GPU / "dataloader.pt.trace.json.gz")
    assert main(["summary", trace, "--format", "json", "--html", str(page)]) == 0
    with_html = capsys.readouterr().out
    assert main(["summary", trace, "--format", "json"]) == 0
    assert capsys.readouterr().out.replace(str(page), "") == with_html
    html = page.read_text()
    assert "dataloader" in html and 'class="chart stacked"' in html


def test_many_ranks_get_aggregates_not_a_section_each(tmp_path: Path) -> None:
    run = write_rank_run(tmp_path / "run", 12)
    page = tmp_path / "ranks.html"
    main(["check", str(run), "--html", str(page), "--exit-zero"])
    html = page.read_text()
    assert html.count('<section class="trace">') == 8
    assert all(f"rank{r}.json [rank {r}]" in html for r in range(12))  # every rank in the per-rank table


def test_no_steps_says_why(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::mm", 0.0, 300.0)
    b.kernel("gemm_kernel", 50.0, 200.0, launch_ts=20.0)
    page = tmp_path / "n.html"
    main(["summary", b.write(tmp_path / "n.json"), "--html", str(page)])
    assert "Step-time breakdown: no ProfilerStep#N markers" in page.read_text()


def test_strip_plot_places_samples_on_one_axis() -> None:
    out = strips("t", [("a", [1.0, 2.0, 3.0]), ("b", [10.0])])
    xs = [float(x) for x in re.findall(r'<circle class="dot s\d" cx="([\d.]+)"', out)]
    assert xs[0] < xs[1] < xs[2] < xs[3]


# --- in a real browser -------------------------------------------------------------------------

PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
var _ce = console.error; console.error = function () { window.__errors.push([].join.call(arguments, ' ')); _ce.apply(console, arguments); };
</script>"""

CLICK = """<script>
window.addEventListener('load', function () {
  var out = {};
  try {
    var th = document.querySelector('table.sortable th.sortable.n');
    var table = th.closest('table'), i = th.cellIndex;
    function col() { return Array.prototype.map.call(table.tBodies[0].rows, function (r) { return parseFloat(r.cells[i].getAttribute('data-v')); }); }
    out.before = col();
    th.click(); out.desc = col(); th.click(); out.asc = col();
    out.sort = th.getAttribute('aria-sort');
    out.svgs = document.querySelectorAll('svg.chart').length;
    out.codes = Array.prototype.map.call(document.querySelectorAll('[data-code]'), function (e) { return e.getAttribute('data-code'); });
  } catch (e) { window.__errors.push('probe: ' + e); }
  out.errors = window.__errors;
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it: apt-get install chromium)")
def test_page_in_a_headless_browser(check_page: tuple[str, dict[str, object]], tmp_path: Path) -> None:
    import json

    html, doc = check_page
    probed = html.replace("<head>", "<head>" + PROBE, 1).replace("</body>", CLICK + "</body>", 1)
    page = tmp_path / "probe.html"
    page.write_text(probed, encoding="utf-8")
    cmd = [chromium() or "", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
           "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "LANG": "C"})
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, proc.stderr[-2000:]
    import html as h

    got = json.loads(h.unescape(m.group(1)))
    assert got["errors"] == []
    assert "Uncaught" not in proc.stderr
    assert got["svgs"] >= 3 * len(doc["traces"])  # type: ignore[arg-type]
    codes = {f["code"] for t in doc["traces"] for f in t["findings"]}  # type: ignore[index, union-attr]
    assert codes <= set(got["codes"])
    assert got["desc"] == sorted(got["before"], reverse=True)
    assert got["asc"] == sorted(got["before"])
    assert got["sort"] == "ascending"
    assert len(set(got["before"])) > 1  # the column had something to sort


def test_an_unwritable_html_path_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["summary", str(GPU / "gemv_fp16.pt.trace.json.gz"), "--html", str(blocker / "r.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "cannot write the HTML report" in err[0] and "Traceback" not in err[0]


def test_cpu_only_traces_and_a_broken_one(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "cpu", run)
    (run / "broken.json").write_text('{"traceEvents": [')
    page = tmp_path / "cpu.html"
    assert main(["check", str(run), "--html", str(page)]) == 2
    html = page.read_text()
    assert "perflint: ERROR" in html and "broken.json: invalid JSON" in html
    assert 'class="chart area"' not in html  # no kernels, no GPU-busy series
    assert "<h3>Top ops</h3>" in html


def test_the_roofline_says_why_it_is_not_drawn(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    main(["check", str(ROOT / "fixtures" / "cpu" / "mlp_aligned.pt.trace.json.gz"), "--html", str(page), "--exit-zero"])
    html = page.read_text()
    assert "<h3>Roofline</h3><p class=mut>Not drawn: no peak table entry for the device" in html
    assert 'class="chart roofline"' not in html


def test_the_roofline_plots_the_ops_with_most_device_time(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    main(["check", str(GPU / "gemm_fp16_aligned.pt.trace.json.gz"), "--html", str(page), "--exit-zero"])
    html = page.read_text()
    chart = html[html.index('class="chart roofline"'):]
    chart = chart[: chart.index("</svg>")]
    assert chart.count("<circle") >= 3 and chart.count('class="roof') == 2  # Tensor Core and fp32 roofs
    assert "aten::mm" in html[html.index("<h3>Roofline</h3>"):] and "NVIDIA H100 SXM: memory 3350 GB/s" in html
