"""The baseline one trace is checked against (`check --baseline`): its entry of the baseline
snapshot, which the `baseline` fact source compares with the trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perflint.baseline.compare import compare
from perflint.baseline.identity import device_identity, device_mismatch
from perflint.baseline.matching import entry_for
from perflint.baseline.snapshot import Snapshot, current_snapshot
from perflint.errors import InputError
from perflint.facts import Context, Row
from perflint.model import Trace


@dataclass(frozen=True)
class TraceBaseline:
    """A trace's baseline snapshot entry (perflint.facts.Baseline)."""

    snapshot: Snapshot

    @property
    def steps(self) -> int:
        return len(self.snapshot.get("steps", []))

    def compare(self, ctx: Context) -> list[Row]:
        return compare(self.snapshot, current_snapshot(ctx))


def trace_baseline(baseline: dict[str, Any], trace: Trace, allow_mismatch: bool = False) -> TraceBaseline:
    """The entry of the snapshot document `baseline` that goes with `trace` (matching.entry_for);
    one from another device or software stack raises unless `allow_mismatch`."""
    entry = entry_for(baseline, trace)
    why = device_mismatch(entry.get("identity", {}), device_identity(trace))
    if why and not allow_mismatch:
        raise InputError(trace.path, f"baseline is from another device or software stack ({why}); use --allow-device-mismatch")
    return TraceBaseline(entry)
