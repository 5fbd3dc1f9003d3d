"""SARIF 2.1.0 as GitHub code scanning accepts it.

`tool.driver.rules` carries every enabled rule (id, name, short/full description, help as text
and Markdown, default level); each active finding is a result with ruleId/ruleIndex, level,
message, its location and `partialFingerprints` (perflint's own stable fingerprint, so code
scanning tracks a finding across runs). The location is the user's source `file:line` when the
trace recorded stacks and the file is placed in the source tree (`locations.py`), else the trace
file without a region (also when the recorded source names no single file of the tree: it is
then named in the message; code scanning refuses results without a physical location). Suppressed and accepted findings
are kept as results with a `suppressions` entry, as the spec intends, so they stay visible but
closed. The run's properties count the traces checked and the files skipped; each skipped file is
a note among the invocation's toolExecutionNotifications, with its reason. Paths are written
relative to `ReportOptions.root` (`check --source-root`, default the git repository's root), as
code scanning requires; a trace it cannot place, as a file:// URI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from perflint._version import __version__
from perflint.findings import Finding, RunResult
from perflint.report import ReportOptions
from perflint.report._common import SARIF_LEVEL, fmt_value, impact_text, ordered, repo_path, rules_by_code, trace_context
from perflint.report.locations import SourceLocator, Where, locator, source_note, where

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "perflintFingerprint/v2"  # v2: the trace's role is part of the identity


def _uri(path: str, root: str) -> str:
    placed = repo_path(path, root)
    return quote(placed) if placed is not None else Path(path).as_uri()


def _text(s: str) -> str:
    return " ".join(s.split())


def _rule_entry(r: dict[str, Any]) -> dict[str, Any]:
    summary = _text(r.get("summary") or r.get("name") or r["code"])
    rationale = _text(r.get("rationale") or summary)
    fix = (r.get("fix") or "").strip()
    refs = [ref for ref in r.get("references") or [] if isinstance(ref, dict) and ref.get("url")]
    help_text = f"{rationale}\n\nFix: {_text(fix)}" if fix else rationale
    md = [f"**{r['code']} {r.get('name', '')}**: {summary}", "", (r.get("rationale") or summary).strip()]
    if fix:
        md += ["", "**Fix:** " + fix]
    if refs:
        md += ["", "References:"] + [f"- [{ref['title']}]({ref['url']})" for ref in refs]
    entry: dict[str, Any] = {
        "id": r["code"],
        "name": r.get("name") or r["code"],
        "shortDescription": {"text": summary},
        "fullDescription": {"text": rationale},
        "help": {"text": help_text, "markdown": "\n".join(md)},
        "defaultConfiguration": {"level": SARIF_LEVEL.get(r.get("severity", "warning"), "warning")},
        "properties": {"tags": ["performance", *r.get("groups", [])]},
    }
    if refs:
        entry["helpUri"] = refs[0]["url"]
    return entry


def _location(f: Finding, w: Where, root: str) -> dict[str, Any]:
    """The result's location: the placed source line, else the trace file without a region. Code
    scanning rejects a whole upload when one result has no physical location, so a recorded source
    that names no file of the tree falls back to the trace (and is named in the message)."""
    if w.line is not None:
        physical: dict[str, Any] = {"artifactLocation": {"uri": quote(w.path)}, "region": {"startLine": w.line}}
    else:
        physical = {"artifactLocation": {"uri": _uri(f.trace, root)}}
    loc: dict[str, Any] = {"physicalLocation": physical}
    if f.op or f.kernel:
        names = [n for n in (f.op, f.kernel) if n]
        loc["logicalLocations"] = [{"name": n[:1000], "kind": "function"} for n in names]
    return loc


def _result(f: Finding, index: int, root: str, places: SourceLocator) -> dict[str, Any]:
    w = where(f, root, places)
    loc = _location(f, w, root)
    text = f.message
    if f.impact_us:
        text += f" ({impact_text(f)})"
    if w.unplaced is not None:
        text += f" {source_note(w)}"
    if f.source:  # the location is not the trace file: name the trace in the message
        text += f" {trace_context(f)}"
    res: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": SARIF_LEVEL[f.severity],
        "message": {"text": text},
        "locations": [loc],
    }
    res["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    res["properties"] = {
        "trace": f.trace,
        "rank": f.rank,
        "impactUs": f.impact_us,
        "evidence": {k: fmt_value(v, 400) for k, v in f.evidence.items()},
    }
    if f.suppressed is not None:
        res["suppressions"] = [{"kind": "external", "justification": f.suppressed}]
    elif f.accepted is not None:
        res["suppressions"] = [{"kind": "external", "justification": f"accepted: {f.accepted}"}]
    return res


def to_sarif(result: RunResult, root: str | None = None) -> dict[str, Any]:
    root = root or os.getcwd()
    rules = rules_by_code(result)
    places = locator(result, root)
    index = {code: i for i, code in enumerate(rules)}
    notes = [{"level": "error", "message": {"text": e}} for e in result.errors]
    notes += [{"level": "note", "message": {"text": n}} for n in result.notices]
    notes += [{"level": "note", "message": {"text": f"skipped {s.path}: {s.reason}"}} for s in result.skipped]
    invocation: dict[str, Any] = {"executionSuccessful": not result.errors}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {
            "driver": {
                "name": "perflint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_entry(r) for r in rules.values()],
            }
        },
        "invocations": [invocation],
        "results": [_result(f, index[f.code], root, places) for f in ordered(result.all_findings())],
        "columnKind": "unicodeCodePoints",
        "properties": {"tracesChecked": len(result.traces), "filesSkipped": len(result.skipped)},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_sarif(result: RunResult, opts: ReportOptions) -> str:
    return orjson.dumps(to_sarif(result, opts.root), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"
