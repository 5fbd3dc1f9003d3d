"""The data pipeline's queues (`minddata_pipeline_raw`)."""

from __future__ import annotations

import os
from typing import Any

from perflint.errors import InputError
from perflint.readers.mindspore.table import column, rows


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

