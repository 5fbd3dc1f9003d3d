"""`step_trace_raw_{dev}_detail_time.csv`: MindSpore's per-step phases.

Points are in units of 10 ns (the device's system counter; MindInsight divides by 1e5 for ms), so
`/ 100` gives microseconds on the same clock as the op timelines. Each step row gives its start,
FP start, BP end and end: iteration interval (start -> FP start) is the time the step waits for
its input data, FP+BP the forward and backward pass, tail (BP end -> end) the gradient update and
what follows. Columns after `tail` come in threes `X_start_point, X_end_point, X`: the
communication spans the step trace recorded. X is `stream_{stream}_{index}_{op}` (the op's name,
e.g. `AllReduce-op12`, `Receive-op5`: its type is the collective), or in older files
`stream_{stream}_parallel_{index}` (all-reduce points, no op name). The last row, step '-', is the
average and is not a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from perflint.readers.mindspore.columns import op_type
from perflint.readers.mindspore.table import numbers, rows

REQUIRED = ("step_num", "start_point", "end_point", "fp_point", "bp_point")
TICKS_PER_US = 100.0
_COMM = re.compile(r"^(stream_(\d+)_(.+))_start_point$")
_NAMED = re.compile(r"^stream_\d+_\d+_(.+)$")  # `stream_{stream}_{index}_{op name}`


def collective_of(name: str) -> str | None:
    """The collective of a communication op as the step trace (`stream_3_0_AllReduce-op12`) or HCCL
    (`allReduce_1_2`, the op then its ordinal) names it: `AllReduce`; None for the older
    `stream_{s}_parallel_{i}` names, which say none."""
    m = _NAMED.match(name)
    if m:
        return op_type(m.group(1))
    if name.startswith("stream_"):
        return None
    return name.split("_", 1)[0] or None


@dataclass
class StepTrace:
    number: list[int] = field(default_factory=list)
    start: list[float] = field(default_factory=list)  # us
    end: list[float] = field(default_factory=list)
    fp: list[float] = field(default_factory=list)
    bp: list[float] = field(default_factory=list)
    # communication spans (MindSpore tags them as all-reduce points): (name, stream, collective, start us, end us)
    comm: list[tuple[str, int, str, float, float]] = field(default_factory=list)

    def interval_us(self, i: int) -> float:
        return self.fp[i] - self.start[i]

    def at(self, ts: float) -> int | None:
        """The number of the step whose span holds `ts`, None outside every step."""
        return next((n for n, a, b in zip(self.number, self.start, self.end) if a <= ts <= b), None)


def read_step_trace(path: str) -> StepTrace:
    header, data = rows(path, REQUIRED)
    data = [r for r in data if r and r[0].isdigit()]  # '-' is the average row
    out = StepTrace()
    out.number = [int(r[0]) for r in data]
    cols = {c: [v / TICKS_PER_US for v in numbers(path, header, data, c)] for c in REQUIRED[1:]}
    out.start, out.end, out.fp, out.bp = cols["start_point"], cols["end_point"], cols["fp_point"], cols["bp_point"]
    for c in header:
        m = _COMM.match(c)
        if m is None or f"{m.group(1)}_end_point" not in header:
            continue
        lo = numbers(path, header, data, c)
        hi = numbers(path, header, data, f"{m.group(1)}_end_point")
        kind = collective_of(m.group(1)) or re.sub(r"_\d+$", "", m.group(3)) + " all-reduce"
        for a, b in zip(lo, hi):
            if b > a > 0:
                out.comm.append((m.group(1), int(m.group(2)), kind, a / TICKS_PER_US, b / TICKS_PER_US))
    return out
