"""The smaller MindSpore files: the data pipeline's queues and communication per step (hccl_raw)."""

from __future__ import annotations

import json
import os
from typing import Any

from perflint.errors import InputError
from perflint.readers.mindspore.table import column, numbers, rows


def read_minddata(path: str) -> list[dict[str, Any]]:
    """`minddata_pipeline_raw_{dev}.csv`: one row per dataset op; an op's output queue usage rate
    (average queue size / capacity) near 0 means the consumer drained it: the pipeline cannot keep up."""
    header, data = rows(path, ("op_id", "op_type", "num_workers", "output_queue_usage_rate"))
    rate = column(path, header, data, "output_queue_usage_rate")
    avg = column(path, header, data, "output_queue_average_size") if "output_queue_average_size" in header else [""] * len(data)
    cap = column(path, header, data, "output_queue_length") if "output_queue_length" in header else [""] * len(data)
    out: list[dict[str, Any]] = []
    for r, u, a, c in zip(data, rate, avg, cap):
        try:
            usage = float(u) if u else None
            out.append({
                "op_id": int(r[0]), "op_type": r[1], "num_workers": int(r[2]) if r[2] else None,
                "queue_usage_pct": None if usage is None else 100.0 * usage,
                "queue_average_size": float(a) if a else None, "queue_length": int(float(c)) if c else None,
            })  # fmt: skip
        except ValueError:
            raise InputError(path, f"{os.path.basename(path)}: a non-numeric queue value in op {r[0]}") from None
    return out


def read_hccl(path: str) -> dict[str, Any]:
    """`hccl_raw_{rank}.csv`: communication cost and wait per step (ms, as MindInsight shows them)."""
    header, data = rows(path, ("step_num", "communication_cost", "wait_cost"))
    steps = [r for r in data if r and r[0].isdigit()]
    cost = numbers(path, header, steps, "communication_cost")
    wait = numbers(path, header, steps, "wait_cost")
    ops: dict[str, float] = {}
    if "communication_operator_cost" in header:
        for text in column(path, header, steps, "communication_operator_cost"):
            try:
                per_op = json.loads(text) if text else {}
            except ValueError:
                raise InputError(path, f"{os.path.basename(path)}: communication_operator_cost is not JSON") from None
            for name, v in per_op.items() if isinstance(per_op, dict) else ():
                if isinstance(v, list) and len(v) > 1 and isinstance(v[1], (int, float)):
                    ops[name] = ops.get(name, 0.0) + float(v[1])
    return {"steps": [int(r[0]) for r in steps], "communication_ms": cost, "wait_ms": wait, "operators_ms": ops}

