"""The labelled corpus: for every real trace in ../shared/traces and fixtures/{gpu,cpu}, the findings
that must fire and those that must not, written after reading the raw trace (one YAML file per
trace; `skipped.yaml` for the files a scan must list as skipped; `run.yaml` for run-level findings).

A label file:
    trace: shared/<path under ../shared/traces> | fixtures/<path>
    reads: what the raw trace holds, in words
    fire:        every warning or error the check must report, each matched once:
      - {rule, severity, subject: {field: value, ...}, impact_at_most_us?, ranks?, why}
      (`ranks`: the ranks of a multi-rank file the label holds for; default every rank)
    not_fire:    findings (any severity) that must not appear, e.g. a false positive seen once:
      - {rule, severity?, kernel_contains?, why}

`match` compares a check's JSON report with the labels; tests/rules/test_labels.py fails on any
difference, and `python -m tests.labels.score` prints precision and recall per rule.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import SHARED

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TRACES = (SHARED / "traces").resolve()
CHECKED = ("fixtures/gpu", "fixtures/cpu")  # besides the corpus; fixtures/rules has its own cases
GATE = ("error", "warning")


def key_of(path: str) -> str:
    """A report's trace path as labels name it."""
    p = Path(path).resolve()
    try:
        return "shared/" + p.relative_to(TRACES).as_posix()
    except ValueError:
        return p.relative_to(ROOT).as_posix()


def load() -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, Any]]:
    """(labels per trace key, skipped file key -> reason piece, run-level labels)."""
    labels: dict[str, dict[str, Any]] = {}
    for f in sorted(HERE.glob("*.yaml")):
        if f.name in ("skipped.yaml", "run.yaml"):
            continue
        doc = yaml.safe_load(f.read_text())
        labels[doc["trace"]] = doc
    skipped = yaml.safe_load((HERE / "skipped.yaml").read_text())["skipped"]
    run = yaml.safe_load((HERE / "run.yaml").read_text())
    return labels, skipped, run


def _subject_ok(label: dict[str, Any], finding: dict[str, Any]) -> bool:
    subject = finding.get("subject") or {}
    for k, v in (label.get("subject") or {}).items():
        got = subject.get(k)
        if k == "path" and isinstance(got, str) and isinstance(v, str):
            if not (got == v or got.endswith("/" + v) or v.endswith(got)):
                return False
        elif got != v:
            return False
    return True


def _kernels(finding: dict[str, Any]) -> list[str]:
    out = [finding.get("kernel") or "", finding.get("message") or ""]
    out += [str(i.get("kernel") or "") for i in finding.get("evidence", {}).get("top_items", []) or []]
    return out


@dataclass
class Verdict:
    """One trace (or the run) checked against its labels."""

    key: str
    matched: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (label, finding)
    missed: list[dict[str, Any]] = field(default_factory=list)  # labels nothing matched
    unexpected: list[dict[str, Any]] = field(default_factory=list)  # gate findings no label expects
    forbidden: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (not_fire label, finding)
    too_big: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # impact over the label's cap

    @property
    def ok(self) -> bool:
        return not (self.missed or self.unexpected or self.forbidden or self.too_big)

    def problems(self) -> list[str]:
        out = [f"{self.key}: missed {lb['rule']} {lb['severity']} {lb.get('subject', {})}" for lb in self.missed]
        out += [f"{self.key}: unexpected {f['code']} {f['severity']}: {f['message']}" for f in self.unexpected]
        out += [f"{self.key}: must not fire {lb['rule']}: {f['message']}" for lb, f in self.forbidden]
        out += [f"{self.key}: {f['code']} impact {f['impact_us']:.0f} us > {lb['impact_at_most_us']} us" for lb, f in self.too_big]
        return out


def match(key: str, labels: dict[str, Any], findings: list[dict[str, Any]], rank: int | None = None) -> Verdict:
    v = Verdict(key)
    gate = [f for f in findings if f["severity"] in GATE]
    free = list(range(len(gate)))
    fire = [lb for lb in labels.get("fire") or [] if rank is None or "ranks" not in lb or rank in lb["ranks"]]
    # The most specific labels first, so a label without a subject cannot take another's finding.
    for lb in sorted(fire, key=lambda lb: -len(lb.get("subject") or {})):
        hit = next((i for i in free if gate[i]["code"] == lb["rule"] and gate[i]["severity"] == lb["severity"]
                    and _subject_ok(lb, gate[i])), None)  # fmt: skip
        if hit is None:
            v.missed.append(lb)
            continue
        free.remove(hit)
        v.matched.append((lb, gate[hit]))
        cap = lb.get("impact_at_most_us")
        if cap is not None and (gate[hit].get("impact_us") or 0.0) > cap:
            v.too_big.append((lb, gate[hit]))
    v.unexpected = [gate[i] for i in free]
    for lb in labels.get("not_fire") or []:
        for f in findings:
            if f["code"] != lb["rule"] or ("severity" in lb and f["severity"] != lb["severity"]):
                continue
            if "kernel_contains" in lb and not any(lb["kernel_contains"] in k for k in _kernels(f)):
                continue
            v.forbidden.append((lb, f))
    return v


def check_report(report: dict[str, Any]) -> tuple[list[Verdict], list[str]]:
    """Every trace of a check's JSON report against its labels; also the coverage problems
    (a trace without labels, labels without a trace, wrong skips)."""
    labels, skipped, run = load()
    verdicts: list[Verdict] = []
    problems: list[str] = []
    seen: set[str] = set()
    for t in report["traces"]:
        k = key_of(t["path"])
        seen.add(k)
        if k not in labels:
            problems.append(f"{k}: checked, but has no label file")
            continue
        verdicts.append(match(k, labels[k], t["findings"], t.get("rank")))
    for k in sorted(set(labels) - seen):
        problems.append(f"{k}: labelled, but not checked")
    got_skips = {key_of(s["path"]): s["reason"] for s in report.get("skipped", []) if not s["path"].endswith(".md")}
    for k, why in skipped.items():
        if k not in got_skips:
            problems.append(f"{k}: must be skipped ({why}), was not")
        elif why not in got_skips[k]:
            problems.append(f"{k}: skipped as '{got_skips[k]}', expected '{why}'")
    problems += [f"{k}: skipped ({why}) but not labelled as skipped" for k, why in got_skips.items() if k not in skipped]
    problems += [f"error: {e}" for e in report.get("errors", [])]
    verdicts.append(match("(run)", run, report.get("run_findings", [])))
    return verdicts, problems


def scores(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """Per rule: true positives, false positives (unexpected or forbidden gate findings, by
    severity) and misses."""
    out: dict[str, Counter[str]] = {}
    for v in verdicts:
        for lb, _ in v.matched:
            out.setdefault(lb["rule"], Counter())["tp"] += 1
        for lb in v.missed:
            out.setdefault(lb["rule"], Counter())["fn"] += 1
        for f in v.unexpected:
            out.setdefault(f["code"], Counter())[f"fp_{f['severity']}"] += 1
        for _, f in v.forbidden:
            if f["severity"] in GATE and f not in v.unexpected:
                out.setdefault(f["code"], Counter())[f"fp_{f['severity']}"] += 1
    return {k: dict(c) for k, c in sorted(out.items())}


def check_paths() -> list[str]:
    return [str(TRACES), *(os.path.join(str(ROOT), c) for c in CHECKED)]


__all__ = ["CHECKED", "TRACES", "Verdict", "check_paths", "check_report", "key_of", "load", "match", "scores"]
