"""Baselines and accepted findings on disk: snapshot files, and the accepted-findings ratchet."""

from __future__ import annotations

import datetime as dt
import functools
import os
from typing import Any


from perflint.errors import InputError, UsageError
from perflint.facts import Context, load_all
from perflint.facts._snapshot import SNAPSHOT_SCHEMA, snapshot_document, trace_snapshot
from perflint.findings import RunResult
from perflint.model import Trace
from perflint.pipeline import run as run_pipeline

ACCEPTED_SCHEMA = "perflint-accepted"


def _snapshot_of(trace: Trace, include_edge_steps: bool) -> dict[str, Any]:
    load_all()
    return trace_snapshot(Context(trace, include_edge_steps=include_edge_steps))


def build_snapshot(
    paths: list[str], include_edge_steps: bool, fmt: str | None, jobs: int, memory_budget: int | None = None
) -> tuple[dict[str, Any], list[str]]:
    fn = functools.partial(_snapshot_of, include_edge_steps=include_edge_steps)
    outcomes = run_pipeline(paths, fn, fmt, jobs, memory_budget=memory_budget)
    snaps = [o.result for o in outcomes if o.error is None]
    snaps.sort(key=lambda s: (s["rank"] is None, s["rank"] or 0, s["path"]))
    return snapshot_document(snaps), [o.error for o in outcomes if o.error]


def _read_json_doc(path: str) -> Any:
    import orjson  # here, not at start-up: most runs have no baseline

    try:
        with open(path, "rb") as fh:
            return orjson.loads(fh.read())
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON: {exc}") from None


def is_snapshot_file(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as fh:
        head = fh.read(256)
    return SNAPSHOT_SCHEMA.encode() in head


def load_baseline(
    path: str, include_edge_steps: bool, fmt: str | None, jobs: int, memory_budget: int | None = None
) -> dict[str, Any]:
    """A snapshot file, or a trace / directory of traces snapshotted on the fly."""
    if is_snapshot_file(path):
        doc = _read_json_doc(path)
        if not isinstance(doc, dict) or doc.get("schema") != SNAPSHOT_SCHEMA or not isinstance(doc.get("traces"), list):
            raise InputError(path, "not a perflint snapshot (expected schema 'perflint-snapshot')")
        if doc.get("schema_version") != 1:
            raise InputError(path, f"unsupported snapshot schema_version {doc.get('schema_version')!r}")
        return doc
    if not os.path.exists(path):
        raise InputError(path, "baseline not found")
    doc, errors = build_snapshot([path], include_edge_steps, fmt, jobs, memory_budget)
    if errors:
        raise InputError(path, f"cannot use as baseline: {errors[0]}")
    return doc


def write_json(path: str, doc: Any) -> None:
    import orjson

    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if path == "-":
        import sys

        sys.stdout.write(data.decode())
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def accepted_document(result: RunResult, reason: str, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    if not reason.strip():
        raise UsageError("accept", "--reason is required: say why these findings are accepted")
    today = dt.date.today().isoformat()
    entries: dict[str, dict[str, Any]] = {}
    for e in (previous or {}).get("entries", []):
        entries[e["fingerprint"]] = e
    for f in result.all_findings():
        if f.suppressed is not None or f.fingerprint in entries:
            continue
        entries[f.fingerprint] = {
            "fingerprint": f.fingerprint,
            "code": f.code,
            "message": f.message,
            "trace": os.path.basename(f.trace),
            "rank": f.rank,
            "reason": reason,
            "accepted": today,
        }
    return {"schema": ACCEPTED_SCHEMA, "schema_version": 1, "entries": sorted(entries.values(), key=lambda e: (e["code"], e["fingerprint"]))}


def load_accepted(path: str) -> dict[str, Any]:
    doc = _read_json_doc(path)
    if not isinstance(doc, dict) or doc.get("schema") != ACCEPTED_SCHEMA or not isinstance(doc.get("entries"), list):
        raise InputError(path, "not a perflint accepted-findings file (expected schema 'perflint-accepted')")
    for i, e in enumerate(doc["entries"]):
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise InputError(path, f"entries[{i}]: missing 'fingerprint'")
    return doc


def apply_accepted(result: RunResult, doc: dict[str, Any], path: str) -> None:
    """Mark accepted findings; report entries that matched nothing as stale."""
    by_fp = {e["fingerprint"]: e for e in doc["entries"]}
    used: set[str] = set()
    for f in result.all_findings():
        e = by_fp.get(f.fingerprint)
        if e is not None and f.suppressed is None:
            f.accepted = str(e.get("reason") or "accepted")
            used.add(f.fingerprint)
    for fp, e in by_fp.items():
        if fp not in used:
            result.notices.append(
                f"stale accepted finding in {path}: {e.get('code')} {fp} ({e.get('message', '')[:80]}) no longer occurs; remove it"
            )
