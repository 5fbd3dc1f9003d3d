"""Helpers every report shares: ordering, verdict, counts and number formatting.

All reports order findings the same way (most severe first, then most recoverable time), so the
text, Markdown, SARIF, JUnit, JSON and annotation views of one run agree on what matters most.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path, PurePosixPath
from typing import Any

from perflint.errors import NOTHING_TO_CHECK
from perflint.findings import SEVERITY_RANK, Finding, RunResult
from perflint.units import fmt_duration, plural

SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def verdict(result: RunResult) -> str:
    """'error' when a trace, config or rule could not be used (exit 2), else the gate's verdict."""
    if result.errors:
        return "error"
    return "failed" if result.gate_failed() else "passed"


def full_counts(result: RunResult) -> dict[str, int]:
    """Active findings per severity plus the suppressed and accepted ones (not gated)."""
    counts = result.counts()
    every = result.all_findings()
    counts["suppressed"] = sum(1 for f in every if f.suppressed is not None)
    counts["accepted"] = sum(1 for f in every if f.suppressed is None and f.accepted is not None)
    counts["traces"] = len(result.traces)
    counts["skipped"] = len(result.skipped)
    return counts


def impact_text(f: Finding) -> str:
    """How much the finding's fix saves, in words: per step from the step model ("~38 ms per step:
    step 176 ms -> 138 ms", and where the fix saves more GPU time than the step waits on, "; 66 ms
    of GPU time"), else the time over the trace ("~4.2 ms recoverable"); "" without one."""
    if not f.impact_us:
        return ""
    saved, step = f.evidence.get("step_saving_per_step_us"), f.evidence.get("step_us")
    if isinstance(saved, (int, float)) and isinstance(step, (int, float)) and step > 0:
        per = f.evidence.get("saving_per") or "step"
        text = f"~{fmt_us(saved)} per {per}: {per} {fmt_us(step)} -> {fmt_us(max(0.0, step - saved))}"
        gpu = f.evidence.get("gpu_time_saved_us")
        if isinstance(gpu, (int, float)) and gpu > 1.1 * f.impact_us:
            text += f"; {fmt_us(gpu * saved / f.impact_us)} of GPU time"
        return text
    return f"~{fmt_us(f.impact_us)} recoverable"


def order_key(f: Finding) -> tuple[Any, ...]:
    # Stable: ties on severity and impact fall back to identity fields, never to input order.
    return (-SEVERITY_RANK.get(f.severity, 0), -(f.impact_us or 0.0), f.code, f.trace, f.rank or 0, f.fingerprint)


def ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=order_key)


def location_label(f: Finding) -> str:
    return f.trace if f.rank is None else f"{f.trace} [rank {f.rank}]"


def fmt_us(x: float | None) -> str:
    """A duration in µs as the findings' messages write it (unit by magnitude); '-' when unknown."""
    return "-" if x is None else fmt_duration(x)


def fmt_value(v: Any, limit: int = 120) -> str:
    """Evidence values as short, deterministic text."""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            text = str(v)
        elif v.is_integer() and abs(v) < 1e15:
            text = str(int(v))
        else:
            text = f"{v:.1f}" if abs(v) >= 100 else f"{v:.4g}"
    else:
        text = str(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def rules_by_code(result: RunResult) -> dict[str, dict[str, Any]]:
    """Metadata of every rule the run mentions: the enabled ones, plus any a finding names."""
    out: dict[str, dict[str, Any]] = {r["code"]: r for r in result.rules if "code" in r}
    for f in result.all_findings():
        out.setdefault(f.code, {"code": f.code, "name": f.name, "severity": f.severity, "summary": f.name, "fix": f.fix})
    statuses = [s for t in result.traces for s in t.statuses] + list(result.run_statuses)
    for s in statuses:
        out.setdefault(s.code, {"code": s.code, "name": s.name, "severity": s.severity, "summary": s.name})
    return dict(sorted(out.items()))


def counts_line(result: RunResult) -> str:
    c = full_counts(result)
    parts = [plural(c["error"], "error"), plural(c["warning"], "warning"), f"{c['info']} info"]
    tail = [plural(len(result.traces), "trace")]
    unreadable = sum(NOTHING_TO_CHECK not in e for e in result.errors)
    if unreadable:
        tail.append(f"{unreadable} unreadable")
    if result.skipped:
        tail.append(f"{plural(len(result.skipped), 'file')} skipped")
    if c["suppressed"]:
        tail.append(f"{c['suppressed']} suppressed")
    if c["accepted"]:
        tail.append(f"{c['accepted']} accepted")
    return f"{', '.join(parts)} in {', '.join(tail)}"


def skipped_by_reason(result: RunResult) -> list[tuple[str, list[str]]]:
    """The files a directory scan passed over, grouped by reason (most files first)."""
    groups: dict[str, list[str]] = {}
    for s in result.skipped:
        groups.setdefault(s.reason, []).append(s.path)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def repo_path(path: str, root: str) -> str | None:
    """`path` as code hosts place it: POSIX, relative to the repository root `root`.

    A relative path that exists from the working directory (which may be below the root) is
    re-based onto the root; other relative paths are kept as given. An absolute path outside the
    root (a trace checked out elsewhere, /home/ci/work/repo/traces/t.json) is matched by its
    longest tail that exists under the root. None when nothing places an absolute path. (Recorded
    source files are placed by `locations.py`, which also searches the tree.)"""
    return _repo_path(path, root, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _repo_path(path: str, root: str, cwd: str) -> str | None:
    p = path.replace("\\", "/")
    root_p = Path(root).resolve()
    if not os.path.isabs(p):
        here = Path(cwd) / p
        if here.exists():
            try:
                return here.resolve().relative_to(root_p).as_posix()
            except ValueError:
                pass
        return str(PurePosixPath(p)).removeprefix("./")
    try:
        return Path(p).resolve().relative_to(root_p).as_posix()
    except ValueError:
        pass
    parts = PurePosixPath(p).parts[1:]
    for i in range(len(parts)):
        tail = PurePosixPath(*parts[i:])
        if (root_p / tail).is_file():
            return tail.as_posix()
    return None


def trace_context(f: Finding) -> str:
    """The trace (and rank) a finding came from, for a message whose location is the source line."""
    return f"[trace: {f.trace}{'' if f.rank is None else f' rank {f.rank}'}]"
