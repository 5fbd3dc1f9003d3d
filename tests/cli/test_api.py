"""The Python API (perflint.check / summary / kernels / ops / load): the same results as the CLI,
errors as InputError, and a cheap `import perflint`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import perflint
from perflint.cli import main
from perflint.listings import OP_COLUMNS, TABLE_COLUMNS
from perflint.model import KERNEL, NONE, Trace
from tests.conftest import FIXTURES, ROOT, shared_trace

GPU = ROOT / "fixtures" / "gpu"
UNALIGNED = str(GPU / "gemm_fp16_unaligned.pt.trace.json.gz")
# Odd GEMM dims the GPU-bound step waits on (4100/4090 hidden sizes): DIM001 is a warning there.
ODD = str(GPU / "regress_head.pt.trace.json.gz")
CLEAN = str(GPU / "clean_bf16.pt.trace.json.gz")
CPU = str(ROOT / "fixtures" / "cpu" / "sync_item.pt.trace.json.gz")


def _bad(tmp_path: Path) -> str:
    bad = tmp_path / "broken.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    return str(bad)


def test_import_is_lazy() -> None:
    code = (
        "import sys, perflint\n"
        "heavy = [m for m in ('perflint.api', 'numpy', 'pydantic', 'perflint.pipeline') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert callable(perflint.check) and 'perflint.api' in sys.modules\n"
        "assert perflint.InputError.__mro__[1] is perflint.PerflintError\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError):
        perflint.no_such_function  # noqa: B018
    assert {"check", "summary", "kernels", "ops", "load", "InputError"} <= set(dir(perflint))


def test_check_finds_what_the_cli_finds(capsys: pytest.CaptureFixture[str]) -> None:
    result = perflint.check([ODD], select=["TC", "DIM"], fail_on="warning")
    assert result.exit_code == 1 and result.verdict == "failed" and not result.passed
    dim = [f for f in result.findings if f.code == "DIM001"]
    assert dim and dim[0].severity == "warning" and dim[0].impact_us and dim[0].impact_us > 0
    assert dim[0].trace == ODD and dim[0].fix and "DIM001" == dim[0].code
    assert result.counts["warning"] == len([f for f in result.findings if f.severity == "warning"])
    assert main(["check", ODD, "--select", "TC,DIM", "--fail-on", "warning", "--format", "json"]) == 1
    cli = json.loads(capsys.readouterr().out)
    api = json.loads(result.to_json())
    fingerprints = [[f["fingerprint"] for f in t["findings"]] for doc in (api, cli) for t in doc["traces"]]
    assert fingerprints[0] == fingerprints[1] != [] and len(fingerprints) == 2
    assert api["verdict"] == cli["verdict"] == "failed" and api["counts"] == cli["counts"]


def test_check_accepts_one_path_and_comma_selectors() -> None:
    a = perflint.check(UNALIGNED, select="TC,DIM")
    b = perflint.check([Path(UNALIGNED)], select=["TC", "DIM"])
    assert [f.fingerprint for f in a.findings] == [f.fingerprint for f in b.findings] != []
    assert a.exit_code == 0  # the default gate is "error" and DIM001 is a warning


def test_check_bad_file_among_good_is_reported(tmp_path: Path) -> None:
    bad = _bad(tmp_path)
    result = perflint.check([bad, UNALIGNED], select=["DIM"])
    assert result.exit_code == 2 and result.verdict == "error"
    assert [e.source for e in result.errors] == [bad]
    assert result.errors[0].problem and bad not in result.errors[0].problem
    assert any(f.code == "DIM001" for f in result.findings)  # the good trace was still checked


def test_check_raises_for_what_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(perflint.PerflintError, match="^select: selector 'NOPE' matches no rule"):
        perflint.check(CLEAN, select=["NOPE"])  # the argument, never "command line"
    with pytest.raises(perflint.PerflintError, match="fail_on"):
        perflint.check(CLEAN, fail_on="sometimes")  # type: ignore[arg-type]
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("select: [TC\n")
    with pytest.raises(perflint.PerflintError) as info:
        perflint.check(CLEAN, config=cfg)
    assert info.value.source == str(cfg)


def test_files_a_baseline_scan_skipped_are_notices_not_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base"
    base.mkdir()
    shutil.copy(CLEAN, base / "clean.pt.trace.json.gz")
    (base / "summary.json").write_text('{"total_time": 1.5}')
    result = perflint.check(CLEAN, select=["REG"], baseline=base, fail_on="never")
    assert result.exit_code == 0 and capsys.readouterr().err == ""
    (notice,) = [n for n in result.run.notices if "summary.json" in n]
    assert notice.startswith(f"skipped {base / 'summary.json'}: JSON object without 'traceEvents'")
    assert main(["check", CLEAN, "--select", "REG", "--baseline", str(base), "--fail-on", "never", "-j", "1"]) == 0
    assert f"perflint: notice: skipped {base / 'summary.json'}" in capsys.readouterr().err


def test_gpu_rules_skip_on_a_cpu_trace() -> None:
    result = perflint.check(CPU, select=["TC"], fail_on="info")
    assert result.passed and result.findings == []
    assert result.skipped_rules and all(code.startswith("TC") for code in result.skipped_rules)


def test_summary_is_the_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    got = perflint.summary([UNALIGNED, CPU])
    assert main(["summary", UNALIGNED, CPU, "--format", "json"]) == 0
    assert json.loads(json.dumps(got)) == json.loads(capsys.readouterr().out)["traces"]


def test_summary_raises_input_error(tmp_path: Path) -> None:
    bad = _bad(tmp_path)
    with pytest.raises(perflint.InputError) as info:
        perflint.summary([UNALIGNED, bad])
    assert info.value.source == bad and info.value.problem


def test_load_gives_a_linked_trace(tmp_path: Path) -> None:
    trace = perflint.load(UNALIGNED)
    assert isinstance(trace, Trace) and trace.path == UNALIGNED
    assert (trace.gpu.launch[trace.gpu.kind == KERNEL] != NONE).any()  # linked: kernels know their launch
    for path, why in ((tmp_path / "missing.json", "no such file"), (Path(_bad(tmp_path)), "")):
        with pytest.raises(perflint.InputError) as info:
            perflint.load(path)
        assert info.value.source == str(path) and why in info.value.problem
    with pytest.raises(perflint.InputError, match="directory"):
        perflint.load(tmp_path)


def test_kernels_one_row_per_launch() -> None:
    trace = perflint.load(UNALIGNED)
    rows = perflint.kernels(trace)
    assert rows == perflint.kernels(UNALIGNED)
    assert len(rows) == int((trace.gpu.kind == KERNEL).sum()) > 0
    assert all(tuple(r) == TABLE_COLUMNS for r in rows)
    assert [r["ts_us"] for r in rows] == sorted(r["ts_us"] for r in rows)
    time_us = perflint.summary(UNALIGNED)[0]["kernels"]["time_us"]
    assert sum(r["dur_us"] for r in rows) == pytest.approx(time_us, abs=1e-3)
    gemm = [r for r in rows if r["category"] == "gemm"]
    assert gemm and all(r["bottom_level_op"] and r["top_level_op"] and r["dtype"] == "fp16" for r in gemm)
    assert all(len(r["grid"]) == 3 and len(r["block"]) == 3 for r in gemm)
    assert perflint.kernels(CPU) == []
    picked = perflint.kernels(trace, columns=["kernel", "tensor_cores", "dur_us"])
    assert [list(r) for r in picked[:1]] == [["kernel", "tensor_cores", "dur_us"]]
    with pytest.raises(perflint.PerflintError, match="unknown column occupancy"):
        perflint.kernels(trace, columns=["occupancy"])


def test_kernels_api_and_command_give_the_same_table(capsys: pytest.CaptureFixture[str]) -> None:
    """perflint.kernels() and `perflint kernels --format json` with every column: the same rows
    under the same names, for a Kineto trace, a pyprof run and a CUPTI counter trace."""
    import orjson

    for path in (UNALIGNED, shared_trace("pyprof/lm_da6bcc3/net.sql"), str(FIXTURES / "gpu" / "cupti_metrics.pt.trace.json.gz")):
        rows = perflint.kernels(path)
        assert main(["kernels", path, "--format", "json", "-c", ",".join(rows[0])]) == 0
        assert orjson.loads(capsys.readouterr().out) == orjson.loads(orjson.dumps(rows, option=orjson.OPT_SERIALIZE_NUMPY))


def _by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows}


def test_ops_self_and_total_times() -> None:
    trace = perflint.load(UNALIGNED)
    rows = perflint.ops(trace)
    assert all(tuple(r) == OP_COLUMNS for r in rows)
    assert sum(r["calls"] for r in rows) == len(trace.ops)
    assert [r["device_total_us"] for r in rows] == sorted((r["device_total_us"] for r in rows), reverse=True)
    ops = _by_name(rows)
    # aten::linear launches nothing itself: its addmm does, and the time counts in both totals.
    assert ops["aten::linear"]["device_self_us"] == 0 < ops["aten::linear"]["device_total_us"]
    assert ops["aten::addmm"]["device_self_us"] == pytest.approx(ops["aten::addmm"]["device_total_us"])
    assert ops["aten::linear"]["device_total_us"] >= ops["aten::addmm"]["device_total_us"] > 0
    for r in rows:
        assert 0 <= r["host_self_us"] <= r["host_total_us"] + 1e-9
        assert 0 <= r["device_self_us"] <= r["device_total_us"] + 1e-9
    # Every kernel launched from an op counts once in some op's self time.
    kernels = perflint.kernels(trace)
    linked = sum(k["dur_us"] for k in kernels if k["op"])
    assert sum(r["device_self_us"] for r in rows) >= linked - 1e-6
    cpu = perflint.ops(CPU)
    assert cpu and all(r["device_total_us"] == 0 for r in cpu)
    assert any(r["host_self_us"] < r["host_total_us"] for r in cpu)  # nesting seen


def test_cli_and_api_share_the_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import perflint.run as runs
    from perflint.commands import check as check_cmd
    from perflint.commands import summary as summary_cmd

    assert check_cmd.run_check is runs.run_check and summary_cmd.run_summary is runs.run_summary
    seen: list[str] = []

    def spy(name: str, real: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return real(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(check_cmd, "run_check", spy("check", runs.run_check))
    monkeypatch.setattr(summary_cmd, "run_summary", spy("summary", runs.run_summary))
    assert main(["check", CLEAN, "--select", "DIM"]) == 0
    assert main(["summary", CLEAN]) == 0
    monkeypatch.setattr(runs, "run_check", spy("api check", runs.run_check))
    monkeypatch.setattr(runs, "run_summary", spy("api summary", runs.run_summary))
    assert perflint.check(CLEAN, select="DIM").passed and perflint.summary(CLEAN)
    assert seen == ["check", "summary", "api check", "api summary"]


def test_a_trace_repr_is_one_line() -> None:
    t = perflint.load(CLEAN)
    text = repr(t)
    assert "\n" not in text and len(text) < 300, text
    assert f"gpu={len(t.gpu)}" in text and f"steps={len(t.steps)}" in text
