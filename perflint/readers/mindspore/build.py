"""One device's Trace from its MindSpore files."""

from __future__ import annotations

import math
import os
from typing import Any

from perflint.errors import InputError
from perflint.model import DATA_WAIT_PREFIX, KERNEL, Trace
from perflint.readers.mindspore.ascend import read_ascend
from perflint.readers.mindspore.cluster import read_cluster, read_flops
from perflint.readers.mindspore.columns import Columns
from perflint.readers.mindspore.extras import read_minddata
from perflint.readers.mindspore.files import DeviceFiles
from perflint.readers.mindspore.gpu import read_gpu
from perflint.readers.mindspore.hccl import read_hccl
from perflint.readers.mindspore.msprof import read_msprof
from perflint.readers.mindspore.steps import StepTrace, read_step_trace
from perflint.readers.tables import build_trace

FORMAT = "mindspore"
STEP_THREAD = ("MindSpore", "step trace")
# The data wait of a step: MindSpore's iteration interval (previous step's end -> this step's FP start).
DATA_WAIT = DATA_WAIT_PREFIX + "MindSpore iteration interval"
_EDGE = 0.05  # a step may start this share of its length before the first recorded op


def _covered(steps: StepTrace, lo: float, hi: float) -> list[int]:
    """Indices of the steps that start inside the op timeline (the step trace may run longer than
    the timeline; a step cut by its end is the last one, which the analysis leaves out as an edge)."""
    keep = []
    for i, (a, b) in enumerate(zip(steps.start, steps.end)):
        if b > a and lo - _EDGE * (b - a) <= a < hi:
            keep.append(i)
    return keep


def _timeline(d: DeviceFiles, use: str, cols: Columns, steps: StepTrace) -> str:
    """Reads the device's op timeline into `cols` (the msprof one also gives `steps`); returns its path."""
    if use == "gpu":
        return read_gpu(d.files, d.device, cols)
    if use == "ascend":
        return read_ascend(d.files, d.device, cols)
    read_msprof(d.msprof, d.device, cols, steps)
    return d.msprof[0]


def device_trace(path: str, d: DeviceFiles, use: str, rank: int | None, world: int | None) -> Trace:
    """`use`: 'gpu', 'ascend' (MindSpore's own files), 'msprof' (the CANN timelines) or 'steps'
    (no op timeline: the step trace with the HCCL and cluster analysis files)."""
    cols = Columns()
    steps = StepTrace()
    warnings: list[str] = []
    meta: dict[str, Any] = {"device_kind": d.kind if use == "steps" else "gpu" if use == "gpu" else "ascend"}
    source = d.files.get("step_trace", "") if use == "steps" else _timeline(d, use, cols, steps)
    meta["timeline"] = os.path.basename(source) if use != "steps" else None
    if use != "msprof":
        if "step_trace" in d.files:
            steps = read_step_trace(d.files["step_trace"])
        else:
            warnings.append(f"no step_trace_raw_{d.device}_detail_time.csv: no steps, step-based rules are skipped")
    lo, hi = -math.inf, math.inf
    if use == "steps":
        if not steps.number:
            raise InputError(source, f"{os.path.basename(source)} holds no steps (and device {d.device} has no op timeline)")
        warnings.append(NO_TIMELINE.format(dev=d.device))
    else:
        kern = [i for i, k in enumerate(cols.gpu["kind"]) if k == KERNEL]
        if not kern:
            raise InputError(source, f"{os.path.basename(source)} holds no op or kernel events")
        lo = min(cols.gpu["ts"][i] for i in kern)
        hi = max(cols.gpu["ts"][i] + cols.gpu["dur"][i] for i in kern)
        keep = _covered(steps, lo, hi)
        if len(keep) < len(steps.number):
            # Op-level facts analyse the steps the timeline covers; step time and its phases all.
            meta["op_steps"] = [steps.number[keep[0]], steps.number[keep[-1]]] if keep else []
            what = f"steps {steps.number[keep[0]]}-{steps.number[keep[-1]]}" if keep else "none"
            warnings.append(PARTIAL_TIMELINE.format(what=what, n=len(steps.number)))
    phases: dict[str, list[float]] = {"step": [float(n) for n in steps.number], "iteration_interval_us": [], "fp_bp_us": [], "tail_us": []}
    for i, (a, b) in enumerate(zip(steps.start, steps.end)):
        cols.op(f"ProfilerStep#{steps.number[i]}", STEP_THREAD, a, b - a, annotation=True)
        wait = steps.interval_us(i)
        if wait > 0:
            cols.op(DATA_WAIT, STEP_THREAD, a, wait, annotation=True)
        phases["iteration_interval_us"].append(wait)
        phases["fp_bp_us"].append(steps.bp[i] - steps.fp[i])
        phases["tail_us"].append(b - steps.bp[i])
    meta["step_phases"] = phases
    if "hccl" in d.files:
        meta["hccl"] = read_hccl(d.files["hccl"])
    sizes = _p2p_bytes(meta.get("hccl"), rank)
    for name, stream, kind, a, b in steps.comm:
        if lo <= a <= hi:  # with an op timeline, communication is op-level: inside it only
            cols.kernel(name, d.device, stream, a, b - a, collective=kind)
            nbytes = sizes.get((steps.at(a), name))
            if nbytes is not None:
                cols.message_bytes(kind, nbytes)
    if "minddata" in d.files:
        meta["data_queues"] = read_minddata(d.files["minddata"])
    if "cluster" in d.files and d.cluster is not None:
        meta["step_breakdown"], warning = _breakdown(d.files["cluster"], steps, d.cluster[0] == "pipeline-parallel")
        warnings.extend([warning] if warning else [])
    if "flops_summary" in d.files:
        meta["flops"] = read_flops(d.files["flops_summary"])
    if d.cluster is not None and rank is not None:
        mode, stages, ranks = d.cluster
        meta["parallel_mode"] = mode
        if mode == "pipeline-parallel" and stages > 0 and ranks >= stages:
            meta["pipeline_stage"] = rank // (ranks // stages)
            meta["pipeline_stages"] = stages
    return build_trace(
        path, FORMAT, cols.strings, cols.threads, ops=cols.ops, gpu=cols.gpu, comms=cols.comms,
        rank=rank, world_size=world, meta=meta, warnings=warnings, recording=RECORDING,
    )  # fmt: skip


def _p2p_bytes(hccl: dict[str, Any] | None, rank: int | None) -> dict[tuple[int | None, str], int]:
    """(step, operator) -> the bytes of this rank's point-to-point message in it, from hccl_raw's
    transfers: what a Send sent, what a Receive received. A collective's per-link transfers are
    not its size as nccl-tests counts it (an all-reduce's ring moves 2(n-1)/n of its buffer), so
    only sends and receives get one."""
    out: dict[tuple[int | None, str], int] = {}
    if not hccl or rank is None:
        return out
    for t in hccl.get("transfers", []):
        side = {"Send": "src_rank", "Receive": "dst_rank"}.get(str(t.get("collective")))
        if side is None or t.get(side) != rank or not t.get("operator"):
            continue
        key = (t["step"], str(t["operator"]))
        out[key] = out.get(key, 0) + int(t["bytes"])
    return out


def _breakdown(path: str, steps: StepTrace, pipeline: bool) -> tuple[dict[str, Any], str | None]:
    """The cluster analysis as the trace's per-step breakdown: `compute_us` and `comm_exposed_us`
    are what the facts read where no kernel timeline gives them; the rest is MindSpore's own."""
    cols, warning = read_cluster(path, steps.number, pipeline)
    got: dict[str, Any] = dict(cols)
    got["compute_us"] = got.pop("computation_us")
    got["comm_exposed_us"] = got.pop("communication_alone_us")
    got["source"] = f"MindSpore's cluster analysis ({os.path.basename(path)})"
    return got, warning


NO_TIMELINE = (
    "no op timeline (output_timeline_data_{dev}.txt, timeline_display_{dev}.json or gpu_timeline_display_{dev}.json): "
    "steps and communication come from the step trace, compute per step from the cluster analysis where present; "
    "rules that need kernels are skipped"
)
PARTIAL_TIMELINE = (
    "the op timeline covers {what} of the {n} steps the step trace records: op-level numbers (kernels, GPU busy, "
    "communication overlap) cover those, step time and its phases every step"
)


# What a MindSpore profiler directory may lack, in MindSpore's terms (Trace.recording).
RECORDING = {
    "steps": "step trace (step_trace_raw_<device>_detail_time.csv)",
    "steps_hint": "profile a training run with MindSpore's Profiler so that it writes the step trace",
    "steps_fix": "Profile the training loop with mindspore.Profiler (its step trace is on for training): the output directory then holds step_trace_raw_<device>_detail_time.csv, one row per iteration.",
    "shapes": "operator input shapes",
    "shapes_hint": "neither the timeline's op args nor framework_raw give them",
    "shapes_fix": "Keep the profiler's framework_raw_<device>.csv (Ascend) or the timeline's op arguments beside the timeline: they hold the input shapes.",
    "device": "device properties (MindSpore's profiler output does not record them)",
    "device_hint": "MindSpore's profiler output does not record them",
    "device_fix": "MindSpore's profiler output does not record the device's properties: device-dependent rules cannot run on it; read occupancy in MindInsight or Nsight Compute instead.",
    "memory": "memory allocation events",
    "memory_hint": "MindSpore's memory profiling output is not read",
}
