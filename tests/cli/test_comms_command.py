"""`perflint comms` and the summary's `communication`: real Kineto traces with collectives against
values computed here from their raw JSON, Nsight Systems exports, the JSON schema, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fixtures.nsys.make_fixtures import build_nccl_two_ranks
from fixtures.rules.STRAG001.make import bad
from perflint.cli import main
from perflint.report.json_schema import CommunicationModel
from perflint.stepmodel.comm_table import COLUMNS
from tests.conftest import shared_trace

RESNET = "tracelens/traces/mi300/resnet_act_checkpoint.json.gz"
NS_RESOLUTION = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
SIZES = {"BFloat16": 2, "Float": 4, "Long": 8}


def _write_ranks(builders: list[Any], directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    for r, b in enumerate(builders):
        b.write(directory / f"rank{r}.json")
    return str(directory)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["comms", *argv, "--format", "json", "-c", ",".join(COLUMNS)]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


def _events(rel: str) -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress(Path(shared_trace(rel)).read_bytes()))
    evs: list[dict[str, Any]] = doc["traceEvents"]
    return evs


def test_resnet_all_reduce_and_broadcast_from_the_raw_json(capsys: pytest.CaptureFixture[str]) -> None:
    """MI300X rank 0 of 8: each collective's record is on its kernel (and its op): bytes are the
    kernels' In msg nelems x BFloat16/Long, time their durations, n their Group size."""
    rows = {r["name"]: r for r in _json(capsys, shared_trace(RESNET), "--include-edge-steps")}
    kernels = [e for e in _events(RESNET) if e.get("cat") == "kernel" and "Collective name" in e.get("args", {})]
    for name, recorded in (("all_reduce", "allreduce"), ("broadcast", "broadcast")):
        mine = [e for e in kernels if e["args"]["Collective name"] == recorded]
        nbytes = sum(e["args"]["In msg nelems"] * SIZES[e["args"]["dtype"]] for e in mine)
        us = sum(e["dur"] for e in mine)
        n = mine[0]["args"]["Group size"]
        r = rows[name]
        assert (r["process_group"], r["process_group_desc"], r["group_size"]) == ("0", "default_pg", n)
        assert (r["count"], r["kernels"], r["sized"], r["bytes"]) == (len(mine), len(mine), len(mine), nbytes)
        assert r["time_us"] == pytest.approx(us, abs=1e-3)
        assert r["algbw_gbps"] == pytest.approx(nbytes / us / 1e3, abs=1e-3)
        factor = 2 * (n - 1) / n if name == "all_reduce" else 1.0
        assert r["busbw_gbps"] == pytest.approx(nbytes / us / 1e3 * factor, abs=1e-3)
        assert r["wait_us"] is None and r["link_gbps"] is None  # one rank alone; no MI300X link figure
    # by hand: three steps of one 2,873,320- and one 8,816,192-element bf16 all-reduce
    assert rows["all_reduce"]["bytes"] == 3 * (2_873_320 + 8_816_192) * 2 == 70_137_072
    assert rows["broadcast"]["dtype"] == "bf16, int64"
    # five NCCL kernels launched before the profile's CPU events began: no record, no launching op
    assert (rows["ncclDevKernel_Generic"]["count"], rows["ncclDevKernel_Generic"]["bytes"]) == (5, None)


def test_records_without_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    """A group of one rank runs no NCCL kernel: the records give count and bytes, no time; the
    work.wait() records are no collectives. The V100 SXM2's NVLink: 300 GB/s, 150 each way."""
    rows = {r["name"]: r for r in _json(capsys, shared_trace(NS_RESOLUTION), "--include-edge-steps")}
    evs = _events(NS_RESOLUTION)
    steps = [e for e in evs if e.get("name", "").startswith("ProfilerStep#")]
    records = [e for e in evs if e.get("name") == "record_param_comms" and any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in steps)]
    assert set(rows) == {"all_reduce", "broadcast"}
    for name, recorded in (("all_reduce", "allreduce"), ("broadcast", "broadcast")):
        mine = [e["args"] for e in records if e["args"]["Collective name"] == recorded]
        r = rows[name]
        assert (r["count"], r["kernels"], r["time_us"], r["algbw_gbps"]) == (len(mine), 0, None, None)
        assert r["bytes"] == sum(a["In msg nelems"] * SIZES[a["dtype"]] for a in mine)
        assert (r["group_size"], r["process_group"], r["link"], r["link_gbps"]) == (1, "[0]", "NVLink", 150.0)
    assert rows["all_reduce"]["count"] == 25 and rows["broadcast"]["count"] == 10


def test_the_window_leaves_edge_steps_out(capsys: pytest.CaptureFixture[str]) -> None:
    whole = {r["name"]: r["count"] for r in _json(capsys, shared_trace(RESNET), "--include-edge-steps")}
    window = {r["name"]: r["count"] for r in _json(capsys, shared_trace(RESNET))}
    assert window["all_reduce"] == 2 < whole["all_reduce"] == 6  # 3 steps: the middle one analysed


@pytest.mark.parametrize("fmt", ["csv", "tsv", "text"])
def test_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["comms", shared_trace(RESNET), "--format", fmt, "-c", "name,count,bytes,busbw_gbps"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    sep = {"csv": ",", "tsv": "\t"}.get(fmt)
    header = lines[0].split(sep) if sep else lines[0].split()
    assert header == ["name", "count", "bytes", "busbw_gbps"]
    assert any(line.replace("\t", ",").replace(" ", ",").startswith("all_reduce") for line in lines[1:])
    if fmt == "text":
        assert "no GPU-to-GPU link peak for the AMD Instinct MI300X" in out.err


def test_ranks_of_a_run_are_joined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """STRAG001's bad run: rank 2 computes 120 us longer; the others wait for it in every
    all-reduce of the three analysed steps."""
    run = _write_ranks(bad(), tmp_path / "run")
    rows = {r["rank"]: r for r in _json(capsys, run)}
    assert {r: (rows[r]["wait_us"], rows[r]["transfer_us"], rows[r]["joined"]) for r in rows} == {
        0: (360.0, 1140.0, 3), 1: (360.0, 1140.0, 3), 2: (0.0, 1140.0, 3), 3: (360.0, 1140.0, 3),
    }  # fmt: skip


def test_nsys_kernel_names_and_nvtx_ranges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two processes of an Nsight Systems export: the all-reduce's kernel names its collective,
    element type, algorithm and protocol; the generic kernel takes its collective from NCCL's
    NVTX range around its launch; the export records no size."""
    path = tmp_path / "nccl.sqlite"
    build_nccl_two_ranks(str(path))
    rows = _json(capsys, str(path))
    assert sorted((r["rank"], r["name"]) for r in rows) == [(0, "all_gather"), (0, "all_reduce"), (1, "all_gather"), (1, "all_reduce")]
    ar = next(r for r in rows if r["name"] == "all_reduce")
    assert (ar["dtype"], ar["algorithm"], ar["protocol"], ar["bytes"], ar["busbw_gbps"]) == ("bf16", "RING", "LL", None, None)
    assert (ar["count"], ar["time_us"], ar["link"], ar["link_gbps"]) == (2, 600.0, "NVLink", 450.0)  # H100 SXM: 900 GB/s both ways


def test_nsys_export_without_collectives(capsys: pytest.CaptureFixture[str]) -> None:
    """The real 2-GPU export's one-second window holds no NCCL kernel or range."""
    assert main(["comms", shared_trace("nsysai/h100_2gpu_1s.sqlite"), "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == []
    assert out.err.count("no collectives in the analysis window") == 2


def _schema() -> dict[str, Any]:
    return CommunicationModel.model_json_schema()


def test_summary_json_communication_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _write_ranks(bad(), tmp_path / "run")
    assert main(["summary", shared_trace(RESNET), run, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validator = jsonschema.Draft202012Validator(_schema())
    comms = [t["communication"] for t in doc["traces"]]
    for c in comms:
        validator.validate(c)
        assert set(c["collectives"][0]) == set(COLUMNS)
    joined = [c for c in comms if c["wait_us"] is not None]
    assert len(joined) == 4 and sum(c["wait_us"] for c in joined) == 3 * 360.0
    assert comms[0]["wait_us"] is None  # the MI300X rank is alone
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**comms[0], "count": "3"})


def test_summary_text_shows_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", shared_trace(RESNET)]) == 0
    out = capsys.readouterr().out
    assert "Communication   5 collective call(s)" in out
    assert any(line.split()[:1] == ["all_reduce"] for line in out.splitlines())


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur"')
    assert main(["comms", str(broken), shared_trace(RESNET), "--format", "csv", "-c", "name,count"]) == 2
    out = capsys.readouterr()
    assert out.err.count("perflint: error:") == 1 and str(broken) in out.err
    assert "all_reduce,2" in out.out  # the other trace is still shown
    assert main(["comms", shared_trace(RESNET), "-c", "name,nope"]) == 2
    assert "unknown column(s) nope" in capsys.readouterr().err


def test_api_takes_a_path_or_a_loaded_trace(capsys: pytest.CaptureFixture[str]) -> None:
    import perflint

    by_path = perflint.comms(shared_trace(RESNET))
    by_trace = perflint.comms(perflint.load(shared_trace(RESNET)))
    assert by_path == by_trace and {r["name"] for r in by_path} == {"all_reduce", "broadcast", "ncclDevKernel_Generic"}
    cli = _json(capsys, shared_trace(RESNET))
    assert [{k: r[k] for k in COLUMNS} for r in by_path] == cli


def test_ranks_that_do_not_join_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    """HTA's two sampled ranks of a 128-rank job: their collectives match but do not end together
    (the other 126 ranks are missing), so nothing is split, and each trace's notes say why."""
    run = str(Path(shared_trace("hta/trace_filter/sampled_rank-0.json.gz")).parent)
    rows = _json(capsys, run)
    assert {r["rank"] for r in rows} == {0, 1} and all(r["wait_us"] is None for r in rows)
    assert {r["name"] for r in rows} == {"all_to_all", "all_reduce", "all_gather"}  # SendRecv kernels under c10d::alltoall
    err = capsys.readouterr().err
    assert err.count("wait_us and transfer_us are unknown: the matched collectives do not end together") == 0  # json: no notes
    assert main(["comms", run, "-c", "name,wait_us"]) == 0
    assert capsys.readouterr().err.count("wait_us and transfer_us are unknown: the matched collectives do not end together") == 2
