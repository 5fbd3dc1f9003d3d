"""`hccl_raw_{rank}.csv`: a rank's HCCL communication per step, as MindSpore's HCCL parser writes it.

Columns: `step_num` (the last row, '-', averages the steps), `communication_cost` and `wait_cost`
(ms: the transfer time of the rank's collectives on their main stream, and the time they waited
for the peers), `link_info` and `communication_operator_cost` (JSON). `link_info` maps
"src-dst" rank pairs to link types ("SDMA" within a server, "RDMA" between servers) and each to
[time ms, size KB, bandwidth KB/s] (RDMA adds the wait, ms); sizes count 1000 bytes to the KB.
`communication_operator_cost` maps each collective (named as the step trace names it,
`stream_{s}_{i}_{op}`, or by its HCCL name) to [step, cost ms, wait ms, link_info].

The file has no timestamps: the collectives' spans come from the step trace. What it adds is
kept per step (`per_step`) and per transfer (`transfers`): the bytes each collective moved on
each link, for tables of collectives.
"""

from __future__ import annotations

import json
import os
from typing import Any

from perflint.errors import InputError
from perflint.readers.mindspore.steps import collective_of
from perflint.readers.mindspore.table import column, numbers, rows

REQUIRED = ("step_num", "communication_cost", "wait_cost")
US_PER_MS = 1000.0
BYTES_PER_KB = 1000.0  # MindSpore's HCCL parser divides bytes by 1e3


def _json(path: str, text: str, col: str, line: int) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        raise InputError(path, f"{os.path.basename(path)} line {line}: {col} is not JSON") from None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _transfers(step: int, operator: str | None, links: Any) -> list[dict[str, Any]]:
    """One record per (rank pair, link type) of a link_info object; pairs that are not
    'src-dst' ranks and values without a time and size are passed over."""
    out: list[dict[str, Any]] = []
    for pair, by_type in links.items() if isinstance(links, dict) else ():
        src, _, dst = str(pair).partition("-")
        if not (src.isdigit() and dst.isdigit()) or not isinstance(by_type, dict):
            continue
        for link, v in by_type.items():
            vals = [_num(x) for x in v] if isinstance(v, list) else []
            if len(vals) < 2 or vals[0] is None or vals[1] is None:
                continue
            bw = vals[2] if len(vals) > 2 else None
            wait = vals[3] if len(vals) > 3 else None
            out.append({
                "step": step, "operator": operator, "collective": collective_of(operator) if operator else None,
                "src_rank": int(src), "dst_rank": int(dst), "link": str(link),
                "time_us": vals[0] * US_PER_MS, "bytes": vals[1] * BYTES_PER_KB,
                "bandwidth_bytes_per_s": None if bw is None else bw * BYTES_PER_KB,
                "wait_us": None if wait is None else wait * US_PER_MS,
            })  # fmt: skip
    return out


def read_hccl(path: str) -> dict[str, Any]:
    """{'per_step': {'step', 'communication_us', 'wait_us'} lists, 'operators_us': collective ->
    its cost over the steps, 'transfers': one record per step, collective, rank pair and link}."""
    header, data = rows(path, REQUIRED)
    lines = [i + 2 for i, r in enumerate(data) if r and r[0].isdigit()]  # '-' averages the steps
    steps = [data[i - 2] for i in lines]
    numbers_ = [int(r[0]) for r in steps]
    cost = numbers(path, header, steps, "communication_cost")
    wait = numbers(path, header, steps, "wait_cost")
    ops_us: dict[str, float] = {}
    transfers: list[dict[str, Any]] = []
    per_op = column(path, header, steps, "communication_operator_cost") if "communication_operator_cost" in header else None
    links = column(path, header, steps, "link_info") if "link_info" in header else None
    for i, step in enumerate(numbers_):
        ops = _json(path, per_op[i], "communication_operator_cost", lines[i]) if per_op is not None else {}
        found = False
        for name, v in ops.items() if isinstance(ops, dict) else ():
            if not isinstance(v, list) or len(v) < 2 or _num(v[1]) is None:
                continue
            ops_us[name] = ops_us.get(name, 0.0) + float(v[1]) * US_PER_MS
            got = _transfers(step, name, v[3] if len(v) > 3 else None)
            transfers.extend(got)
            found = found or bool(got)
        if not found and links is not None:  # the rank's totals when no collective lists its links
            transfers.extend(_transfers(step, None, _json(path, links[i], "link_info", lines[i])))
    per_step = {"step": numbers_, "communication_us": [c * US_PER_MS for c in cost], "wait_us": [w * US_PER_MS for w in wait]}
    return {"per_step": per_step, "operators_us": ops_us, "transfers": transfers}
