"""The HTML report laid out in a real headless browser, on real traces (a two-rank directory, two
MindSpore runs, a Kineto pair for the diff), at a desktop and a phone width: no text overflows its
table cell, heading or legend, no chart label leaves its SVG, and no two labels in a chart overlap."""

from __future__ import annotations

import html as h
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from perflint.cli import main
from tests.conftest import shared_trace
from tests.report.browser import chromium

WIDTHS = (1280, 375)

# Opens every disclosure (collapsed tables count too), then measures: elements whose content is
# wider than their box, charts wider than their figure (cut behind a scrollbar), chart texts outside
# their SVG, and overlapping texts within one SVG.
PROBE = """<script>
window.addEventListener('load', function () {
  var out = {width: document.documentElement.clientWidth, overflow: [], outside: [], overlap: [], svgs: 0, cells: 0, texts: 0};
  try {
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
    function name(e) { return e.tagName + ':' + (e.textContent || '').slice(0, 60); }
    document.querySelectorAll('td, th, figcaption, .key li, .card, h1, h2, h3, p, summary').forEach(function (e) {
      out.cells++;
      if (e.scrollWidth > e.clientWidth + 1) out.overflow.push(name(e) + ' ' + e.scrollWidth + '>' + e.clientWidth);
    });
    document.querySelectorAll('svg.chart').forEach(function (s, si) {
      out.svgs++;
      var box = s.getBoundingClientRect(), kind = si + ' ' + s.getAttribute('class') + ' ';
      var holder = s.parentElement.getBoundingClientRect();
      if (box.right > holder.right + 0.5 || box.left < holder.left - 0.5) out.outside.push(kind + 'wider than its figure: ' + box.width + '>' + holder.width);
      var rs = Array.prototype.map.call(s.querySelectorAll('text'), function (t) { return [t, t.getBoundingClientRect()]; });
      rs.forEach(function (p, i) {
        out.texts++;
        var r = p[1];
        if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
          out.outside.push(kind + name(p[0]));
        for (var j = i + 1; j < rs.length; j++) {
          var q = rs[j][1];
          var w = Math.min(r.right, q.right) - Math.max(r.left, q.left), hh = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
          if (w > 0.5 && hh > 0.5) out.overlap.push(kind + name(p[0]) + ' / ' + name(rs[j][0]));
        }
      });
    });
    out.page = document.documentElement.scrollWidth;
  } catch (e) { out.error = String(e); }
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

# Headless Chromium will not make a window narrower than 500 px, so the page is measured inside an
# iframe of the exact width (srcdoc: same origin, so the outer page can read the probe's result).
FRAME = """<!DOCTYPE html><html><body style="margin:0"><iframe id="f" style="border:0;width:{w}px;height:1500px" srcdoc="{src}"></iframe>
<script>var f = document.getElementById('f'); f.addEventListener('load', function () {{ var t = setInterval(function () {{
var p = f.contentDocument.getElementById('probe'); if (p) {{ clearInterval(t); var o = document.createElement('pre'); o.id = 'probe';
o.textContent = p.textContent; document.body.appendChild(o); }} }}, 20); }});</script></body></html>"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("layout")
    ranks = os.path.dirname(shared_trace("hta/trace_filter/sampled_rank-0.json.gz"))
    mind_a = shared_trace("mindinsight/run_1/normal_run/profiler")
    mind_b = shared_trace("mindinsight/profiler")
    base = shared_trace("kineto/samples/resnet50_num_workers_0")
    cur = shared_trace("kineto/samples/resnet50_num_workers_4")
    bert = shared_trace("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz")
    made = {"check": out / "check.html", "summary": out / "summary.html", "diff": out / "diff.html"}
    main(["check", ranks, mind_a, bert, "--html", str(made["check"]), "--exit-zero"])
    main(["summary", mind_a, mind_b, base, bert, "--html", str(made["summary"])])
    main(["diff", base, cur, "--html", str(made["diff"])])
    return made


def _measure(page: Path, width: int, tmp: Path) -> dict[str, object]:
    src = page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>", 1)
    frame = tmp / f"frame{width}.html"
    frame.write_text(FRAME.format(w=width, src=h.escape(src, quote=True)), encoding="utf-8")
    cmd = [chromium() or "", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--window-size={max(width, 500)},1600", "--virtual-time-budget=5000", "--dump-dom", frame.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "LANG": "C"})
    found = re.findall(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    got: dict[str, object] = json.loads(h.unescape(found[-1]))
    return got


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it: apt-get install chromium)")
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", ["check", "summary", "diff"])
def test_nothing_overflows_or_overlaps(pages: dict[str, Path], kind: str, width: int, tmp_path: Path) -> None:
    t0 = time.monotonic()
    got = _measure(pages[kind], width, tmp_path)
    assert "error" not in got, got.get("error")
    assert got["width"] == width  # the page really was laid out at that width
    assert got["page"] == width  # and nothing made it scroll sideways
    assert got["svgs"] and got["texts"] and got["cells"]  # there was something to measure
    assert got["overflow"] == []
    assert got["outside"] == []
    assert got["overlap"] == []
    assert time.monotonic() - t0 < 30


def test_pages_name_the_mindspore_runs_apart_and_use_human_units(pages: dict[str, Path]) -> None:
    summary = pages["summary"].read_text(encoding="utf-8")
    labels = re.findall(r'<td><span title="([^"]+)">([^<]+)</span>', summary)
    shown = [label for _, label in labels]
    assert len(labels) >= 4 and len(set(shown)) == len(shown), shown
    runs = [label for path, label in labels if path.endswith("/profiler")]
    assert len(runs) == 2 and runs[0] != runs[1]  # both MindSpore output directories are called "profiler"
    assert all(path.endswith(label) for path, label in labels)
    for page in pages.values():
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\d(k|M|G)?us\b", text), "durations carry µs/ms/s, never a bare or scaled 'us'"
        assert not re.search(r"\d,\d{3},\d{3}\.0\b", text), "whole numbers have no .0"
