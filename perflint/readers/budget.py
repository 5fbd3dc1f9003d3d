"""The memory budget of one trace's read (`--memory-budget`, PERFLINT_MEMORY_BUDGET) and the
slice plan it implies.

Every file above a megabyte is read slice by slice (readers/chunked.py): the whole file is never
one document in memory. What a read holds is the finished columns of the trace (about
COLUMNS_PER_BYTE of the file at the peak, with the analysis: fixed, whatever the plan) plus the slices in flight: each worker
decodes one, the parent holds the exported columns of the slices it has not merged yet, and a
streamed .gz keeps a ring of (2 x workers + 2) slices. Those in-flight bytes are what the plan
bounds: smaller slices, then fewer workers, down to one slice at a time whose file pages are
released as soon as it is decoded. A budget below the columns themselves cannot be kept: the
trace is read anyway, with a warning in the report.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

# Measured on the 200 MB / 1 GB benchmark traces (BENCHMARKS.md): peak RSS of `perflint check`
# is ~64 MB (interpreter, numpy, rules) plus ~0.62x the file (columns, then the analysis arrays).
COLUMNS_PER_BYTE = 0.62
IN_FLIGHT_PER_SLICE_BYTE = 3.0  # mapped pages + decoded piece + exported columns + the parent's copy
BASE_BYTES = 64 << 20
MIN_SLICE = 1 << 20
MIN_PARALLEL_SLICE = 4 << 20

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class Plan(NamedTuple):
    workers: int
    slice_bytes: int
    note: str | None  # a warning for the report when even the smallest plan exceeds the budget


def parse_size(text: str) -> int:
    """'512M', '4G', '1.5GiB', '1000000' -> bytes (binary units). ValueError when unreadable."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M or 4G)")
    n = int(float(m.group(1)) * _UNIT[m.group(2).lower()])
    if n <= 0:
        raise ValueError(f"not a positive size: {text!r}")
    return n


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo (Linux); None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def budget(given: int | None = None) -> int | None:
    """The read's memory budget in bytes: `given` (--memory-budget), else PERFLINT_MEMORY_BUDGET,
    else the memory the machine has available; None where none of them is known."""
    if given is not None:
        return given
    raw = os.environ.get("PERFLINT_MEMORY_BUDGET")
    if raw:
        try:
            return parse_size(raw)
        except ValueError:
            pass  # a bad environment value must not stop a CI run; --memory-budget reports it
    return available_memory()


def whole_in_memory(memory_budget: int | None = None) -> int | None:
    """The most bytes of content a read may hold whole in memory beside the trace's columns (an
    archive member, which has no file to map and release): the budget's room above BASE_BYTES
    shared by the content and its COLUMNS_PER_BYTE; None where no budget is known."""
    limit = budget(memory_budget)
    if limit is None:
        return None
    return max(MIN_SLICE, int((limit - BASE_BYTES) / (1 + COLUMNS_PER_BYTE)))


def in_flight(workers: int, slice_bytes: int, gz: bool) -> float:
    slices = workers + (2 * workers + 2 if gz else 0)
    return IN_FLIGHT_PER_SLICE_BYTE * slices * slice_bytes


def plan(file_bytes: int, workers: int, slice_bytes: int, gz: bool = False, memory_budget: int | None = None) -> Plan:
    """Workers and slice size that keep the read of a `file_bytes` trace within the budget
    (`memory_budget`, else what `budget` finds)."""
    limit = budget(memory_budget)
    if limit is None or BASE_BYTES + COLUMNS_PER_BYTE * file_bytes + in_flight(workers, slice_bytes, gz) <= limit:
        return Plan(workers, slice_bytes, None)
    room = limit - BASE_BYTES - COLUMNS_PER_BYTE * file_bytes
    if workers > 1:
        per = int(room / in_flight(workers, 1, gz)) if room > 0 else 0
        if per >= MIN_PARALLEL_SLICE:
            return Plan(workers, min(slice_bytes, per), None)
    per = int(room / in_flight(1, 1, gz)) if room > 0 else 0
    if per >= MIN_SLICE:
        return Plan(1, min(slice_bytes, per), None)
    # Even one small slice does not fit beside the columns: the columns are the peak then (one
    # worker would not lower it), so read as fast as small slices allow, and say so.
    need = BASE_BYTES + COLUMNS_PER_BYTE * file_bytes + in_flight(1, MIN_SLICE, gz)
    note = (
        f"the memory budget ({limit >> 20} MiB) is below what this trace needs (about {int(need) >> 20} MiB); "
        "read anyway, in the smallest slices"
    )
    if workers > 1:
        return Plan(workers, MIN_PARALLEL_SLICE, note)
    return Plan(1, MIN_SLICE, note)
