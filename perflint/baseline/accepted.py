"""Accepted findings: the ratchet's file (`perflint accept` writes it, `check --accepted` reads it)
and the marking of a run's findings that it accepts, so that only new ones fail the gate."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any

from perflint.baseline.files import read_json
from perflint.baseline.identity import PATH_FIELDS, RUN_ROLE, legacy_fingerprint, normalize_name
from perflint.errors import InputError, UsageError
from perflint.findings import Finding, RunResult

ACCEPTED_SCHEMA = "perflint-accepted"
ACCEPTED_VERSION = 2  # 1: entries without a trace role (matched by the old fingerprint)


@dataclass
class AcceptStats:
    """What `accepted_document` wrote: entries from this run's findings, traces checked, and
    entries of the previous file kept as they were."""

    accepted: int
    traces: int
    kept: int


def _legacy_fingerprint(f: Finding) -> str:
    # Version 1 hashed a subject's trace path as read, which is the finding's own trace.
    values = [f.trace if k in PATH_FIELDS and f.role != RUN_ROLE else v for k, v in f.subject.items()]
    return legacy_fingerprint(f.code, values, f.rank)


def _same_name(a: str, b: str) -> bool:
    return normalize_name(os.path.basename(a)) == normalize_name(os.path.basename(b))


class _Accepted:
    """The entries of an accepted-findings file, matched against findings: an entry with a role
    by its fingerprint (rule, subject, role, rank); an entry without one (schema version 1) by the
    fingerprint version 1 computed, on a trace whose file name, normalized, is the entry's."""

    def __init__(self, doc: dict[str, Any] | None) -> None:
        self.entries: list[dict[str, Any]] = list((doc or {}).get("entries", []))
        self.by_fp = {e["fingerprint"]: e for e in self.entries if "role" in e}
        self.legacy: dict[str, list[dict[str, Any]]] = {}
        for e in self.entries:
            if "role" not in e:
                self.legacy.setdefault(e["fingerprint"], []).append(e)
        self.used: set[int] = set()

    def match(self, f: Finding) -> dict[str, Any] | None:
        e = self.by_fp.get(f.fingerprint)
        if e is None and self.legacy:
            for old in self.legacy.get(_legacy_fingerprint(f), []):
                if not isinstance(old.get("trace"), str) or _same_name(old["trace"], f.trace):
                    e = old
                    break
        if e is not None:
            self.used.add(id(e))
        return e

    def unused(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if id(e) not in self.used]


def _entry(f: Finding, reason: str, today: str) -> dict[str, Any]:
    return {
        "fingerprint": f.fingerprint,
        "code": f.code,
        "message": f.message,
        "role": f.role,
        "rank": f.rank,
        "subject": f.subject,
        "trace": f.trace,
        "reason": reason,
        "accepted": today,
    }


def _entry_key(e: dict[str, Any]) -> str:
    fp: str = e["fingerprint"]
    return fp if "role" in e else "v1:" + fp


def accepted_document(
    result: RunResult, reason: str, previous: dict[str, Any] | None = None
) -> tuple[dict[str, Any], AcceptStats]:
    """Every unsuppressed finding of `result` as an accepted entry, plus the `previous` file's
    entries this run did not produce, kept as they were. A finding an entry of `previous`
    already accepted keeps that entry's reason and date."""
    if not reason.strip():
        raise UsageError("accept", "--reason is required: say why these findings are accepted")
    today = dt.date.today().isoformat()
    before = _Accepted(previous)
    entries: dict[str, dict[str, Any]] = {}
    for f in result.all_findings():
        if f.suppressed is not None or f.fingerprint in entries:
            continue
        entry = _entry(f, reason, today)
        old = before.match(f)
        if old is not None:
            entry.update(reason=old.get("reason", reason), accepted=old.get("accepted", today))
        entries[f.fingerprint] = entry
    accepted = len(entries)
    kept = [e for e in before.unused() if _entry_key(e) not in entries]
    for e in kept:
        entries[_entry_key(e)] = e
    doc = {
        "schema": ACCEPTED_SCHEMA,
        "schema_version": ACCEPTED_VERSION,
        "entries": sorted(entries.values(), key=lambda e: (str(e.get("code")), str(e.get("role", "")), e["fingerprint"])),
    }
    return doc, AcceptStats(accepted, len(result.traces), len(kept))


def load_accepted(path: str) -> dict[str, Any]:
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != ACCEPTED_SCHEMA or not isinstance(doc.get("entries"), list):
        raise InputError(path, "not a perflint accepted-findings file (expected schema 'perflint-accepted')")
    version = doc.get("schema_version", 1)
    if version not in (1, ACCEPTED_VERSION):
        raise InputError(path, f"unsupported accepted-findings schema_version {version!r} (this perflint reads 1 and 2)")
    for i, e in enumerate(doc["entries"]):
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise InputError(path, f"entries[{i}]: missing 'fingerprint'")
        if "role" in e and not isinstance(e["role"], str):
            raise InputError(path, f"entries[{i}]: 'role' must be a string")
    return doc


def _ran(result: RunResult) -> set[tuple[str, Any, str]]:
    """(role, rank, rule code) of every rule that ran on a trace of this run (or over the run)."""
    out = {(t.role, t.rank, s.code) for t in result.traces for s in t.statuses if s.status != "skipped"}
    out.update((RUN_ROLE, None, s.code) for s in result.run_statuses if s.status != "skipped")
    return out


def apply_accepted(result: RunResult, doc: dict[str, Any], path: str) -> None:
    """Mark accepted findings. An entry that matched nothing is reported stale only when its rule
    ran on its trace in this run: entries of traces not checked now say nothing."""
    accepted = _Accepted(doc)
    for f in result.all_findings():
        if f.suppressed is None:
            e = accepted.match(f)
            if e is not None:
                f.accepted = str(e.get("reason") or "accepted")
    ran = _ran(result)
    names = {(normalize_name(os.path.basename(t.path)), s.code) for t in result.traces for s in t.statuses if s.status != "skipped"}
    for e in accepted.unused():
        if "role" in e:
            stale = (e["role"], e.get("rank"), e.get("code")) in ran
            where = e["role"]
        else:
            trace = e.get("trace")
            stale = isinstance(trace, str) and (normalize_name(os.path.basename(trace)), e.get("code")) in names
            where = str(trace)
        if stale:
            result.notices.append(
                f"stale accepted finding in {path}: {e.get('code')} {e['fingerprint']} on {where} "
                f"({str(e.get('message', ''))[:80]}) no longer occurs; remove it"
            )
    old = sum(1 for e in accepted.entries if "role" not in e)
    if old:
        result.notices.append(
            f"{path}: {old} accepted entr{'y has' if old == 1 else 'ies have'} no trace role (an older perflint wrote "
            "the file): each matches its finding by its old fingerprint on a trace of the same file name; "
            "`perflint accept --merge` rewrites them"
        )
