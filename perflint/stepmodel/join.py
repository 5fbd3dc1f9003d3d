"""The ranks of a run joined at their collectives: who waits for whom.

A collective ends on every member when its last member has arrived, so a rank that arrives early
spends the difference waiting, not transferring. Checked together, the ranks of one run (the
traces with a rank in one directory) are matched collective by collective, by the most exact key
every member's collectives record (MATCH_KEYS):
- "sequence": the same process group and sequence number (PyTorch numbers each group's
  collectives; recorded from PyTorch 2.5 as "Seq");
- "group order": the same step, process group and order among that group's collectives in the
  step (every member issues a group's collectives in one order), and the same type;
- "name order": the same step number, collective (or kernel) name and order among those in the
  step.
Point-to-point sends and receives (their two ranks run different operations, each numbered on
its own) are matched by name order in every case. A matched
collective is joined when its members end together (within JOIN_TOL_US or a tenth of its
duration): then each member's wait is the last member's arrival minus its own, at most its own
time in it, and the rest is transfer. The ranks' clocks are taken as one where most matched
collectives end together as recorded; otherwise each rank's offset is the median difference of
its collectives' ends from the first rank's, and used where most then end together. Where
neither holds (the traces hold a few ranks of larger collectives, or point-to-point traffic
whose ends need not meet), nothing is split and the note says so.

Each rank's median step then splits its critical path's communication into the wait it lies on
(the joined collectives' waits, times the share of each the step waits on) and the transfer; the
wait is blamed on the rank that arrived last. Each joined collective's wait is kept on its row
(`collectives["wait"]`, None where not joined) for the per-collective table.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflint.stepmodel.critical import BOUND, LABELS

JOIN_TOL_US = 50.0  # ends of one collective on its members agree within this (or a tenth of its time)
JOIN_MIN_SHARE = 0.5  # the clocks are one (or aligned) where this share of matched collectives ends together


@dataclass
class RankEntry:
    """One trace of the run: its path, rank, collective rows (collective_rows) and the step
    model section of its summary, which the join completes."""

    path: str
    rank: int | None
    collectives: dict[str, Any]
    step_model: dict[str, Any]


def join_ranks(entries: list[RankEntry]) -> None:
    """Join the ranks of each run among `entries` (in place: their step_model dicts gain `ranks`
    and, where waits were found, a split of `communication` in `bound_by`)."""
    runs: dict[str, list[RankEntry]] = defaultdict(list)
    for e in entries:
        if e.rank is not None and e.collectives.get("name"):
            runs[os.path.dirname(os.path.abspath(e.path))].append(e)
    for members in runs.values():
        ranks = [e.rank for e in members]
        if len(members) < 2 or len(set(ranks)) < len(ranks):
            continue
        _join(sorted(members, key=lambda e: e.rank or 0))


def caused_waits(entries: list[RankEntry]) -> dict[tuple[str, int], float]:
    """Per (path, rank) of a joined run where some other rank's median step waited for it on its
    critical path: the most such time (what the others would gain, per step, if it were not
    late)."""
    out: dict[tuple[str, int], float] = {}
    by_rank: dict[tuple[str, int], float] = defaultdict(float)
    for e in entries:
        rk = e.step_model.get("ranks")
        if not rk or e.rank is None:
            continue
        run = os.path.dirname(os.path.abspath(e.path))
        for w in rk["waited_for"]:
            by_rank[(run, int(w["rank"]))] = max(by_rank[(run, int(w["rank"]))], float(w["on_path_us"]))
    for e in entries:
        us = by_rank.get((os.path.dirname(os.path.abspath(e.path)), e.rank or 0), 0.0) if e.rank is not None else 0.0
        if us > 0:
            out[(e.path, int(e.rank or 0))] = us
    return out


# What matched collectives across the ranks, in words (the `matched_by` of the join's result).
MATCH_KEYS = {
    "sequence": "process group and sequence number",
    "group order": "process group and order in the step",
    "name order": "step, name and order",
}
_P2P = frozenset({"send", "recv", "send_recv"})


def _group_rows(c: dict[str, Any]) -> list[bool]:
    """The rows a process-group key applies to: collectives, not point-to-point transfers."""
    return [k not in _P2P for k in c.get("kind") or [None] * len(c["name"])]


def match_key(members: list[dict[str, Any]]) -> str:
    """The most exact key every member's collective rows record (MATCH_KEYS)."""
    grouped = [(c, _group_rows(c)) for c in members]
    if not any(any(g) for _, g in grouped):
        return "name order"
    pg_known = all(p is not None for c, g in grouped for p, ok in zip(c.get("pg") or [], g) if ok)
    pg_known = pg_known and all(len(c.get("pg") or []) == len(g) for c, g in grouped)
    if not pg_known:
        return "name order"
    if all(q >= 0 for c, g in grouped for q, ok in zip(c["seq"], g) if ok):
        return "sequence"
    return "group order"


def _keys(c: dict[str, Any], how: str) -> dict[tuple[Any, ...], int]:
    names = c["names"]
    out: dict[tuple[Any, ...], int] = {}
    grouped = _group_rows(c) if how != "name order" else [False] * len(c["name"])
    order: dict[tuple[int, Any], int] = defaultdict(int)  # calls seen per (step, group)
    for i, (s, n, o) in enumerate(zip(c["step"], c["name"], c["ordinal"])):
        if not grouped[i]:
            out[("name", s, names[n], o)] = i
        elif how == "sequence":
            out[("seq", c["pg"][i], c["seq"][i], c["part"][i])] = i
        else:
            k = order[(s, c["pg"][i])] - (1 if c["part"][i] else 0)  # a call's later kernels share its place
            if not c["part"][i]:
                order[(s, c["pg"][i])] += 1
            out[("pg", s, c["pg"][i], k, c["part"][i], c["kind"][i])] = i
    return out


def _join(members: list[RankEntry]) -> None:
    how = match_key([e.collectives for e in members])
    keys = [_keys(e.collectives, how) for e in members]
    count: dict[tuple[Any, ...], int] = defaultdict(int)
    for k in keys:
        for key in k:
            count[key] += 1
    shared = [key for key, n in count.items() if n >= 2]
    ranks = [int(e.rank or 0) for e in members]
    if not shared:
        _note(members, ranks, 0, 0, f"no collective of this rank matched one of the other ranks (same {MATCH_KEYS[how]})", how)
        return
    start = [np.asarray(e.collectives["start"]) for e in members]
    end = [np.asarray(e.collectives["end"]) for e in members]
    # Per shared collective, its members (index into `members`) and their rows.
    inst = [[(i, k[key]) for i, k in enumerate(keys) if key in k] for key in shared]
    offsets = np.zeros(len(members))
    if _agreeing(inst, start, end, offsets).mean() < JOIN_MIN_SHARE:
        for i in range(1, len(members)):
            d = [end[i][r_i] - end[0][r_0] for key in shared if key in keys[0] and key in keys[i] for r_0, r_i in [(keys[0][key], keys[i][key])]]
            offsets[i] = float(np.median(d)) if d else 0.0
        if _agreeing(inst, start, end, offsets).mean() < JOIN_MIN_SHARE:
            _note(
                members, ranks, len(shared), 0,
                "the matched collectives do not end together on these ranks (the traces hold a few ranks of larger collectives, "
                "or point-to-point traffic): their time is not split into waiting and transfer", how,
            )  # fmt: skip
            return
    ok = _agreeing(inst, start, end, offsets)
    joined_inst = [rows for rows, good in zip(inst, ok.tolist()) if good]
    wait = [np.zeros(len(s)) for s in start]
    done = [np.zeros(len(s), dtype=bool) for s in start]
    late_of = [np.full(len(s), -1) for s in start]
    joined = [0] * len(members)
    # Per member, the collectives it arrived last at: (its row, how far after the next-latest
    # member, the others' wait in it).
    late: list[list[tuple[int, float, float]]] = [[] for _ in members]
    for members_rows, good in zip(inst, ok.tolist()):
        if not good:
            continue
        arrive = np.asarray([start[i][r] - offsets[i] for i, r in members_rows])
        last = int(np.argmax(arrive))
        for (i, r), a in zip(members_rows, arrive.tolist()):
            joined[i] += 1
            wait[i][r] = min(max(0.0, float(arrive[last]) - a), end[i][r] - start[i][r])
            done[i][r] = True
            late_of[i][r] = ranks[members_rows[last][0]]
        caused = float(sum(wait[i][r] for k, (i, r) in enumerate(members_rows) if k != last))
        behind = float(arrive[last]) - float(np.max(np.delete(arrive, last)))
        if caused > 0 and behind > 0:
            i_last, r_last = members_rows[last]
            late[i_last].append((r_last, behind, caused))
    for i, e in enumerate(members):
        c = e.collectives
        c["wait"] = [round(float(w), 3) if d else None for w, d in zip(wait[i].tolist(), done[i].tolist())]
        med = np.asarray(c["median"], dtype=bool)
        on_path = float((wait[i] * np.asarray(c["on_path"]))[med].sum())
        by: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
        share = np.asarray(c["on_path"])[med]
        for w, r, sh in zip(wait[i][med].tolist(), late_of[i][med].tolist(), share.tolist()):
            if w > 0 and r >= 0:
                by[r][0] += w
                by[r][1] += w * sh
        e.step_model["ranks"] = {
            "ranks": ranks,
            "matched": sum(1 for rows in inst if any(j == i for j, _ in rows)),
            "joined": joined[i],
            "clock_offset_us": round(float(offsets[i]), 3),
            "wait_us": round(float(wait[i][med].sum()), 3),
            "on_path_wait_us": round(on_path, 3),
            "waited_for": [{"rank": r, "us": round(us, 3), "on_path_us": round(p, 3)} for r, (us, p) in sorted(by.items(), key=lambda kv: -kv[1][0])],
            "lanes": _lanes(i, members, ranks, joined_inst, start, end, offsets, wait, late_of),
            "late": _late(c, late[i], joined[i]),
            "matched_by": MATCH_KEYS[how],
            "note": None,
        }
        _split(e.step_model, on_path if joined[i] else 0.0)


def _late(c: dict[str, Any], late: list[tuple[int, float, float]], joined: int) -> dict[str, Any] | None:
    """How late a member arrives at the collectives it arrived last at: per step over the steps
    its collectives span, the worst one (its name, step, and what the member's critical path ran
    before it, where that step was replayed), and the others' wait in them."""
    if not late:
        return None
    steps = max(1, len(set(c["step"])))
    r, behind, _ = max(late, key=lambda x: x[1])
    med = [x for x in late if c["median"][x[0]] and c["before"][x[0]]] if c.get("before") else []
    before = c["before"][max(med, key=lambda x: x[1])[0]] if med else ""
    return {
        "collectives": len(late),
        "joined": joined,
        "steps": steps,
        "late_us": round(sum(x[1] for x in late) / steps, 3),
        "max_us": round(behind, 3),
        "collective": c["names"][c["name"][r]],
        "step": c["step"][r],
        "before": before,
        "caused_us": round(sum(x[2] for x in late) / steps, 3),
    }


# The rank-row fields (facts/ranks.py) of a member's `late` summary.
LATE_FIELDS = {"collectives": "late_collectives", "joined": "joined_collectives", "late_us": "late_us", "max_us": "late_max_us",
               "collective": "late_collective", "step": "late_step", "before": "late_before", "caused_us": "late_waited_us"}  # fmt: skip


def late_fields(ranks: dict[str, Any] | None) -> dict[str, Any]:
    """A member's join (its step model's `ranks`) as rank-row fields: all None where it was not
    joined; a joined member that was never last has 0 late collectives and waits caused."""
    joined = (ranks or {}).get("joined") or 0
    got = dict((ranks or {}).get("late") or {})
    if joined and not got:
        got = {"collectives": 0, "late_us": 0.0, "caused_us": 0.0}
    got["joined"] = joined or None
    got["before"] = got.get("before") or None
    if got.get("step") == -1:  # a trace without steps
        got["step"] = None
    return {f: got.get(k) for k, f in LATE_FIELDS.items()}


MAX_LANE_COLLECTIVES = 100  # collectives a picture of the median step shows: the longest waits


def _lanes(
    i: int, members: list[RankEntry], ranks: list[int], joined: list[list[tuple[int, int]]], start: list[np.ndarray], end: list[np.ndarray],
    offsets: np.ndarray, wait: list[np.ndarray], late_of: list[np.ndarray],
) -> dict[str, Any] | None:  # fmt: skip
    """Member i's median step's joined collectives as lanes, one per rank, on member i's clock:
    each rank's time in each collective (its arrival to the end), and member i's waits in them
    (its arrival to the last arrival) with the rank it waited for and the collective's name."""
    c = members[i].collectives
    med = np.asarray(c["median"], dtype=bool)
    mine = [rows for rows in joined if any(j == i and med[r] for j, r in rows)]
    if not mine:
        return None
    row_of = [dict(rows)[i] for rows in mine]
    keep = sorted(range(len(mine)), key=lambda k: -wait[i][row_of[k]])[:MAX_LANE_COLLECTIVES]
    busy: dict[str, list[list[float]]] = {str(r): [] for r in ranks}
    waits: list[list[Any]] = []
    for k in sorted(keep, key=lambda k: start[i][row_of[k]]):
        for j, r in mine[k]:
            shift = offsets[i] - offsets[j]
            busy[str(ranks[j])].append([round(float(start[j][r] + shift), 3), round(float(end[j][r] + shift), 3)])
        r = row_of[k]
        if wait[i][r] > 0:
            name = c["names"][c["name"][r]]
            waits.append([round(float(start[i][r]), 3), round(float(start[i][r] + wait[i][r]), 3), int(late_of[i][r]), name])
    spans = [x for ivs in busy.values() for x in ivs]
    return {"lo": min(a for a, _ in spans), "hi": max(b for _, b in spans), "busy": busy, "waits": waits, "rank": ranks[i]}


def _agreeing(inst: list[list[tuple[int, int]]], start: list[np.ndarray], end: list[np.ndarray], offsets: np.ndarray) -> np.ndarray:
    """Per shared collective: whether its members end together (clocks moved by `offsets`)."""
    out = np.zeros(len(inst), dtype=bool)
    for k, rows in enumerate(inst):
        ends = [end[i][r] - offsets[i] for i, r in rows]
        durs = [end[i][r] - start[i][r] for i, r in rows]
        out[k] = max(ends) - min(ends) <= max(JOIN_TOL_US, 0.1 * float(np.median(durs)))
    return out


def _note(members: list[RankEntry], ranks: list[int], matched: int, joined: int, why: str, how: str) -> None:
    for e in members:
        e.step_model["ranks"] = {
            "ranks": ranks, "matched": matched, "joined": joined, "clock_offset_us": None, "wait_us": None,
            "on_path_wait_us": None, "waited_for": [], "lanes": None, "late": None, "matched_by": MATCH_KEYS[how], "note": why,
        }  # fmt: skip


def _split(sm: dict[str, Any], wait_us: float) -> None:
    """Move `wait_us` of the median step's communication on its critical path to the
    communication-wait category (the pcts still add up to 100); the rest is transfer."""
    bound = sm.get("bound_by") or []
    comm = next((b for b in bound if b["category"] == "communication"), None)
    if comm is None:
        return
    comm["label"] = "communication transfer"
    if wait_us <= 0:
        return
    moved = min(wait_us, float(comm["us"]))
    comm["us"] = round(float(comm["us"]) - moved, 3)
    bound.append({"category": "comm_wait", "label": LABELS["comm_wait"], "us": round(moved, 3), "pct": 0.0})
    total = sum(float(b["us"]) for b in bound)
    kept = [b for b in bound if b["us"] > 0]
    for b in kept:
        b["pct"] = round(100.0 * float(b["us"]) / total, 3) if total > 0 else 0.0
    kept.sort(key=lambda b: (-float(b["us"]), BOUND.index(b["category"])))
    bound[:] = kept
