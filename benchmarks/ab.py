"""`perflint check` of one trace at an earlier commit (A) and at the working tree (B), in
alternating whole-process runs, so both sides see the same machine noise.

    python benchmarks/ab.py --base REV --trace FILE [--repeats 4] [--out FILE.md]

A is a `git worktree` of REV in a temporary directory, with its native extensions built in place
(the same build hook a wheel runs); both sides run this interpreter with PYTHONPATH naming their
tree. Per run: wall seconds and peak RSS (`os.wait4`). Prints a Markdown table and the ratio of the
medians; `--out` appends it to a file (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, log, short


def _run(tree: Path, trace: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "perflint", "check", trace, "--fail-on", "never"]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tree)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {tree}")
    return wall, ru.ru_maxrss * 1024 / 1e6  # ru_maxrss is KiB: MB of 10^6 bytes, as the file size


def _build(tree: Path) -> None:
    """The tree's C speed-ups (perflint/**/_*.c) compiled in place, as the install's build hook
    compiles them; one that fails leaves that part in pure Python, as an install would."""
    from setuptools import Distribution, Extension

    for src in sorted(tree.glob("perflint/**/_*.c")):
        name = ".".join(src.relative_to(tree).with_suffix("").parts)
        dist = Distribution({"name": name, "ext_modules": [Extension(name, [str(src.relative_to(tree))], extra_compile_args=["-O2"])]})
        cmd = dist.get_command_obj("build_ext")
        cmd.inplace = True  # type: ignore[attr-defined]
        cwd = os.getcwd()
        try:
            os.chdir(tree)
            cmd.ensure_finalized()
            cmd.run()
        except Exception as exc:  # noqa: BLE001 - a speed-up only
            log(f"{name} not built ({exc}): that part runs in pure Python")
        finally:
            os.chdir(cwd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the earlier commit (A)")
    ap.add_argument("--trace", required=True, help="the trace both sides check")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--out", default=None, help="append the table to this file")
    args = ap.parse_args()
    trace = str(Path(args.trace).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO, check=True, capture_output=True)
        try:
            _build(base)
            _run(base, trace), _run(REPO, trace)  # warm-up: the file in the page cache, both trees compiled
            got: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
            for i in range(args.repeats):
                for side, tree in (("A", base), ("B", REPO)):
                    got[side].append(_run(tree, trace))
                    log(f"run {i + 1} {side}: {got[side][-1][0]:.2f} s, {got[side][-1][1]:.0f} MB")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False, capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    size = os.path.getsize(trace) / 1e6
    med = {s: statistics.median(w for w, _ in v) for s, v in got.items()}
    rss = {s: max(r for _, r in v) for s, v in got.items()}
    lines = [
        f"`perflint check {short(trace) if not short(trace).startswith('..') else trace}` ({size:.0f} MB), {args.repeats} alternating runs after a warm-up, "
        f"{_dt.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores:",
        "",
        "| side | wall s (each run) | median s | peak RSS MB | RSS / file |",
        "|---|---|---:|---:|---:|",
    ]
    for side, label in (("A", f"A: {args.base}"), ("B", f"B: {rev} + working tree")):
        runs = ", ".join(f"{w:.2f}" for w, _ in got[side])
        lines.append(f"| {label} | {runs} | {med[side]:.2f} | {rss[side]:.0f} | {rss[side] / size:.2f}x |")
    lines += ["", f"B / A wall (medians): {med['B'] / med['A']:.2f}", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
