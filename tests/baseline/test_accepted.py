"""Accepted findings belong to one trace: accepting on one trace never accepts another's findings,
the next run's file of the same trace stays accepted, and only traces this run checks can have
stale entries. `perflint accept` says what it wrote and never replaces a file unasked."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from perflint.cli import main
from tests.conftest import FIXTURES

LAUNCH = FIXTURES / "gpu" / "launch_bound.pt.trace.json.gz"  # UTIL001 and LAUNCH001, among others
GEMM = FIXTURES / "gpu" / "gemm_fp32.pt.trace.json.gz"  # UTIL001 and LAUNCH001 too

W0 = "worker0.1700000000000.pt.trace.json.gz"
W1 = "worker1.1700000000000.pt.trace.json.gz"


def _run(root: Path, **files: Path) -> Path:
    root.mkdir(parents=True)
    for name, src in files.items():
        shutil.copy(src, root / name)
    return root


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["check", *argv, "--fail-on", "info", "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _accept(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["accept", *argv, "--reason", "known", "-j", "1"])
    return code, capsys.readouterr().err


def _by_trace(doc: dict) -> dict[str, list[dict]]:
    return {Path(t["path"]).name: t["findings"] for t in doc["traces"]}


def test_accepting_on_one_trace_never_accepts_another(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run(tmp_path / "run", **{W0: LAUNCH, W1: GEMM})
    acc = tmp_path / "accepted.json"
    code, err = _accept(capsys, str(root / W0), "-o", str(acc))
    assert code == 0
    code, doc, err = _check(capsys, str(root), "--accepted", str(acc))
    found = _by_trace(doc)
    assert all(f["accepted"] == "known" for f in found[W0]) and found[W0]
    # worker1 has the same rules failing (UTIL001's subject is the same on every trace), none accepted
    assert {"UTIL001", "LAUNCH001"} <= {f["code"] for f in found[W1]}
    assert all(f["accepted"] is None for f in found[W1])
    assert code == 1 and "stale" not in err
    util = {t: next(f["fingerprint"] for f in fs if f["code"] == "UTIL001") for t, fs in found.items()}
    assert util[W0] != util[W1]


def test_the_next_runs_file_of_the_same_trace_stays_accepted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first = _run(tmp_path / "run1", **{"host_1234.1700000000000.pt.trace.json.gz": LAUNCH, "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": GEMM})
    second = _run(tmp_path / "run2", **{"otherhost_99.1700000999999.pt.trace.json": LAUNCH, "rank-0.May_21_07_00_00.77.pt.trace.json.gz": GEMM})
    acc = tmp_path / "accepted.json"
    assert _accept(capsys, str(first), "-o", str(acc))[0] == 0
    entries = json.loads(acc.read_text())["entries"]
    assert {e["role"] for e in entries} == {"*_*.*.pt.trace.json", "rank-0.*.*.pt.trace.json"}
    # LAUNCH001's subject names the trace file: the role is stored there, never the file name
    launch = [e for e in entries if e["code"] == "LAUNCH001"]
    assert launch and all(e["subject"] == {"path": e["role"]} for e in launch)
    code, doc, err = _check(capsys, str(second), "--accepted", str(acc))
    assert code == 0 and "stale" not in err
    assert all(f["accepted"] == "known" for fs in _by_trace(doc).values() for f in fs)


def test_only_traces_of_this_run_have_stale_entries(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run(tmp_path / "run", **{W0: LAUNCH, W1: GEMM})
    acc = tmp_path / "accepted.json"
    assert _accept(capsys, str(root), "-o", str(acc))[0] == 0
    # A subset: worker1 alone. Its findings are accepted; worker0's entries are not stale.
    code, doc, err = _check(capsys, str(root / W1), "--accepted", str(acc))
    assert code == 0 and "stale" not in err and doc["notices"] == []
    # An entry of worker1 whose finding is gone is stale, on worker1 only.
    file = json.loads(acc.read_text())
    gone = next(e for e in file["entries"] if e["role"] == "worker1.*.pt.trace.json" and e["code"] == "UTIL001")
    gone["fingerprint"] = "0" * 20
    acc.write_text(json.dumps(file))
    code, doc, err = _check(capsys, str(root / W1), "--accepted", str(acc))
    (note,) = doc["notices"]
    assert code == 1 and "stale accepted finding" in note and "0" * 20 in note and "worker1.*.pt.trace.json" in note
    code, doc, err = _check(capsys, str(root / W0), "--accepted", str(acc))
    assert code == 0 and doc["notices"] == []
    # ...and only when its rule ran: with UTIL001 not selected, nothing is said of it.
    code, doc, err = _check(capsys, str(root / W1), "--accepted", str(acc), "--select", "LAUNCH")
    assert doc["notices"] == []


def test_accept_says_what_it_wrote_and_never_replaces_a_file_unasked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run(tmp_path / "run", **{W0: LAUNCH, W1: GEMM})
    acc = tmp_path / "accepted.json"
    code, err = _accept(capsys, str(root / W0), "-o", str(acc))
    n0 = len(json.loads(acc.read_text())["entries"])
    assert code == 0 and err.strip() == f"perflint: {n0} findings accepted from 1 trace into {acc}"
    before = acc.read_text()
    code, err = _accept(capsys, str(root / W1), "-o", str(acc))
    assert code == 2 and acc.read_text() == before
    assert err.strip() == f"perflint: error: {acc}: already exists: pass --merge to add to its entries, or --force to replace it"
    # --merge keeps worker0's entries and adds worker1's.
    code, err = _accept(capsys, str(root / W1), "-o", str(acc), "--merge")
    entries = json.loads(acc.read_text())["entries"]
    n1 = len(entries) - n0
    assert code == 0 and n1 > 0
    assert err.strip() == f"perflint: {n1} findings accepted from 1 trace into {acc}, {n0} kept from the previous file"
    # A finding accepted before keeps its first reason and date.
    main(["accept", str(root), "-o", str(acc), "--merge", "--reason", "later", "-j", "1"])
    err = capsys.readouterr().err
    assert err.strip() == f"perflint: {n0 + n1} findings accepted from 2 traces into {acc}, 0 kept from the previous file"
    assert {e["reason"] for e in json.loads(acc.read_text())["entries"]} == {"known"}
    code, err = _accept(capsys, str(root / W1), "-o", str(acc), "--force")
    assert code == 0 and err.strip() == f"perflint: {n1} findings accepted from 1 trace into {acc}, replacing the previous file"
    assert len(json.loads(acc.read_text())["entries"]) == n1


def _v1_fingerprint(code: str, rank: int | None, *subject: object) -> str:
    """The fingerprint version-1 files hold: code, rank and the reprs of the row's key values."""
    parts = [code, "" if rank is None else str(rank)] + [repr(v) for v in subject]
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:20]


def test_version_1_files_still_load_and_match_their_own_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _run(tmp_path / "run", **{W0: LAUNCH, W1: GEMM})
    acc = tmp_path / "old.json"
    entries = [
        # UTIL001 (scope trace, key: rank), accepted on worker0: v1 gave it the same fingerprint on every trace
        {"fingerprint": _v1_fingerprint("UTIL001", None, None), "code": "UTIL001", "message": "m", "trace": W0,
         "rank": None, "reason": "old util", "accepted": "2024-01-01"},
        # LAUNCH001 (scope launch_summary, key: path): v1 hashed the path the trace was read from
        {"fingerprint": _v1_fingerprint("LAUNCH001", None, str(root / W0)), "code": "LAUNCH001", "message": "m",
         "trace": W0, "rank": None, "reason": "old launch", "accepted": "2024-01-01"},
    ]
    acc.write_text(json.dumps({"schema": "perflint-accepted", "schema_version": 1, "entries": entries}))
    code, doc, err = _check(capsys, str(root), "--accepted", str(acc))
    found = _by_trace(doc)
    accepted = {(t, f["code"]): f["accepted"] for t, fs in found.items() for f in fs if f["accepted"]}
    assert accepted == {(W0, "UTIL001"): "old util", (W0, "LAUNCH001"): "old launch"}
    assert any("2 accepted entries have no trace role" in n for n in doc["notices"])
    assert not any("stale" in n for n in doc["notices"])
    # accept --merge rewrites them with a role, keeping their reason and date
    assert _accept(capsys, str(root), "-o", str(acc), "--merge")[0] == 0
    doc = json.loads(acc.read_text())
    assert doc["schema_version"] == 2 and all("role" in e for e in doc["entries"])
    old = [e for e in doc["entries"] if e["reason"].startswith("old")]
    assert sorted((e["code"], e["role"], e["accepted"]) for e in old) == [
        ("LAUNCH001", "worker0.*.pt.trace.json", "2024-01-01"),
        ("UTIL001", "worker0.*.pt.trace.json", "2024-01-01"),
    ]


def test_unknown_accepted_version_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    acc = tmp_path / "a.json"
    acc.write_text(json.dumps({"schema": "perflint-accepted", "schema_version": 9, "entries": []}))
    assert main(["check", str(LAUNCH), "--accepted", str(acc)]) == 2
    assert "unsupported accepted-findings schema_version 9" in capsys.readouterr().err
