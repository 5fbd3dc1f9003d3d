"""Which part of a baseline goes with which part of the current run: a trace with its baseline
entry (same rank, else the only one, else the same file name), the traces of two runs pairwise,
and the kernel groups of two snapshots."""

from __future__ import annotations

import os
from typing import Any

from perflint.baseline.identity import device_mismatch
from perflint.baseline.snapshot import Snapshot
from perflint.errors import InputError
from perflint.model import Trace

Group = dict[str, Any]


def entry_for(baseline: dict[str, Any], trace: Trace) -> Snapshot:
    """The baseline snapshot entry for this trace: same rank, else the only one, else same file name."""
    entries = baseline.get("traces", [])
    same_rank = [e for e in entries if e.get("rank") == trace.rank and trace.rank is not None]
    if same_rank:
        return same_rank[0]  # type: ignore[no-any-return]
    if len(entries) == 1:
        return entries[0]  # type: ignore[no-any-return]
    same_name = [e for e in entries if os.path.basename(str(e.get("path"))) == os.path.basename(trace.path)]
    if same_name:
        return same_name[0]  # type: ignore[no-any-return]
    raise InputError(trace.path, f"the baseline has no trace for rank {trace.rank} (ranks: {[e.get('rank') for e in entries]})")


def pair_traces(base: dict[str, Any], cur: dict[str, Any], allow_mismatch: bool) -> list[tuple[Snapshot, Snapshot]]:
    """The traces of two snapshot documents pairwise: the only one of each, else by rank; a pair
    from another device or software stack raises unless `allow_mismatch`."""
    bt, ct = base["traces"], cur["traces"]
    if len(bt) == 1 and len(ct) == 1:
        pairs = [(bt[0], ct[0])]
    else:
        by_rank = {b.get("rank"): b for b in bt}
        pairs = [(by_rank[c.get("rank")], c) for c in ct if c.get("rank") in by_rank]
        if not pairs:
            raise InputError("diff", "no traces to pair: the two runs share no rank")
    for b, c in pairs:
        why = device_mismatch(b.get("identity", {}), c.get("identity", {}))
        if why and not allow_mismatch:
            raise InputError(c["path"], f"not comparable with {b['path']}: {why}; use --allow-device-mismatch")
    return pairs


def _op_key(g: Group) -> tuple[Any, ...]:
    return (g.get("top_level_op"), g.get("op"), repr(g.get("input_dims")))


def pair_groups(base: Snapshot, cur: Snapshot) -> list[tuple[Group | None, Group | None, str | None]]:
    """(baseline group, current group, baseline kernel name when renamed) for every kernel group
    of either side: the same key first, then the same kernel name (exact, before any shortening)
    under another op stack, then the same op stack and shapes (the op's kernel changed: another
    cuBLAS heuristic, a new library), so a renamed kernel is one changed pair, not an add plus a
    delete; then the new groups, then the removed ones."""
    bg: dict[str, Group] = dict(base.get("groups", {}))
    cg: dict[str, Group] = dict(cur.get("groups", {}))
    pairs: list[tuple[Group | None, Group | None, str | None]] = []
    for k in list(cg):
        if k in bg:
            pairs.append((bg.pop(k), cg.pop(k), None))
    # The same kernel under another op stack (a window cut mid-iteration, a renamed annotation)
    # is still the same kernel: never NEW on one side and GONE on the other.
    by_kernel: dict[str, list[str]] = {}
    for k, g in bg.items():
        by_kernel.setdefault(g["kernel"], []).append(k)
    for k, g in list(cg.items()):
        cands = by_kernel.get(g["kernel"])
        if cands:
            pairs.append((bg.pop(cands.pop(0)), cg.pop(k), None))
    by_op: dict[tuple[Any, ...], list[str]] = {}
    for k, g in bg.items():
        by_op.setdefault(_op_key(g), []).append(k)
    for k, g in list(cg.items()):
        cands = by_op.get(_op_key(g))
        if cands:
            bk = cands.pop(0)
            b = bg.pop(bk)
            pairs.append((b, cg.pop(k), b["kernel"]))
    # A kernel kept on one side and folded away on the other (too small a share there) is paired
    # with the other side's folded time of that kernel.
    for side, groups, other in ((0, cg, base), (1, bg, cur)):
        folded = other.get("folded") or {}
        for k, g in list(groups.items()):
            f = folded.get(g["kernel"])
            if f is not None:
                stub = {"top_level_op": None, "op": None, "input_dims": None, "kernel": g["kernel"], **f}
                pairs.append((stub, groups.pop(k), None) if side == 0 else (groups.pop(k), stub, None))
    pairs.extend((None, g, None) for g in cg.values())
    pairs.extend((g, None, None) for g in bg.values())
    return pairs
