"""`perflint summary`'s kernel view (against torch-tb-profiler 0.4.3's own numbers), Inductor view
and peak memory, on real traces and on synthetic ones whose answer is known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflint.api import summary
from perflint.cli import main
from perflint.graph.load import load_trace
from perflint.metrics.inductor import CATEGORIES, inductor_view
from perflint.metrics.kernel_view import kernel_view
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, TESTS, shared_trace

REFERENCE = json.loads((TESTS / "reference" / "tb_plugin_kernel_view.json").read_text())
COLUMNS = ("calls", "total_us", "mean_us", "max_us", "min_us", "blocks_per_sm", "occupancy_pct")


@pytest.mark.parametrize("name", sorted(REFERENCE["traces"]))
def test_kernel_view_agrees_with_the_tb_plugin(name: str) -> None:
    ref = REFERENCE["traces"][name]
    path = next(Path(shared_trace(ref["path"])).glob("*.json.gz"))
    mine = kernel_view(load_trace(str(path)))
    # Same names, most total time first (the plugin's sort leaves ties in no set order).
    assert sorted(r["name"] for r in mine) == sorted(r["name"] for r in ref["kernels"])
    assert [r["total_us"] for r in mine] == [r["total_us"] for r in ref["kernels"]]
    by_name = {r["name"]: r for r in ref["kernels"]}
    for ours in mine:
        theirs = by_name[ours["name"]]
        for c in COLUMNS:
            assert ours[c] == pytest.approx(theirs[c], abs=1e-3), (c, ours["name"])
        # The plugin's fixed list knows none of these kernels; perflint's table agrees on every one.
        assert bool(ours["tensor_cores"]) == theirs["tensor_cores"]


def test_kernel_view_weights_by_duration(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::mm", 0.0, 500.0)
    b.kernel("k", 10.0, 100.0, launch_ts=5.0, blocks_per_sm=2.0, occupancy=50.0)
    b.kernel("k", 200.0, 300.0, launch_ts=6.0, blocks_per_sm=6.0, occupancy=10.0)
    (row,) = kernel_view(load_trace(b.write(tmp_path / "t.json")))
    assert (row["calls"], row["total_us"], row["mean_us"], row["max_us"], row["min_us"]) == (2, 400.0, 200.0, 300.0, 100.0)
    assert row["blocks_per_sm"] == pytest.approx((2 * 100 + 6 * 300) / 400)
    assert row["occupancy_pct"] == pytest.approx((50 * 100 + 10 * 300) / 400)


def test_inductor_view_on_a_compiled_model() -> None:
    v = inductor_view(load_trace(str(FIXTURES / "gpu/compiled_mlp.pt.trace.json.gz")))
    assert v is not None and list(v["categories"]) == list(CATEGORIES)
    cats = v["categories"]
    assert [k["name"] for k in cats["pointwise"]["kernels"]] == ["triton_poi_fused_gelu_0"]
    assert cats["pointwise"]["count"] == 5 and cats["extern"]["count"] == 10
    assert all(k["name"].startswith("nvjet_") for k in cats["extern"]["kernels"])
    assert sum(c["time_us"] for c in cats.values()) == pytest.approx(v["kernel_time_us"], abs=1e-2)
    assert sum(c["pct"] for c in cats.values()) == pytest.approx(100.0, abs=1e-2)
    assert 0.0 < v["busy_pct"] < 100.0


def test_inductor_categories_and_busy_time(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("Torch-Compiled Region", 0.0, 1000.0)
    names = ["triton_poi_fused_add_0", "triton_red_fused_sum_1", "triton_per_fused_softmax_2", "triton_tem_fused_mm_3", "triton_for_fused_4", "my_cuda_kernel"]
    t0 = 100.0
    for i, n in enumerate(names):
        b.kernel(n, t0, 10.0 * (i + 1), launch_ts=10.0 + i)
        t0 += 10.0 * (i + 1)  # back to back: busy the whole span
    v = inductor_view(load_trace(b.write(tmp_path / "t.json")))
    assert v is not None and v["busy_pct"] == pytest.approx(100.0)
    got = {c: [k["name"] for k in x["kernels"]] for c, x in v["categories"].items() if x["count"]}
    assert got == {
        "pointwise": [names[0]],
        "reduction": [names[1]],
        "persistent_reduction": [names[2]],
        "template": [names[3]],
        "foreach": [names[4]],
        "other": [names[5]],
    }
    assert v["categories"]["other"]["pct"] == pytest.approx(100.0 * 60 / 210, abs=1e-3)
    assert v["categories"]["other"]["span_pct"] == pytest.approx(100.0 * 60 / 210, abs=1e-3)  # no gaps
    assert v["categories"]["reduction"]["count"] == 1 and v["categories"]["extern"]["span_pct"] == 0.0


def test_an_eager_trace_has_no_inductor_view_and_no_warning_about_it() -> None:
    (out,) = summary(str(FIXTURES / "gpu/gemm_fp32.pt.trace.json.gz"))
    assert out["inductor"] is None and not any("nductor" in w for w in out["warnings"])
    assert out["kernel_view"] and out["kernel_view"][0]["total_us"] >= out["kernel_view"][-1]["total_us"]


def test_summary_memory_is_the_device_memory_fact() -> None:
    from perflint.facts import Context
    from perflint.facts.memory import device_memory

    path = shared_trace("hta/df_index_resolver/df_index_resolver.json.gz")
    trace = load_trace(path)
    (out,) = summary(path)
    facts = device_memory(Context(trace))
    assert out["memory"] is not None and len(out["memory"]["devices"]) == len(facts) >= 1
    assert out["memory"]["peak_allocated_bytes"] == max(f["peak_allocated_bytes"] for f in facts)
    assert [d["peak_allocated_bytes"] for d in out["memory"]["devices"]] == [f["peak_allocated_bytes"] for f in facts]


def test_summary_text_has_the_views(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(FIXTURES / "gpu/compiled_mlp.pt.trace.json.gz")]) == 0
    text = capsys.readouterr().out
    assert "Kernel view:" in text and "Inductor view" in text and "Peak memory" in text
    assert "triton_poi_fused_gelu_0" in text.split("Inductor view")[1]


def test_summary_html_shows_the_kernel_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.html"
    assert main(["summary", str(FIXTURES / "gpu/compiled_mlp.pt.trace.json.gz"), "--html", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text()
    view = page.split("Kernel view: 3 kernel names")[1].split("</details>")[0]
    assert view.index("nvjet_sm90_hsh_48x64") < view.index("triton_poi_fused_gelu_0")  # most total time first
