"""perflint performance benchmark: prepare (prepare.py), measure (measure.py), report (report.py).

One command::

    python benchmarks/run.py [--sizes 200,1000] [--repeats 3] [--warmup 1] [--workdir DIR]
                             [--skip-hta] [--hta-1gb] [--out BENCHMARKS.md] [--quick]

It tiles a real Kineto trace to ~200 MB and ~1 GB with ``shared/tools/scale_trace.py``
(cached in the work directory), then measures each tool as a whole process -- wall time
and peak RSS (``os.wait4`` rusage of the child), median of the repeats, each command after
``--warmup`` discarded runs of itself (every tool alike):

* ``simdjson``   pysimdjson parse of the file's bytes (the cost floor)
* ``orjson``     ``orjson.loads`` of the file's bytes (a whole-file DOM of dicts)
* ``check``      ``python -m perflint check TRACE`` (exit 0 or 1 = success)
* ``summary``    ``python -m perflint summary TRACE --format json``
* ``kernels``, ``ops``  ``python -m perflint kernels|ops TRACE --format csv``
* ``hta``        HTA ``TraceAnalysis`` load + ``get_temporal_breakdown()``
* ``check.gz``   perflint check of a ``.json.gz`` copy of the smallest trace, next to
                 the time to gunzip it (as the reader does, and with ``gzip -dc`` and
                 python-isal's ``igzip -dc`` as whole processes: context)
* ``jobs1/2``    perflint check of a 16-rank directory, ``--jobs 1`` vs ``--jobs 2``
* ``bigjobs1/2``  the same on 16 copies of a bigger real trace (context: how much of the
                 speedup the fixed start-up of a run takes on small rank files)

and writes BENCHMARKS.md with the table, the target ratios (PASS/FAIL), the
machine, the versions and the exact commands.  A tool whose command fails is reported
as "not available" with the reason; the rest of the run goes on.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from common import GZ_LEVEL, MB, REPO, SHARED, fmt_cmd, log, short
from measure import (
    GUNZIP_SCRIPT,
    HTA_SCRIPT,
    ORJSON_SCRIPT,
    PAIRED_REPEATS,
    SIMDJSON_SCRIPT,
    Bench,
    cpu_scaling,
    machine_info,
    perflint_version,
    py_versions,
    work_scaling,
)
from prepare import DEFAULT_BIG_RANK_SOURCE_REL, DEFAULT_SOURCE_REL, _uncompressed_mb, build_gz, build_rank_dir, build_scaled, hta_dir
from report import _f, write_report


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="200,1000",
                   help="trace sizes in MB (1e6 bytes), comma-separated (default 200,1000)")
    p.add_argument("--repeats", type=int, default=3, help="runs per measurement (default 3)")
    p.add_argument("--warmup", type=int, default=None,
                   help="discarded runs of each command before its measured ones (default 1; --quick: 0)")
    p.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / ".work",
                   help="where generated traces are cached (default benchmarks/.work)")
    p.add_argument("--shared", type=Path, default=SHARED,
                   help="the shared/ directory (default $PERFLINT_SHARED, else <repo>/../shared)")
    p.add_argument("--source", type=Path, default=None,
                   help=f"real trace to tile (default <shared>/{DEFAULT_SOURCE_REL})")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter for perflint, simdjson and orjson (default: this one)")
    p.add_argument("--hta-python", default=None,
                   help="interpreter with HolisticTraceAnalysis (default: --python; HTA's row is "
                        "reported as not available when it cannot import hta)")
    p.add_argument("--skip-hta", action="store_true", help="do not run HTA")
    p.add_argument("--hta-1gb", action="store_true",
                   help="also run HTA at sizes above 200 MB (≈400 s per run at 1 GB)")
    p.add_argument("--hta-repeats", type=int, default=None,
                   help="runs per HTA measurement (default --repeats)")
    p.add_argument("--ranks", type=int, default=16,
                   help="rank files in the --jobs directory (default 16)")
    p.add_argument("--big-rank-source", type=Path, default=None,
                   help="real trace copied into the second, context-only --jobs directory "
                        f"(default <shared>/{DEFAULT_BIG_RANK_SOURCE_REL})")
    p.add_argument("--skip-big-ranks", action="store_true",
                   help="do not measure --jobs on the second rank directory")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="per-process limit in seconds (default 1800)")
    p.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md",
                   help="report path (default <repo>/BENCHMARKS.md)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: one ~20 MB size, 1 repeat (well under a minute)")
    a = p.parse_args(argv)
    if a.quick:
        a.sizes = "20"
        a.repeats = 1
    if a.warmup is None:
        a.warmup = 0 if a.quick else 1
    try:
        a.size_list = sorted({int(float(x)) for x in a.sizes.split(",") if x.strip()})
    except ValueError:
        p.error("--sizes must be comma-separated numbers (MB)")
    if not a.size_list or min(a.size_list) < 1:
        p.error("--sizes must name at least one size >= 1")
    if a.repeats < 1:
        p.error("--repeats must be >= 1")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    t_start = time.perf_counter()
    shared = a.shared.resolve()
    scale_tool = shared / "tools" / "scale_trace.py"
    source = (a.source or shared / DEFAULT_SOURCE_REL).resolve()
    for need in (scale_tool, source):
        if not need.exists():
            log(f"error: {need} not found (use --shared / --source)")
            return 2
    workdir = a.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / ".gitignore").exists():
        (workdir / ".gitignore").write_text("*\n")
    hta_py = a.hta_python or a.python
    hta_repeats = a.hta_repeats or a.repeats

    inputs = prepare(a, shared, source, workdir)
    measured = measure(a, inputs, hta_py, hta_repeats)
    return report(a, inputs, measured, hta_py, hta_repeats, argv, t_start)


@dataclasses.dataclass
class Inputs:
    """The prepared traces: tiled sizes, the .gz copy, the rank directories, how they were made."""

    workdir: Path
    source: Path
    traces: dict[int, Path]
    gz: Path
    rank_dir: Path
    big_source: Path
    big_rank_dir: Path | None
    gen_cmds: list[str]


@dataclasses.dataclass
class Measured:
    """What the measuring step leaves for the report."""

    bench: Bench
    hta_sizes: list[int]
    hta_skip: str | None
    pairs: int
    rank_bytes: int
    big_specs: list[dict]
    scaling: float
    wscaling: float | None
    ident: str | None
    load_before: float


def prepare(a: argparse.Namespace, shared: Path, source: Path, workdir: Path) -> Inputs:
    """Build (or reuse from the work directory) every trace the measurements run on."""
    scale_tool = shared / "tools" / "scale_trace.py"
    log(f"perflint benchmark: sizes {a.size_list} MB, {a.repeats} repeat(s), "
        f"workdir {short(workdir)}")
    log("preparing traces ...")
    gen_cmds: list[str] = []
    traces: dict[int, Path] = {}
    for s in a.size_list:
        traces[s] = build_scaled(a.python, scale_tool, source, s, workdir)
        gen_cmds.append(f"{fmt_cmd([a.python, short(scale_tool), short(source)])} "
                        f"$W/{traces[s].name} --target-mb {s}")
    small = a.size_list[0]
    gz = build_gz(traces[small])
    gen_cmds.append(f"gzip -{GZ_LEVEL} -k $W/{traces[small].name}   "
                    "# done with Python's gzip module, same level")
    rank_dir = build_rank_dir(source, workdir, a.ranks)
    gen_cmds.append(f"# $W/{rank_dir.name}/rank{{0..{a.ranks - 1}}}.json: the source trace "
                    "uncompressed, distributedInfo.rank = i, world_size = "
                    f"{a.ranks}")
    big_source = (a.big_rank_source or shared / DEFAULT_BIG_RANK_SOURCE_REL).resolve()
    big_rank_dir: Path | None = None
    if not a.skip_big_ranks:
        if big_source.exists():
            big_rank_dir = build_rank_dir(big_source, workdir, a.ranks, f"ranks{a.ranks}_big")
            gen_cmds.append(f"# $W/{big_rank_dir.name}/rank{{0..{a.ranks - 1}}}.json: the same from "
                            f"{short(big_source)}")
        else:
            log(f"warning: {big_source} not found: the second rank directory is not measured")

    return Inputs(workdir, source, traces, gz, rank_dir, big_source, big_rank_dir, gen_cmds)


def measure(a: argparse.Namespace, inputs: Inputs, hta_py: str, hta_repeats: int) -> Measured:
    """Run every tool on the prepared traces as whole processes."""
    workdir, traces, gz, rank_dir, big_rank_dir = inputs.workdir, inputs.traces, inputs.gz, inputs.rank_dir, inputs.big_rank_dir
    small = a.size_list[0]
    b = Bench(a, workdir)
    py = a.python
    check_ok = (0, 1)
    # perflint may not exist yet or be incomplete: probe once; after a failed ``check``
    # (``summary``) skip the other runs of that subcommand, with the reason.
    perflint_dead: str | None = None
    probe = subprocess.run([py, "-m", "perflint", "--help"], capture_output=True, text=True,
                           cwd=REPO, env=b.env)
    if probe.returncode != 0:
        why = (probe.stderr.strip() or probe.stdout.strip() or "(no output)").splitlines()[-1]
        perflint_dead = (f"not available: `python -m perflint --help` exit {probe.returncode}: "
                         f"{why[-300:]}")
    dead: dict[str, str | None] = {"check": perflint_dead, "summary": perflint_dead}

    hta_sizes = [s for s in a.size_list if s <= 200 or a.hta_1gb]
    if not hta_sizes and a.size_list:
        hta_sizes = [small]
    hta_skip = "--skip-hta" if a.skip_hta else None
    if not hta_skip:
        probe = subprocess.run([hta_py, "-c", "import hta.trace_analysis"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            hta_skip = (f"not available: {hta_py} cannot import hta: "
                        f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")

    time.sleep(0 if a.quick else 5)  # let the generation's page-cache writeback settle
    load_before = os.getloadavg()[0]
    if load_before > 0.5:
        log(f"warning: 1-minute load average is {load_before:.2f} before measuring; other "
            "processes compete for the CPUs and skew the timings (--jobs speedup most)")
    log("measuring ...")
    for s in a.size_list:
        t = traces[s]
        n = t.stat().st_size
        b.measure(f"simdjson@{s}", "simdjson", "pysimdjson parse (floor)",
                  [py, "-c", SIMDJSON_SCRIPT, str(t)], where=f"{s} MB", file_bytes=n, warm=[t])
        b.measure(f"orjson@{s}", "orjson", "orjson.loads",
                  [py, "-c", ORJSON_SCRIPT, str(t)], where=f"{s} MB", file_bytes=n)
        r = b.measure(f"check@{s}", "check", "perflint check",
                      [py, "-m", "perflint", "check", str(t)], where=f"{s} MB", file_bytes=n,
                      ok_rc=check_ok, skip_reason=dead["check"])
        if not r.ok and dead["check"] is None:
            dead["check"] = r.error
        r = b.measure(f"summary@{s}", "summary", "perflint summary --format json",
                      [py, "-m", "perflint", "summary", str(t), "--format", "json"],
                      where=f"{s} MB", file_bytes=n, skip_reason=dead["summary"])
        if not r.ok and dead["summary"] is None:
            dead["summary"] = r.error
        elif r.ok:
            try:
                json.loads((b.logs / f"summary_{s}.0.out").read_bytes())
            except (OSError, ValueError):
                log("    warning: its stdout is not one JSON document")
        for sub in ("kernels", "ops"):  # the tables: held to 1.5x check on the same trace
            r = b.measure(f"{sub}@{s}", sub, f"perflint {sub} --format csv",
                          [py, "-m", "perflint", sub, str(t), "--format", "csv"],
                          where=f"{s} MB", file_bytes=n, skip_reason=dead.get(sub) or perflint_dead)
            if not r.ok:
                dead[sub] = r.error
        if s in hta_sizes:
            hta_cmd = [hta_py, "-c", HTA_SCRIPT, str(hta_dir(t, workdir))]
            if hta_skip or dead["check"]:
                b.measure(f"hta@{s}", "hta", "HTA load + get_temporal_breakdown", hta_cmd, where=f"{s} MB",
                          file_bytes=n, repeats=hta_repeats, skip_reason=hta_skip)
            else:
                # HTA against perflint check taken side by side, as the other two-run targets:
                # minutes apart, this VM's drift alone moved the ratio by 10%.
                b.measure_pair([
                    dict(key=f"hta@{s}", tool="hta", label="HTA load + get_temporal_breakdown", cmd=hta_cmd,
                         where=f"{s} MB", file_bytes=n),
                    dict(key=f"check.hta@{s}", tool="check", label="perflint check (run alternately with HTA)",
                         cmd=[py, "-m", "perflint", "check", str(t)], where=f"{s} MB", file_bytes=n,
                         ok_rc=check_ok),
                ], hta_repeats)

    gz_n = gz.stat().st_size
    has_isal = subprocess.run([py, "-c", "import isal"], capture_output=True).returncode == 0
    gunzip = dict(key="gunzip", tool="gunzip",
                  label=f"gunzip ({'python-isal' if has_isal else 'zlib'} gzip reader into a reused buffer, "
                        "as perflint decompresses; run in turn with the plain and .gz checks)",
                  cmd=[py, "-c", GUNZIP_SCRIPT, str(gz)], where=f"{small} MB .json.gz", file_bytes=gz_n, warm=[gz])
    # Context for the .gz target: the same file through standalone gzip tools, as whole processes
    # to /dev/null (exec: the measured process is the tool). `gzip -dc` is the decompression the
    # usual reference for gzip decompression (2.5 s per GB); python-isal's `igzip` is the fastest tool here.
    gz_tools = [dict(key=key, tool="gunzip", label=label, where=f"{small} MB .json.gz", file_bytes=gz_n, warm=[gz],
                     cmd=["sh", "-c", f'exec {tool} -dc "$0" >/dev/null', str(gz)])
                for key, tool, label, there in (
                    ("gunzip.gzip", "gzip", "`gzip -dc` to /dev/null (the standard tool)", shutil.which("gzip")),
                    ("gunzip.igzip", f"{shlex.quote(py)} -m isal.igzip",
                     "`python -m isal.igzip -dc` to /dev/null (python-isal's tool)", has_isal))
                if there]
    # The targets that compare two runs take them side by side (measure_pair; HTA's above); the
    # decompression the .gz overhead is held to runs in the same rounds, under the same load.
    pairs = max(PAIRED_REPEATS, a.repeats) if not a.quick else 1
    plain = traces[small]
    gz_specs = [
        dict(key="check.plain", tool="check", label="perflint check (the plain file, run alternately with the .gz)",
             cmd=[py, "-m", "perflint", "check", str(plain)], where=f"{small} MB", file_bytes=plain.stat().st_size,
             ok_rc=check_ok),
        dict(key="check.gz", tool="check", label="perflint check", cmd=[py, "-m", "perflint", "check", str(gz)],
             where=f"{small} MB .json.gz", file_bytes=gz_n, ok_rc=check_ok),
    ]
    def dir_bytes(d: Path) -> int:
        return sum(f.stat().st_size for f in d.glob("*.json"))

    def jobs_pair(prefix: str, d: Path, where: str) -> list[dict]:
        """`perflint check d --jobs 1` and `--jobs 2`, for measure_pair."""
        n = dir_bytes(d)
        return [dict(key=f"{prefix}{j}", tool="check", label=f"perflint check --jobs {j}",
                     cmd=[py, "-m", "perflint", "check", str(d), "--jobs", str(j)], where=where,
                     file_bytes=n, ok_rc=check_ok, sample_tree=True, warm=[d] if j == 1 else [])
                for j in (1, 2)]

    jobs_specs = jobs_pair("jobs", rank_dir, f"{a.ranks}-rank dir")
    rank_bytes = jobs_specs[0]["file_bytes"]
    big_specs = [] if big_rank_dir is None else jobs_pair("bigjobs", big_rank_dir, f"{a.ranks}-rank dir, bigger ranks")
    for specs in (gz_specs, jobs_specs, big_specs):
        if not specs:
            continue
        if dead["check"]:
            for sp in specs:
                b.measure(sp["key"], sp["tool"], sp["label"], sp["cmd"], where=sp["where"],
                          file_bytes=sp["file_bytes"], skip_reason=dead["check"])
        else:
            b.measure_pair(specs + ([gunzip, *gz_tools] if specs is gz_specs else []), pairs)
    if dead["check"]:
        for g in (gunzip, *gz_tools):
            b.measure(g["key"], g["tool"], g["label"], g["cmd"], where=g["where"], file_bytes=g["file_bytes"],
                      warm=g["warm"])
    scaling = cpu_scaling(py)
    log(f"  two CPU-bound Python processes run at {scaling:.2f}x the throughput of one "
        "(the ceiling for any --jobs 2 speedup on this machine)")
    wscaling = work_scaling(py, sorted(rank_dir.glob("*.json")), b.env)
    log(f"  perflint's per-trace work in two forked processes: {_f(wscaling)}x one")
    ident: str | None = None
    for key in ("jobs", "bigjobs"):
        r1, r2 = b.results.get(f"{key}1"), b.results.get(f"{key}2")
        if r1 is None or r2 is None or not r1.ok or not r2.ok:
            continue
        same = (b.logs / f"{key}1.0.out").read_bytes() == (b.logs / f"{key}2.0.out").read_bytes()
        ident = "no" if not same or ident == "no" else "yes"

    return Measured(b, hta_sizes, hta_skip, pairs, rank_bytes, big_specs, scaling, wscaling, ident, load_before)


def report(
    a: argparse.Namespace, inputs: Inputs, m: Measured, hta_py: str, hta_repeats: int, argv: Sequence[str] | None, t_start: float
) -> int:
    """Write BENCHMARKS.md and print the targets."""
    b, py, source, big_source, big_rank_dir = m.bench, a.python, inputs.source, inputs.big_source, inputs.big_rank_dir
    hta_sizes, big_specs, rank_bytes, workdir = m.hta_sizes, m.big_specs, m.rank_bytes, inputs.workdir
    versions = py_versions(py, ["perflint", "orjson", "pysimdjson", "msgspec", "numpy"])
    versions.pop("perflint", None)
    if m.hta_skip == "--skip-hta":
        hta_versions = "skipped (--skip-hta)"
    else:
        hv = py_versions(hta_py, ["HolisticTraceAnalysis", "pandas", "numpy"])
        hta_versions = f"`{hta_py}` — " + ", ".join(f"{k} {v}" for k, v in hv.items())
    src_note = ("HTA test data: A100-80GB rank 0 of 16, 109k events, 6080 kernels, "
                "NCCL + triton, modern Kineto schema; "
                f"{_uncompressed_mb(source):.1f} MB uncompressed")
    if a.source:
        src_note = f"{_uncompressed_mb(source):.1f} MB uncompressed"
    big_note = ""
    if big_rank_dir is not None:
        per_rank = big_specs[0]["file_bytes"] / a.ranks / MB
        big_note = f"`{short(big_source)}`, {per_rank:.0f} MB per rank file against {rank_bytes / a.ranks / MB:.0f} MB"
    above = [s for s in a.size_list if s > 200]
    if a.skip_hta:
        hta_note = "not run (--skip-hta)"
    elif a.hta_1gb or not above:
        hta_note = ", ".join(f"{s} MB" for s in hta_sizes)
    else:
        hta_note = (", ".join(f"{s} MB" for s in hta_sizes) +
                    f" only (not at {', '.join(f'{s} MB' for s in above)}: pass --hta-1gb)")
    meta = {
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "sizes": a.size_list,
        "hta_repeats": hta_repeats,
        "pairs": m.pairs,
        "source": short(source),
        "source_note": src_note,
        "hta_sizes_note": hta_note,
        "hta_ratio_size": min(hta_sizes, key=lambda s: abs(s - 200)),
        "ranks": a.ranks,
        "jobs_identical": m.ident,
        "big_source_note": big_note,
        "cpu_scaling": m.scaling,
        "work_scaling": m.wscaling,
        "machine": machine_info(),
        "versions": versions,
        "perflint_version": perflint_version(py, b.env),
        "hta_versions": hta_versions,
        "argv": fmt_cmd(["python", "benchmarks/run.py", *(argv if argv is not None
                                                          else sys.argv[1:])]),
        "gen_cmds": inputs.gen_cmds,
        "load": (m.load_before, os.getloadavg()[0]),
        "workdir": short(workdir),
    }
    out = a.out if a.out.is_absolute() else (Path.cwd() / a.out)
    rows = write_report(b, out, meta)
    log("")
    log("targets:")
    for name, val, tgt, ver in rows:
        log(f"  {ver:<5} {name}: {val} (target {tgt})")
    log(f"wrote {out}  [{time.perf_counter() - t_start:.0f} s]")
    return 0



if __name__ == "__main__":
    sys.exit(main())
