"""Archives are directories: a .tar, .tar.gz, .tgz or .zip of traces is checked member by member
without extracting it, each member as the same file in a directory would be; damaged members and
archives cost one line each, and nothing in an archive is followed out of it.

Every archive here is built at test time from fixtures/ traces, the shared corpus' small rank pair
and a few synthetic members."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from perflint.cli import main
from perflint.errors import InputError
from perflint.readers import archive, discover, read_traces
from perflint.readers.source import head, read_bytes
from tests.conftest import FIXTURES, shared_trace

KINDS = ("tar", "tar.gz", "tgz", "zip")
CPU = FIXTURES / "cpu" / "sync_item.pt.trace.json.gz"
OTHER = FIXTURES / "cpu" / "dataloader.pt.trace.json.gz"
SQLITE = FIXTURES / "nsys" / "nsys2025_two_ranks.sqlite"


def build(path: Path, members: dict[str, bytes | tuple[str, str]]) -> Path:
    """An archive at `path` (its kind from the suffix) holding `members`: name -> content, or
    name -> ("symlink" | "hardlink" | "device", target)."""
    name = path.name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for n, data in members.items():
                if isinstance(data, tuple):
                    zi = zipfile.ZipInfo(n)
                    zi.create_system = 3
                    zi.external_attr = (stat.S_IFLNK if data[0] != "device" else stat.S_IFCHR) << 16 | 0o777 << 16
                    zf.writestr(zi, data[1])
                else:
                    zf.writestr(n, data)
        return path
    mode = "w:gz" if name.endswith((".tar.gz", ".tgz")) else "w"
    with tarfile.open(path, mode) as tf:
        for n, data in members.items():
            ti = tarfile.TarInfo(n)
            if isinstance(data, tuple):
                ti.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "device": tarfile.CHRTYPE}[data[0]]
                ti.linkname = data[1]
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return path


def _run_files() -> dict[str, bytes]:
    """A two-rank run (the corpus' rank pair, in one directory) beside a single-process trace."""
    ranks = Path(shared_trace("hta/trace_filter"))
    return {
        "sync_item.pt.trace.json.gz": CPU.read_bytes(),
        "job/sampled_rank-0.json.gz": (ranks / "sampled_rank-0.json.gz").read_bytes(),
        "job/sampled_rank-1.json.gz": (ranks / "sampled_rank-1.json.gz").read_bytes(),
    }


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["check", *argv, "--fail-on", "never", "--format", "json", "-j", "1"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.mark.parametrize("kind", KINDS)
def test_an_archive_reports_what_its_directory_reports(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    files = _run_files()
    monkeypatch.chdir(tmp_path)
    for name, data in files.items():
        Path("run", name).parent.mkdir(parents=True, exist_ok=True)
        Path("run", name).write_bytes(data)
    arch = build(tmp_path / f"run.{kind}", files).name
    _, want, _ = _check(capsys, "run")
    code, got, err = _check(capsys, arch)
    assert code == 0 and err == "" and got["errors"] == []
    assert [t["path"] for t in got["traces"]] == [f"{arch}!/sync_item.pt.trace.json.gz", f"{arch}!/job/sampled_rank-0.json.gz", f"{arch}!/job/sampled_rank-1.json.gz"]
    assert got["run_findings"], "the two ranks of the archive's job/ directory are one run"
    # The same report, role, fingerprints and run-level findings included, but for the paths.
    assert json.dumps(got).replace(f"{arch}!/", "run/") == json.dumps(want)


def test_recognized_by_content_and_a_gzipped_json_stays_a_trace(tmp_path: Path) -> None:
    disguised = build(tmp_path / "traces.tgz", {"a.json.gz": CPU.read_bytes()}).rename(tmp_path / "traces.bin")
    zipped = build(tmp_path / "z.zip", {"a.json.gz": CPU.read_bytes()}).rename(tmp_path / "z.data")
    files, errors, _ = discover([str(disguised), str(zipped), str(CPU)])
    assert errors == []
    assert files == [f"{disguised}!/a.json.gz", f"{zipped}!/a.json.gz", str(CPU)]  # a .json.gz is one trace


def test_members_a_scan_would_skip_are_skipped_alike(tmp_path: Path) -> None:
    members: dict[str, bytes | tuple[str, str]] = {
        "b/trace.json.gz": CPU.read_bytes(),
        "a/et.json": json.dumps({"schema": "1.0", "nodes": []}).encode(),
        "notes.txt": b"hello",
        ".hidden.json": CPU.read_bytes(),
        "run/.cache/x.json": CPU.read_bytes(),
        "report.nsys-rep": b"\x00",
        "dir/": b"",
    }
    arch = build(tmp_path / "t.zip", members)
    files, errors, skipped = discover([str(arch)])
    assert errors == [] and files == [f"{arch}!/b/trace.json.gz"]
    why = dict(skipped)
    assert "execution trace" in why[f"{arch}!/a/et.json"]
    assert "not a trace file name" in why[f"{arch}!/notes.txt"]
    assert "nsys export" in why[f"{arch}!/report.nsys-rep"]
    assert not any(".hidden" in p or ".cache" in p for p in why)  # hidden, as in a directory: not looked at
    # --exclude globs match a member's path in the archive, as a file's in a directory.
    files, _, skipped = discover([str(arch)], exclude=["b/*"])
    assert files == [] and dict(skipped)[f"{arch}!/b/trace.json.gz"].startswith("excluded by pattern")


def test_an_archive_in_a_scanned_directory_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    shutil.copy(CPU, tmp_path / "d" / "a.json.gz")
    arch = build(tmp_path / "d" / "ranks.tar", {"r0/x.json.gz": OTHER.read_bytes()})
    files, errors, _ = discover([str(tmp_path / "d")])
    assert errors == [] and files == [str(tmp_path / "d" / "a.json.gz"), f"{arch}!/r0/x.json.gz"]
    files, _, skipped = discover([str(tmp_path / "d")], exclude=["ranks.tar"])
    assert files == [str(tmp_path / "d" / "a.json.gz")] and skipped[0][1].startswith("excluded by pattern")


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_member_is_one_line_and_the_others_are_checked(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members: dict[str, bytes | tuple[str, str]] = {
        "a_good.json.gz": CPU.read_bytes(),
        "b_bad.json": b'{"traceEvents": [{"ph": "X", ',
        "c_cut.json.gz": CPU.read_bytes()[:200],
        "d_good.json.gz": OTHER.read_bytes(),
    }
    arch = build(tmp_path / f"t.{kind}", members)
    code, doc, err = _check(capsys, str(arch))
    assert code == 2
    assert doc["errors"] == [
        f"{arch}!/b_bad.json: invalid JSON: input is truncated (Input data was truncated)",
        f"{arch}!/c_cut.json.gz: truncated gzip stream (file ends before the compressed data does)",
    ]
    assert [t["path"] for t in doc["traces"]] == [f"{arch}!/a_good.json.gz", f"{arch}!/d_good.json.gz"]
    assert err.count("perflint: error:") == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_archive_is_one_line_and_other_inputs_are_checked(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = build(tmp_path / f"t.{kind}", {"a.json.gz": CPU.read_bytes(), "b.json.gz": OTHER.read_bytes()}).read_bytes()
    cut = tmp_path / f"cut.{kind}"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    code, doc, err = _check(capsys, str(cut), str(CPU))
    assert code == 2
    assert len(doc["errors"]) == 1 and doc["errors"][0].startswith(f"{cut}: "), doc["errors"]
    assert any(w in doc["errors"][0] for w in ("truncated archive", "corrupt archive")), doc["errors"]
    assert [t["path"] for t in doc["traces"]] == [str(CPU)]
    garbage = tmp_path / f"garbage.{kind}"
    garbage.write_bytes(b"not an archive at all" * 40)
    code, doc, _ = _check(capsys, str(garbage))
    assert code == 2 and doc["errors"][0].startswith(f"{garbage}: corrupt archive"), doc["errors"]


def test_names_outside_the_archive_links_and_devices_are_never_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    secret = tmp_path / "secret.json"
    secret.write_bytes(CPU.read_bytes())
    members: dict[str, bytes | tuple[str, str]] = {
        "ok.json.gz": OTHER.read_bytes(),
        "../evil.json": b'{"traceEvents": []}',
        "/abs.json": b'{"traceEvents": []}',
        "a/../../evil2.json": b'{"traceEvents": []}',
        "link.json": ("symlink", str(secret)),
        "hard.json": ("hardlink", "ok.json.gz"),
        "dev.json": ("device", ""),
    }
    for kind in ("tar", "zip"):
        arch = build(work / f"t.{kind}", {k: v for k, v in members.items() if kind == "tar" or v[0] != "hardlink"})
        files, errors, skipped = discover([arch.name])
        assert errors == [] and files == [f"{arch.name}!/ok.json.gz"]
        why = dict(skipped)
        assert "link inside the archive: not followed" in why[f"{arch.name}!/link.json"]
        assert (kind == "zip") or "not followed" in why[f"{arch.name}!/hard.json"]
        outside = [r for p, r in skipped if p == arch.name]
        assert len(outside) == 3, skipped
        assert all("outside the archive" in r for r in outside)
        # Named directly, such members are refused too: nothing is read through them.
        for name, words in (("link.json", "links are not followed"), ("../evil.json", "not a member name"), ("dev.json", "device")):
            with pytest.raises(InputError, match=words):
                read_bytes(archive.join(arch.name, name))
    assert sorted(os.listdir(work)) == ["t.tar", "t.zip"] and sorted(os.listdir(tmp_path)) == ["secret.json", "work"]  # nothing written


def test_a_nested_archive_is_listed_not_opened(tmp_path: Path) -> None:
    inner = build(tmp_path / "inner.tgz", {"x.json.gz": CPU.read_bytes()}).read_bytes()
    arch = build(tmp_path / "outer.zip", {"a.json.gz": CPU.read_bytes(), "inner.tgz": inner, "sneaky.json": inner})
    files, errors, skipped = discover([str(arch)])
    assert errors == [] and files == [f"{arch}!/a.json.gz"]
    assert dict(skipped) == {f"{arch}!/inner.tgz": "an archive inside the archive: nested archives are not opened",
                             f"{arch}!/sneaky.json": "an archive inside the archive: nested archives are not opened"}


@pytest.mark.parametrize("kind", ("tgz", "zip"))
def test_a_sqlite_member_is_read_from_a_private_copy_removed_after(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(SQLITE, d / "prof.sqlite")
    arch = build(tmp_path / f"n.{kind}", {"prof.sqlite": SQLITE.read_bytes()})
    _, want, _ = _check(capsys, str(d))
    code, got, _ = _check(capsys, str(arch))
    assert code == 0 and got["errors"] == [] and [t["rank"] for t in got["traces"]] == [0, 1]
    assert json.dumps(got).replace(f"{arch}!/", f"{d}/") == json.dumps(want)
    assert os.listdir(private) == []  # every copy removed


def test_a_member_over_the_memory_budget_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = b'{"traceEvents": [' + b" " * (3 << 20) + b"]}"
    arch = build(tmp_path / "b.zip", {"a.json.gz": CPU.read_bytes(), "big.json": big, "bomb.json.gz": gzip.compress(big)})
    code, doc, _ = _check(capsys, str(arch), "--memory-budget", "1M")
    assert code == 2 and [t["path"] for t in doc["traces"]] == [f"{arch}!/a.json.gz"]
    assert doc["errors"] == [
        f"{arch}!/big.json: archive member holds 3.0 MiB: a member is read in memory, and the memory budget lets it hold 1.0 MiB; extract it and check the file, or raise --memory-budget",
        f"{arch}!/bomb.json.gz: archive member decompresses to more than 1.0 MiB: a member is read in memory, and the memory budget lets it hold 1.0 MiB; extract it and check the file, or raise --memory-budget",
    ]
    code, doc, _ = _check(capsys, str(arch))  # the machine's budget: read, and found to be no trace
    assert code == 2 and all("memory budget" not in e for e in doc["errors"])


def test_a_profiler_output_directory_in_an_archive_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = Path(shared_trace("mindinsight/run_1/normal_run/profiler"))
    ms = {f"job/profiler/{p.name}": p.read_bytes() for p in sorted(src.iterdir()) if p.is_file()}
    arch = build(tmp_path / "ms.tgz", {**ms, "job/a.json.gz": CPU.read_bytes()})
    files, errors, skipped = discover([str(arch)])
    assert errors == [] and files == [f"{arch}!/job/a.json.gz"]
    assert skipped == [(str(arch), "MindSpore profiler output directory inside the archive (job/profiler): read from a directory only; extract it and check the directory")]
    only = build(tmp_path / "only.zip", {p.name: p.read_bytes() for p in sorted(src.iterdir()) if p.is_file()})
    code, doc, _ = _check(capsys, str(only))
    assert code == 2 and doc["errors"][0].startswith(f"{only}: no trace files in archive (1 file skipped")
    assert "(at its root)" in doc["skipped"][0]["reason"]


def test_jobs_and_dask_give_the_results_of_one_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arch = build(tmp_path / "run.tgz", {**_run_files(), "n/prof.sqlite": SQLITE.read_bytes(), "bad.json": b"{"})

    def out(*extra: str) -> tuple[int, str]:
        code = main(["check", str(arch), "--format", "json", "--fail-on", "never", *extra])
        return code, capsys.readouterr().out

    one = out("--jobs", "1")
    assert one[0] == 2 and one[1].count('"role"') >= 5
    assert out("--jobs", "2") == one
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert out("--executor", "dask", "--scheduler", cluster.scheduler_address) == one


def test_accepted_findings_carry_over_between_a_directory_and_its_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    files = _run_files()
    monkeypatch.chdir(tmp_path)
    for name, data in files.items():
        Path("run", name).parent.mkdir(parents=True, exist_ok=True)
        Path("run", name).write_bytes(data)
    build(tmp_path / "run.zip", files)
    assert main(["accept", "run", "-o", "accepted.json", "--reason", "known"]) == 0
    capsys.readouterr()
    code, doc, _ = _check(capsys, "run.zip", "--accepted", "accepted.json")
    findings = [f for t in doc["traces"] for f in t["findings"]] + doc["run_findings"]
    assert code == 0 and findings and all(f.get("accepted") for f in findings), [f for f in findings if not f.get("accepted")][:2]


def test_one_member_by_its_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arch = build(tmp_path / "r.tgz", {"x/a.json.gz": CPU.read_bytes(), "x/b.json.gz": OTHER.read_bytes()})
    member = f"{arch}!/x/b.json.gz"
    code, doc, _ = _check(capsys, member)
    assert code == 0 and [t["path"] for t in doc["traces"]] == [member]
    assert read_traces(member)[0].path == member
    assert head(member) == head(str(OTHER))
    with pytest.raises(InputError, match="no such member in the archive"):
        read_traces(f"{arch}!/x/c.json.gz")
    with pytest.raises(InputError, match=r"a tar or zip archive: `perflint check` reads its members"):
        read_traces(str(arch))  # one trace asked for: the archive is no trace


def test_a_file_named_like_a_member_is_the_file(tmp_path: Path) -> None:
    arch = build(tmp_path / "r.tar", {"a.json": b"{}"})
    real = tmp_path / "r.tar!"
    real.mkdir()
    (real / "a.json").write_bytes(CPU.read_bytes())
    assert archive.split(f"{arch}!/a.json") is None  # the file that exists is read, never the member
    assert read_bytes(f"{arch}!/a.json") == gzip.decompress(CPU.read_bytes())


def test_a_compressed_tar_of_many_members_is_read_through_an_index(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "INDEXED_MIN_FILES", 2)
    monkeypatch.setattr(archive, "INDEXED_MIN_BYTES", 0)
    monkeypatch.setattr(archive, "_TABLES", {})
    traces = sorted((FIXTURES / "cpu").glob("*.json.gz"))[:6]
    files = {f"r{i}/{p.name}": gzip.decompress(p.read_bytes()) for i, p in enumerate(traces)}  # plain JSON members
    for name, data in files.items():
        (tmp_path / "run" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "run" / name).write_bytes(data)
    arch = build(tmp_path / "run.tgz", dict(reversed(files.items())))  # archive order: the reverse of the walk's
    _, want, _ = _check(capsys, str(tmp_path / "run"))
    code, got, _ = _check(capsys, str(arch))
    assert code == 0 and len(got["traces"]) == 6
    assert json.dumps(got).replace(f"{arch}!/", f"{tmp_path / 'run'}/") == json.dumps(want)
    (table,) = archive._TABLES.values()
    assert table.index is not None and len(table.index.points) == 12  # where each member starts and ends
