"""Measuring: each tool as a whole process (wall time and peak RSS of the process tree), the
machine and versions, and the CPU scaling context that --jobs numbers are read against."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from common import MB, REPO, log, tail
from prepare import _warm_cache

# Tool scripts run with ``python -c SCRIPT PATH``.  Each reads the file itself, so the
# measured process does the same I/O a user's run would.
SIMDJSON_SCRIPT = (
    "import sys, simdjson\n"
    "with open(sys.argv[1], 'rb') as f: data = f.read()\n"
    "doc = simdjson.Parser().parse(data)\n"
)


ORJSON_SCRIPT = (
    "import sys, orjson\n"
    "with open(sys.argv[1], 'rb') as f: data = f.read()\n"
    "doc = orjson.loads(data)\n"
)


# Prints its own decompression time (excludes interpreter start-up): the .gz target is against
# it. Decompression as perflint's reader does it, with the reader's own pieces (not a copy that
# could drift from them): source._gzip_reader (python-isal's C reader where installed) and its
# readinto GZ_STEP_BYTES at a time into one reused buffer (its ring), so no output is
# materialized or faulted in.
GUNZIP_SCRIPT = (
    "import sys, time\n"
    "from perflint.readers.source import GZ_STEP_BYTES, _gzip_reader\n"
    "ring = bytearray(64 << 20)\n"
    "n = 0\n"
    "t = time.perf_counter()\n"
    "g = _gzip_reader(open(sys.argv[1], 'rb'))\n"
    "with memoryview(ring) as mv:\n"
    "    while True:\n"
    "        p = n % len(ring)\n"
    "        k = g.readinto(mv[p : p + min(GZ_STEP_BYTES, len(ring) - p)])\n"
    "        if not k:\n"
    "            break\n"
    "        n += k\n"
    "print('INNER_S=%.6f' % (time.perf_counter() - t))\n"
)


HTA_SCRIPT = (
    "import sys, logging\n"
    "logging.disable(logging.WARNING)\n"
    "from hta.trace_analysis import TraceAnalysis\n"
    "ta = TraceAnalysis(trace_dir=sys.argv[1])\n"
    "df = ta.get_temporal_breakdown(visualize=False)\n"
    "print(df.to_string())\n"
)


@dataclasses.dataclass
class Run:
    wall_s: float
    maxrss_kb: int  # ru_maxrss of the child (largest single process incl. reaped children)
    rc: int
    tree_rss_kb: int = 0  # sampled peak of the summed RSS of the process tree (jobs runs)
    inner_s: float | None = None  # time printed by the tool itself (gunzip)
    timed_out: bool = False


@dataclasses.dataclass
class Result:
    key: str  # e.g. "check@200"
    tool: str
    label: str  # human label
    cmd: list[str]
    where: str = ""  # which input, e.g. "200 MB"
    file_bytes: int = 0
    runs: list[Run] = dataclasses.field(default_factory=list)
    error: str | None = None  # not available / failed, with the reason
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.runs)

    @property
    def wall(self) -> float | None:
        return statistics.median(r.wall_s for r in self.runs) if self.ok else None

    @property
    def rss_mb(self) -> float | None:
        if not self.ok:
            return None
        return statistics.median(r.maxrss_kb for r in self.runs) * 1024 / MB

    @property
    def tree_rss_mb(self) -> float | None:
        if not self.ok or not any(r.tree_rss_kb for r in self.runs):
            return None
        return statistics.median(r.tree_rss_kb for r in self.runs) * 1024 / MB

    @property
    def inner(self) -> float | None:
        vals = [r.inner_s for r in self.runs if r.inner_s is not None]
        return statistics.median(vals) if self.ok and vals else None


# The harness does not spawn the measured tool itself: a child's ru_maxrss starts at the
# peak RSS of the process that forked it (Linux carries the old mm's high-water mark
# across fork + exec), and the harness may have grown.  A tiny fresh interpreter (this
# script) spawns the tool, times it and wait4()s it, and writes {wall, maxrss, rc}.
MEASURE_SCRIPT = (
    "import json, os, sys, time\n"
    "res, cmd = sys.argv[1], sys.argv[2:]\n"
    "t = time.perf_counter()\n"
    "pid = os.posix_spawn(cmd[0], cmd, os.environ)\n"
    "_, st, ru = os.wait4(pid, 0)\n"
    "wall = time.perf_counter() - t\n"
    "with open(res, 'w') as f:\n"
    "    json.dump({'wall': wall, 'maxrss_kb': ru.ru_maxrss,\n"
    "               'rc': os.waitstatus_to_exitcode(st), 'pid': pid}, f)\n"
)


def _tree_rss_kb(root: int, include_root: bool) -> int:
    """Summed RSS of ``root``'s descendants (and root) via /proc/*/task/*/children."""
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            if pid != root or include_root:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * page_kb
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    stack.extend(int(x) for x in f.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_once(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], stdout: Path,
             stderr: Path, timeout: float, sample_tree: bool = False) -> Run:
    """Run ``cmd`` (through MEASURE_SCRIPT) and return its wall time and peak RSS."""
    res_file = stdout.with_suffix(".res.json")
    res_file.unlink(missing_ok=True)
    exe = shutil.which(cmd[0]) or cmd[0]
    launcher = [sys.executable, "-S", "-c", MEASURE_SCRIPT, str(res_file), exe, *cmd[1:]]
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(launcher, cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        peak_tree = 0
        stop = threading.Event()

        def sampler() -> None:
            nonlocal peak_tree
            while not stop.is_set():
                peak_tree = max(peak_tree, _tree_rss_kb(proc.pid, include_root=False))
                stop.wait(0.05)

        th = threading.Thread(target=sampler, daemon=True) if sample_tree else None
        if th:
            th.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        finally:
            stop.set()
            if th:
                th.join()
    try:
        r = json.loads(res_file.read_text())
    except (OSError, ValueError):
        r = {"wall": float("nan"), "maxrss_kb": 0, "rc": proc.returncode or -1}
    inner = None
    try:
        for line in stdout.read_text(errors="replace").splitlines()[-5:]:
            if line.startswith("INNER_S="):
                inner = float(line.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    return Run(wall_s=float(r["wall"]), maxrss_kb=int(r["maxrss_kb"]), rc=int(r["rc"]),
               tree_rss_kb=peak_tree, inner_s=inner, timed_out=timed_out)


def machine_info() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        aff = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        aff = os.cpu_count() or 0
    info["CPUs (usable / os.cpu_count)"] = f"{aff} / {os.cpu_count()}"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["CPU model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory"] = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except (OSError, ValueError):
        pass
    info["OS"] = platform.platform()
    return info


def py_versions(py: str, modules: Sequence[str]) -> dict[str, str]:
    """Version of ``py`` and of the given distributions, asked in that interpreter."""
    script = (
        "import sys, json\n"
        "from importlib import metadata\n"
        "out = {'python': sys.version.split()[0]}\n"
        f"for m in {list(modules)!r}:\n"
        "    try: out[m] = metadata.version(m)\n"
        "    except Exception: out[m] = 'not installed'\n"
        "print(json.dumps(out))\n"
    )
    try:
        p = subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return {"python": f"{py}: not runnable"}


def perflint_version(py: str, env: dict[str, str]) -> str:
    script = "import perflint; print(getattr(perflint, '__version__', '?'))"
    try:
        p = subprocess.run([py, "-c", script], capture_output=True, text=True, cwd=REPO,
                           env=env, timeout=60)
        ver = p.stdout.strip() if p.returncode == 0 else "not importable"
    except (OSError, subprocess.SubprocessError):
        ver = "not importable"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=REPO, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "perflint"],
                               capture_output=True, text=True, cwd=REPO, timeout=10).stdout
        rev = (rev or "no commit") + (" + uncommitted changes" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        rev = "?"
    return f"{ver} (git {rev})"


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        for old in self.logs.iterdir():  # logs of this run only
            if old.is_file():
                old.unlink()
        self.py: str = args.python
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO)] + ([self.env["PYTHONPATH"]] if self.env.get("PYTHONPATH") else []))
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's run has its .pyc files
        self.results: dict[str, Result] = {}
        self._last_skip: str | None = None

    def measure(self, key: str, tool: str, label: str, cmd: list[str], *, where: str,
                file_bytes: int,
                ok_rc: Sequence[int] = (0,), repeats: int | None = None,
                sample_tree: bool = False, warm: Sequence[Path] = (),
                skip_reason: str | None = None) -> Result:
        res = Result(key=key, tool=tool, label=label, cmd=cmd, file_bytes=file_bytes,
                     where=where)
        shown = f"{label} [{where}]"
        self.results[key] = res
        if skip_reason:
            res.error = skip_reason
            said = skip_reason == self._last_skip
            self._last_skip = skip_reason
            log(f"  {shown:<50} skipped: " + ("(same reason)" if said else skip_reason))
            return res
        for p in warm:  # page cache: every repeat reads from memory, not disk
            _warm_cache(p)
        n = repeats or self.args.repeats
        # Discarded warm-up runs: a measurement must not inherit the memory state the previous
        # tool left (on a VM, pages a big process freed are slow to touch again for a while).
        warmups = self.args.warmup
        for i in range(-warmups, n):
            if not self._once(res, i, warmups, sample_tree, ok_rc):
                break
        self._done(res, shown)
        return res

    def measure_pair(self, specs: list[dict], repeats: int) -> list[Result]:
        """Two commands run alternately (A B A B ...) after their warm-ups, for a difference or a
        ratio of the two: on a VM whose speed drifts by 25% over minutes, runs taken side by side
        are compared with each other, not with runs taken minutes apart."""
        results = []
        for sp in specs:
            res = Result(key=sp["key"], tool=sp["tool"], label=sp["label"], cmd=sp["cmd"],
                         file_bytes=sp["file_bytes"], where=sp["where"])
            self.results[sp["key"]] = res
            for p in sp.get("warm", ()):
                _warm_cache(p)
            results.append(res)
        warmups = self.args.warmup
        for sp, res in zip(specs, results):
            for i in range(-warmups, 0):
                if not self._once(res, i, warmups, sp.get("sample_tree", False), sp.get("ok_rc", (0,))):
                    break
        for i in range(repeats):
            for sp, res in zip(specs, results):
                if res.error is None:
                    self._once(res, i, warmups, sp.get("sample_tree", False), sp.get("ok_rc", (0,)))
        for res in results:
            self._done(res, f"{res.label} [{res.where}]")
        return results

    def _once(self, res: Result, i: int, warmups: int, sample_tree: bool, ok_rc: Sequence[int]) -> bool:
        """One run of `res.cmd` (a warm-up when i < 0); False, with res.error, when it failed."""
        safe = res.key.replace("@", "_").replace("/", "_")
        tag = f"warmup{i + warmups}" if i < 0 else str(i)
        out, err = self.logs / f"{safe}.{tag}.out", self.logs / f"{safe}.{tag}.err"
        r = run_once(res.cmd, cwd=REPO, env=self.env, stdout=out, stderr=err,
                     timeout=self.args.timeout, sample_tree=sample_tree)
        if r.timed_out:
            res.error = f"timed out after {self.args.timeout:.0f} s"
            return False
        crashed = b"Traceback (most recent call last)" in err.read_bytes()[-100_000:]
        if r.rc not in ok_rc or (r.rc != 0 and crashed):
            why = tail(err) or tail(out) or "(no output)"
            why = " | ".join(why.splitlines()[-3:])
            res.error = f"not available: exit {r.rc}: {why[-300:]}"
            return False
        if i >= 0:
            res.runs.append(r)
        return True

    def _done(self, res: Result, shown: str) -> None:
        if res.ok:
            rss = f"{res.rss_mb:8.0f} MB"
            log(f"  {shown:<50} {res.wall:8.2f} s {rss}  (n={len(res.runs)})")
        else:
            res.runs.clear()
            log(f"  {shown:<50} {res.error}")


def paired(a: Result | None, b: Result | None, fn: Callable[[float, float], float]) -> float | None:
    """The median of fn(a_i, b_i) over runs taken side by side (measure_pair)."""
    if a is None or b is None or not a.ok or not b.ok or len(a.runs) != len(b.runs):
        return None
    return statistics.median(fn(x.wall_s, y.wall_s) for x, y in zip(a.runs, b.runs))


# Runs of each command in the two side-by-side measurements (at least --repeats).
PAIRED_REPEATS = 9


_SPIN = "import time\nt=time.perf_counter()\nx=0\nfor i in range(6_000_000): x+=i*i\nprint(time.perf_counter()-t)"


# perflint's own per-trace work (read + check with the built-in pack) over the rank files, in one
# warm interpreter: all files in this process, then half each in two forked processes. Unlike the
# pure-Python loop above it moves memory (a 20 MB file is read, scanned and turned into columns),
# so it also shows what the two vCPUs' shared cache and memory cost; nothing of the CLI (start-up,
# rule loading, the pool, pickled results) is in it: the ceiling for --jobs 2 on these files.
_WORK = """import os, sys, time, statistics
from perflint.config import Config
from perflint.selection import select_rules
from perflint.engine.loader import load_rules
from perflint.engine.run import check_trace
from perflint.graph.load import load_trace
active = select_rules(load_rules([]), Config(), None, None, None)
files = sys.argv[1:]
def work(fs):
    for f in fs:
        check_trace(load_trace(f), active)
work(files[:2])
ratios = []
for _ in range(3):
    t = time.perf_counter(); work(files); one = time.perf_counter() - t
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        work(files[1::2]); os._exit(0)
    work(files[0::2]); os.waitpid(pid, 0); two = time.perf_counter() - t
    ratios.append(one / two)
print("RATIO=%.4f" % statistics.median(ratios))
"""


def work_scaling(py: str, files: list[Path], env: dict[str, str]) -> float | None:
    """`_WORK`'s speedup (one process over two), median of 3; None if it failed."""
    r = subprocess.run([py, "-c", _WORK, *map(str, files)], capture_output=True, text=True, env=env, cwd=REPO)
    m = re.search(r"RATIO=([0-9.]+)", r.stdout)
    return float(m.group(1)) if r.returncode == 0 and m else None


def cpu_scaling(py: str, repeats: int = 3) -> float:
    """Throughput of two concurrent CPU-bound Python processes over one, median of `repeats`:
    2 * t(one alone) / t(two at once). 2.0 on two independent cores; less where the vCPUs share a
    physical core or the host is busy (1.45 to 2.06 on the 2-vCPU VM BENCHMARKS.md was measured
    on, minute to minute), which caps any --jobs 2 speedup whatever perflint does."""

    def wall(n: int) -> float:
        t = time.perf_counter()
        procs = [subprocess.Popen([py, "-c", _SPIN], stdout=subprocess.DEVNULL) for _ in range(n)]
        for p in procs:
            p.wait()
        return time.perf_counter() - t

    ratios = []
    for _ in range(repeats):
        one = wall(1)
        two = wall(2)
        ratios.append(2 * one / two)
    return statistics.median(ratios)
