"""What the rule tests on real traces share: `perflint check` run through main() with its JSON report
read back, and a trace's raw JSON read with plain json/gzip, independently of perflint's reader."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from typing import Any

import pytest

from perflint.cli import main


def check_json(paths: list[str], codes: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The JSON report of `perflint check` on these paths with only these rules selected."""
    rc = main(["check", *paths, "--select", codes, "--format", "json", "--fail-on", "never", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)  # type: ignore[no-any-return]


def all_findings(path: str, codes: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """Every finding on the traces one path holds."""
    return [f for t in check_json([path], codes, capsys)["traces"] for f in t["findings"]]


def only_trace(path: str, codes: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The report's one trace (fails unless the path holds exactly one)."""
    (t,) = check_json([path], codes, capsys)["traces"]
    return t  # type: ignore[no-any-return]


def of_code(t: dict[str, Any], code: str) -> list[dict[str, Any]]:
    """One trace's findings of one rule."""
    return [f for f in t["findings"] if f["code"] == code]


def findings_of(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    """A report's findings of one rule, per trace and run-level."""
    fs = [f for t in doc["traces"] for f in t["findings"]] + doc["run_findings"]
    return [f for f in fs if f["code"] == code]


def statuses_of(doc: dict[str, Any], code: str) -> list[str]:
    """A report's statuses of one rule, per trace and run-level."""
    ss = [s for t in doc["traces"] for s in t["statuses"]] + doc["run_statuses"]
    return [s["status"] for s in ss if s["code"] == code]


@lru_cache(maxsize=8)
def raw(path: str) -> tuple[dict[str, Any], ...]:
    """The trace's top-level keys other than traceEvents, then its events (cached: tests reread traces)."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    meta = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    return (meta, *events)


def events(path: str) -> list[dict[str, Any]]:
    return list(raw(path)[1:])


def raw_step_busy(path: str) -> list[float]:
    """Busy % per analysis step straight from the JSON: kernels linked to their launch by
    correlation, assigned to the step containing the launch, union clipped to the step window.
    A window runs from max(CPU start, previous window's end) to max(CPU end, end of the device
    work launched in the step), over every step, edge steps included."""
    with gzip.open(path) as fh:
        ev = json.load(fh)["traceEvents"]
    first: dict[str, tuple[float, float]] = {}  # one record per step (several threads annotate it)
    for e in sorted((e for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"]):
        first.setdefault(e["name"], (e["ts"], e["ts"] + e["dur"]))
    every = sorted(first.values())
    launch = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}

    def launched(cats: tuple[str, ...]) -> list[tuple[float, float, float]]:
        return [(e["ts"], e["ts"] + e["dur"], launch.get(e["args"].get("correlation"), e["ts"])) for e in ev if e.get("cat") in cats]

    kernels = launched(("Kernel", "kernel"))
    work = kernels + launched(("Memcpy", "Memset", "gpu_memcpy", "gpu_memset"))
    windows, prev = [], every[0][0]
    for cpu_lo, cpu_hi in every:
        lo = max(prev, cpu_lo)
        prev = max([cpu_hi, lo] + [b for _, b, l in work if cpu_lo <= l <= cpu_hi])
        windows.append((cpu_lo, cpu_hi, lo, prev))
    windows = windows[1:-1] if len(windows) > 2 else windows
    rec = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in ev if e.get("ph") == "X" and not str(e.get("name", "")).startswith("ProfilerStep#")]
    r_hi = max(b for _, b in rec)
    windows = [(cl, ch, lo, max(lo, min(hi, r_hi))) for cl, ch, lo, hi in windows]
    out = []
    for cpu_lo, cpu_hi, lo, hi in windows:
        mine = sorted((a, b) for a, b, l in kernels if cpu_lo <= l <= cpu_hi)
        busy, cur_a, cur_b = 0.0, None, None
        for a, b in mine:
            a, b = max(a, lo), min(b, hi)
            if b <= a:  # outside the window
                continue
            if cur_b is None or a > cur_b:
                busy += 0 if cur_b is None else cur_b - cur_a
                cur_a, cur_b = a, b
            else:
                cur_b = max(cur_b, b)
        busy += 0 if cur_b is None else cur_b - cur_a
        out.append(100 * busy / (hi - lo))
    return out
