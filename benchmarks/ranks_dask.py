#!/usr/bin/env python3
"""Benchmark: `perflint check --executor dask` on jobs of 64, 256 and 1024 rank files on a local
dask cluster, against `--jobs` on the same machine.

    python benchmarks/ranks_dask.py                      # build (cached) and measure, write BENCHMARKS.md
    python benchmarks/ranks_dask.py --ranks 64 --no-write

The rank files are tiled from the real ranks 0 and 1 of a 128-rank job (HTA's `trace_filter`
test data): rank i holds the events of real rank i % 2, with `distributedInfo.rank` = i and
`world_size` = N, gzipped, in --workdir (default /tmp/perflint-dask-bench, never in the
repository). Each command runs as a whole process, files in the page cache. The client's own
peak RSS is `getrusage(RUSAGE_SELF)` taken inside the perflint process after its report is
written (a LocalCluster's scheduler runs in that process; its workers are processes of their
own, reported apart: the largest one, and the sampled sum of every process of the run). Target:
the client's peak RSS <= 400 MB at every size, and the same report as `--jobs`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from common import MB, REPO, SHARED, log, write_section
from measure import Run, machine_info, perflint_version, run_once
from prepare import build_job_dir

SOURCES = ("traces/hta/trace_filter/sampled_rank-0.json.gz", "traces/hta/trace_filter/sampled_rank-1.json.gz")
SECTION = "## Many ranks on dask"
CLIENT_RSS_TARGET_MB = 400

# The console script's own entry point (its malloc settings and exit), with the process's peak
# RSS, and its reaped children's, printed on stderr once the report is written. Run as
# `python -c`: a LocalCluster's workers start by spawning, and a spawned process re-imports a
# main script file (without a guard, it would run the check again), never a `-c` script.
CLIENT_SCRIPT = (
    "import resource, sys\n"
    "sys.argv[0] = 'perflint'\n"
    "import perflint.cli as cli\n"
    "_main = cli.main\n"
    "def main(argv=None):\n"
    "    code = _main(argv)\n"
    "    sys.stdout.flush()\n"
    "    me = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    cpu = me.ru_utime + me.ru_stime\n"
    "    print(f'CLIENT_RSS_KB={me.ru_maxrss} CHILDREN_RSS_KB={kids} CLIENT_CPU_S={cpu:.2f}', file=sys.stderr)\n"
    "    return code\n"
    "cli.main = main\n"
    "cli.entry_point()\n"
)

# What one rank's task sends back to the client: its outcomes, pickled as dask sends them.
RESULT_SCRIPT = (
    "import pickle, sys\n"
    "from perflint.options import CheckOptions\n"
    "from perflint.run import run_check\n"
    "_, outcomes = run_check([sys.argv[1]], CheckOptions(jobs=1))\n"
    "print(f'RESULT_BYTES={len(pickle.dumps(outcomes, protocol=5))}')\n"
)


NOTE = (
    "Where the client's memory goes: the interpreter, perflint and its rule pack (about 60 MB), dask's client and the "
    "LocalCluster's scheduler, which runs in the same process (about 30 MB), then per rank its result (about 30 kB pickled; "
    "the strings the ranks' results share, rule codes and names, dict keys, kernel names, are kept once) and its part of "
    "the JSON report (about 78 kB a rank at 1024 ranks, written straight from orjson's bytes, never copied into a str). "
    "No trace reaches the client: a worker reads and checks one rank at a time and sends back its outcome, and the run-level "
    "rules (stragglers, late ranks, pipeline stages) and the collectives' join run on the client over those. "
    "Wall time: the two dask workers do the per-rank work `--jobs 2`'s workers do; dask adds about 4 s to a run (importing "
    "dask, starting the workers, which import perflint at their first rank where forked `--jobs` workers inherit it, and "
    "closing the cluster), and its scheduler and client, in the client process, take about 15 ms of CPU a rank with their "
    "heartbeats (the client CPU column), which on a 2-core machine is taken from the workers; on a real cluster they run "
    "elsewhere."
)


def _client(stderr: Path) -> tuple[float, float, float]:
    """The client's peak RSS, its reaped children's largest (MB), and its CPU time (s)."""
    m = re.search(r"CLIENT_RSS_KB=(\d+) CHILDREN_RSS_KB=(\d+) CLIENT_CPU_S=([0-9.]+)", stderr.read_text(errors="replace"))
    if not m:
        raise SystemExit(f"no CLIENT_RSS_KB line in {stderr}: {stderr.read_text(errors='replace')[-800:]}")
    return int(m.group(1)) * 1024 / MB, int(m.group(2)) * 1024 / MB, float(m.group(3))


def measure(py: str, argv: list[str], logs: Path, tag: str, timeout: float) -> dict[str, float]:
    out, err = logs / f"{tag}.out", logs / f"{tag}.err"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    load = os.getloadavg()[0]  # other work on the machine skews the timings: said in the report
    r: Run = run_once([py, "-c", CLIENT_SCRIPT, *argv], cwd=REPO, env=env, stdout=out, stderr=err, timeout=timeout, sample_tree=True)
    if r.timed_out or r.rc != 0:
        raise SystemExit(f"{tag}: exit {r.rc}{' (timed out)' if r.timed_out else ''}: {err.read_text(errors='replace')[-800:]}")
    own, kids, cpu = _client(err)
    return {"wall": r.wall_s, "client": own, "worker": kids, "tree": r.tree_rss_kb * 1024 / MB, "cpu": cpu, "load": load}


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    for n in args.ranks:
        d = build_job_dir([args.shared / s for s in SOURCES], args.workdir, n)
        files = sorted(d.iterdir())
        for f in files:  # page cache
            f.read_bytes()
        gz = sum(f.stat().st_size for f in files) / MB
        runs: dict[str, list[dict[str, float]]] = {"jobs": [], "dask": []}
        reports = {}
        for i in range(args.repeats):  # alternately, so both see the same machine
            for kind, extra in (("jobs", ["--jobs", str(args.workers)]), ("dask", ["--executor", "dask", "--jobs", str(args.workers)])):
                report = args.workdir / f"report_{kind}_{n}.json"
                argv = ["check", str(d), "--format", "json", "--fail-on", "never", "-o", str(report), *extra]
                m = measure(args.python, argv, logs, f"{kind}{n}.{i}", args.timeout)
                runs[kind].append(m)
                reports[kind] = report.read_bytes()
                log(
                    f"  {n:5d} ranks  {kind:4s}  {m['wall']:7.1f} s  client {m['client']:4.0f} MB, {m['cpu']:5.1f} CPU-s  "
                    f"largest child {m['worker']:4.0f} MB  all processes {m['tree']:5.0f} MB"
                )
        for kind, ms in runs.items():
            rows.append(
                {
                    "ranks": n,
                    "gz_mb": gz,
                    "kind": kind,
                    "n": len(ms),
                    **{k: statistics.median(m[k] for m in ms) for k in ("wall", "client", "worker", "tree", "cpu")},
                    "same": reports["jobs"] == reports["dask"],
                    "loads": [m["load"] for m in ms],
                    "spread": max(m["wall"] for m in ms) / min(m["wall"] for m in ms),
                }
            )
    return rows


def _rank_sizes(args: argparse.Namespace) -> tuple[float, float, int]:
    """One rank file's size (compressed, JSON) and what its task brings back."""
    d = build_job_dir([args.shared / s for s in SOURCES], args.workdir, min(args.ranks))
    f = d / "rank0.json.gz"
    with gzip.open(f, "rb") as g:
        raw = len(g.read())
    p = subprocess.run([args.python, "-c", RESULT_SCRIPT, str(f)], capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    m = re.search(r"RESULT_BYTES=(\d+)", p.stdout)
    if not m:
        raise SystemExit(f"result size: {p.stderr[-800:]}")
    return f.stat().st_size / MB, raw / MB, int(m.group(1))


def table(args: argparse.Namespace, rows: list[dict[str, object]]) -> str:
    gz, raw, back = _rank_sizes(args)
    info = machine_info()
    load = os.getloadavg()[0]
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [
        SECTION,
        "",
        f"Generated by `benchmarks/ranks_dask.py` on {when} ({info.get('CPUs (usable / os.cpu_count)', '?')} CPUs, "
        f"{info.get('memory', '?')}, 1-minute load average {load:.1f} at the end; perflint {perflint_version(args.python, dict(os.environ, PYTHONPATH=str(REPO)))}).",
        f"Rank files: HTA's `trace_filter` ranks 0 and 1 of a 128-rank job tiled to N ranks (rank i holds real rank i % 2's events, "
        f"`distributedInfo.rank` = i, `world_size` = N), {gz:.2f} MB each gzipped, {raw:.2f} MB of JSON. "
        f"What one rank's task brings back to the client (its outcome pickled: findings, rule statuses, headline numbers, "
        f"the rank's row for the run-level rules and its collectives for the join): {back / 1e3:.0f} kB, "
        f"{back / (raw * MB):.1%} of the rank's JSON.",
        f"`--executor dask` starts a LocalCluster of {args.workers} worker processes (one thread each); `--jobs {args.workers}` forks "
        f"{args.workers} worker processes. Run alternately, {args.repeats} time(s) each, median; the JSON report of each run is compared "
        "with the other's.",
        "",
        "| ranks | files MB (gz) | command | wall s | client peak RSS MB | client CPU s | largest worker process MB | all processes MB (sampled) | report identical |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        cmd = f"--executor dask --jobs {args.workers}" if r["kind"] == "dask" else f"--jobs {args.workers}"
        lines.append(
            f"| {r['ranks']} | {r['gz_mb']:.0f} | `check {cmd}` | {r['wall']:.1f} | {r['client']:.0f} | {r['cpu']:.1f} | {r['worker']:.0f} | {r['tree']:.0f} | "
            f"{'yes' if r['same'] else 'NO'} |"
        )
    dask_rows = [r for r in rows if r["kind"] == "dask"]
    worst = max(float(r["client"]) for r in dask_rows)  # type: ignore[arg-type]
    lines += [
        "",
        "| target | value | verdict |",
        "|---|---:|---|",
        f"| dask client peak RSS, largest job ({max(int(r['ranks']) for r in dask_rows)} ranks), <= {CLIENT_RSS_TARGET_MB} MB | {worst:.0f} MB | "  # type: ignore[call-overload]
        f"{'PASS' if worst <= CLIENT_RSS_TARGET_MB else 'FAIL'} |",
        f"| dask report identical to --jobs at every size | {'yes' if all(r['same'] for r in dask_rows) else 'no'} | "
        f"{'PASS' if all(r['same'] for r in dask_rows) else 'FAIL'} |",
        "",
        NOTE + " " + _noise(rows),
        "",
        "Command:",
        "",
        "```",
        f"python benchmarks/ranks_dask.py --ranks {','.join(map(str, args.ranks))} --repeats {args.repeats} --workers {args.workers}",
        "```",
        "",
        "Each measured run is `python -c \"$CLIENT\" check $W/jobN --format json --fail-on never -o REPORT` plus `--jobs 2` or "
        "`--executor dask --jobs 2`, where `$CLIENT` runs perflint's console entry point and prints `getrusage(RUSAGE_SELF)` and "
        "`getrusage(RUSAGE_CHILDREN)` after the report is written (`benchmarks/ranks_dask.py: CLIENT_SCRIPT`).",
        "",
    ]
    return "\n".join(lines)


def _noise(rows: list[dict[str, object]]) -> str:
    """What the machine's other work did to the timings: the load before the runs, and how far
    apart one command's runs were."""
    loads = [float(x) for r in rows for x in r["loads"]]  # type: ignore[attr-defined]
    text = f"1-minute load average before each run: {min(loads):.1f} to {max(loads):.1f} (2 CPUs)"
    spread = max(float(r["spread"]) for r in rows)  # type: ignore[arg-type]
    if int(rows[0]["n"]) > 1:  # type: ignore[call-overload]
        text += f"; one command's runs were up to {spread:.2f}x apart"
    return text + "."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=lambda s: [int(x) for x in s.split(",")], default=[64, 256, 1024], help="job sizes (default 64,256,1024)")
    ap.add_argument("--workers", type=int, default=2, help="dask workers / --jobs (default 2)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each command per size (default 1)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/perflint-dask-bench"), help="where the rank files go")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared/ directory (default $PERFLINT_SHARED, else <repo>/../shared)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for perflint (default: this one)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run (default 3600)")
    ap.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    ap.add_argument("--no-write", action="store_true", help="print the section, leave BENCHMARKS.md alone")
    ap.add_argument("--clean", action="store_true", help="remove the rank files afterwards")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    text = table(args, run(args))
    print(text)
    if not args.no_write:
        write_section(args.out, SECTION, text)
    if args.clean:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
