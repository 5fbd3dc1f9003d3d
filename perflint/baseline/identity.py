"""What stays the same across runs: which finding is which, and whether two runs ran on the same
device and software stack.

A finding's identity is its rule, its subject, the role of its trace and the trace's rank.

The subject is what the rule's fact source declares a row's key (op stack, kernel, shapes, source
line, ...), never times or counts. A trace's ROLE is its path relative to the checked root (the
directory or archive named on the command line; a file named there is its own base name), with the parts
of profiler file names that change from run to run (host, pid, timestamp) replaced by `*`, so the
next run's file of the same rank or worker keeps its identity. A subject field naming a trace
file (`path`) holds that file's role, not its name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from perflint.model import Trace
from perflint.readers.archive import SEP

RUN_ROLE = "(all ranks)"  # the role of run-level (multi-rank) findings
PATH_FIELDS = frozenset({"path"})  # subject fields that name a trace file

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# Custom worker names that end in _N name a rank or device, not a host and pid.
_WORKER_WORDS = re.compile(r"(?i)^(?:local_?)?(?:rank|worker|gpu|device|node|proc(?:ess)?)$")
_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    # HTA / internal tooling: rank-N.Mon_DD_HH_MM_SS.PID.pt.trace.json
    (
        re.compile(rf"^(?P<head>.+)\.{_MONTH}_\d\d_\d\d_\d\d_\d\d\.\d+(?P<tail>\.pt\.trace\.json)$"),
        lambda m: f"{m['head']}.*.*{m['tail']}",
    ),
    # torch.profiler.tensorboard_trace_handler: {worker_name}.{time in ms or ns}.pt.trace.json,
    # worker_name defaulting to {hostname}_{pid}.
    (
        re.compile(r"^(?P<worker>.+)\.\d{10,}(?P<tail>\.pt\.trace\.json)$"),
        lambda m: f"{_worker(m['worker'])}.*{m['tail']}",
    ),
    # PyTorch benchmark scripts: benchmark_result_PID_TIMESTAMP_trace.json
    (re.compile(r"^(?P<head>.*?)_\d+_\d{9,}(?P<tail>_trace\.json)$"), lambda m: f"{m['head']}_*_*{m['tail']}"),
    # libkineto's own default output: libkineto_activities_PID.json
    (re.compile(r"^(?P<head>libkineto_activities)_\d+(?P<tail>\.json)$"), lambda m: f"{m['head']}_*{m['tail']}"),
)


def _worker(name: str) -> str:
    host, sep, pid = name.rpartition("_")
    if sep and host and pid.isdigit() and not _WORKER_WORDS.match(host):
        return "*_*"
    return name


def normalize_name(name: str) -> str:
    """A trace file's base name with its host, pid and timestamp parts as `*`, and without `.gz`
    (the same trace, compressed or not, keeps its identity)."""
    base = name.removesuffix(".gz")
    for pattern, repl in _PATTERNS:
        m = pattern.match(base)
        if m:
            return repl(m)
    return base


def trace_role(path: str, roots: Iterable[str]) -> str:
    """The role of the trace at `path`, found under one of `roots` (the paths named on the command
    line, as discovery joined them): its relative path there, else its base name; the file name
    normalized (`normalize_name`), directories kept."""
    p = path.replace(os.sep, "/")
    for root in roots:
        r = root.replace(os.sep, "/").rstrip("/")  # "/" becomes "", whose prefix is "/"
        # An archive named there is a directory of members: `run.tgz!/rank0/a.json` has the
        # role that `run/rank0/a.json` has under the directory `run`.
        under = next((r + sep for sep in ("/", SEP) if p.startswith(r + sep)), None) if root else None
        if under is not None:
            head, _, base = p[len(under) :].rpartition("/")
            return f"{head}/{normalize_name(base)}" if head else normalize_name(base)
    return normalize_name(p.rpartition("/")[2])


def subject(key: Iterable[str], row: Mapping[str, Any], roles: Mapping[str, str]) -> tuple[Any, ...]:
    """A row's subject: its key fields' values, a trace path replaced by that trace's role
    (`roles`, else its normalized base name)."""
    out: list[Any] = []
    for k in key:
        v = row.get(k)
        if k in PATH_FIELDS and isinstance(v, str):
            v = roles.get(v) or normalize_name(os.path.basename(v))
        out.append(v)
    return tuple(out)


def _canonical(value: Any) -> bytes:
    # numpy scalars and tuples encode as their plain JSON values: the same subject, however built.
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def fingerprint(code: str, subject_values: Iterable[Any], role: str, rank: int | None) -> str:
    """Stable identity of a finding: rule code, subject, trace role and rank (never times)."""
    h = hashlib.sha1(b"perflint-finding/2")
    for part in (code, role, "" if rank is None else str(rank)):
        h.update(b"\x1f" + part.encode())
    for v in subject_values:
        h.update(b"\x1e" + _canonical(v))
    return h.hexdigest()[:20]


def legacy_fingerprint(code: str, subject_values: Iterable[Any], rank: int | None) -> str:
    """The fingerprint accepted-findings files of schema version 1 hold (no trace role; a subject's
    trace path as the path the trace was read from)."""
    parts = [code, "" if rank is None else str(rank)] + [repr(v) for v in subject_values]
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:20]


# What must match for two runs to be comparable (`device_mismatch`).
DEVICE_FIELDS = ("device", "compute_capability", "cuda_runtime_version", "hip_runtime_version")


def device_identity(trace: Trace) -> dict[str, Any]:
    """The device and software stack a trace ran on, as a snapshot records it."""
    dev = trace.primary_device
    return {
        "device": dev.name if dev else None,
        "vendor": dev.vendor if dev else None,
        "sm_count": dev.sm_count if dev else None,
        "compute_capability": dev.cc_str if dev else None,
        **{k: trace.meta.get(k) for k in ("cuda_runtime_version", "cuda_driver_version", "hip_runtime_version")},
    }


def device_mismatch(base: Mapping[str, Any], cur: Mapping[str, Any]) -> str | None:
    """Why two runs' device identities are not comparable (another device or software stack), or None."""
    diffs = []
    for k in DEVICE_FIELDS:
        b, c = base.get(k), cur.get(k)
        if b is not None and c is not None and b != c:
            diffs.append(f"{k} {b!r} vs {c!r}")
    return "; ".join(diffs) or None


__all__ = [
    "DEVICE_FIELDS",
    "PATH_FIELDS",
    "RUN_ROLE",
    "device_identity",
    "device_mismatch",
    "fingerprint",
    "legacy_fingerprint",
    "normalize_name",
    "subject",
    "trace_role",
]
