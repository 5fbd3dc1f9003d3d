"""CANN (msprof) timelines of an Ascend run: `PROF_*/device_{n}/timeline/msprof_*.json`.

A Chrome-trace list whose processes are named by metadata events: "Ascend Hardware" holds the
device tasks (thread = stream; args "Task Type"), its "Step Trace" thread the iterations
("Iteration Time" events with FP Start / BP End / Iteration End), "HCCL" the collectives (thread
"Communication Kernel", one event per collective op) and their planes (sub-tasks), "CANN" the
host API and "Overlap Analysis" a summary of the others. Compute tasks (AI Core / AI CPU / vector
core) become kernels, the communication kernels collective kernels; sub-tasks, event records and
the summaries are not read (they would count the same time twice).
"""

from __future__ import annotations

import os
from typing import Any

from perflint.errors import InputError
from perflint.readers.mindspore.columns import Columns, op_type
from perflint.readers.mindspore.steps import StepTrace
from perflint.readers.mindspore.table import json_events

COMPUTE_TASKS = {"AI_CORE", "AI_CPU", "AI_VECTOR_CORE", "AIV", "MIX_AIC", "MIX_AIV"}


def _int(path: str, value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(path, f"{os.path.basename(path)}: a non-numeric {what} ({value!r})") from None


def _names(events: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    procs: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in events:
        if e.get("ph") != "M" or not isinstance(e.get("args"), dict):
            continue
        if e.get("name") == "process_name":
            procs[e.get("pid")] = str(e["args"].get("name", ""))
        elif e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = str(e["args"].get("name", ""))
    return procs, threads


def read_msprof(paths: list[str], dev: int, cols: Columns, steps: StepTrace) -> None:
    for path in paths:
        events: list[dict[str, Any]] = json_events(path)  # JSON values: checked where they are read
        procs, threads = _names(events)
        for e in events:
            if e.get("ph") != "X":
                continue
            proc = procs.get(e.get("pid"), "")
            thread = threads.get((e.get("pid"), e.get("tid")), "")
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            assert isinstance(args, dict)
            try:
                ts, dur = float(e["ts"]), float(e["dur"])
            except (KeyError, TypeError, ValueError):
                raise InputError(path, f"{os.path.basename(path)}: an event without numeric ts/dur") from None
            name = str(e.get("name", ""))
            if proc == "Ascend Hardware" and e.get("cat") == "Iteration Time":
                _step(path, args, ts, dur, steps)
            elif proc == "Ascend Hardware" and args.get("Task Type") in COMPUTE_TASKS:
                stream = _int(path, args.get("Stream Id", e.get("tid", -1)), "Stream Id")
                cols.kernel(name, dev, stream, ts, dur)
                cols.op(op_type(name), (f"device {dev}", f"stream {stream}"), ts, dur)
            elif proc == "HCCL" and thread == "Communication Kernel":
                cols.kernel(name, dev, _int(path, e.get("tid", -1), "tid"), ts, dur, collective=op_type(name))


def _step(path: str, args: dict[str, Any], ts: float, dur: float, steps: StepTrace) -> None:
    try:
        number = int(args["Iteration ID"])
        fp, bp = float(args.get("FP Start", ts)), float(args.get("BP End", ts + dur))
    except (KeyError, TypeError, ValueError):
        raise InputError(path, f"{os.path.basename(path)}: an Iteration Time event without Iteration ID / FP Start") from None
    steps.number.append(number)
    steps.start.append(ts)
    steps.end.append(ts + dur)
    steps.fp.append(fp)
    steps.bp.append(bp)
