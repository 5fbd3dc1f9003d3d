"""MindSpore profiler output directories (GPU or Ascend): one Trace per device or rank.

`files` tells which files belong to which device or rank, `table` reads CSVs with one-line errors,
`steps` the step trace, `ascend`, `gpu` and `msprof` the op and kernel timelines, `hccl` the
communication per step, `cluster` the cluster analysis (per-step computation and communication,
FLOPs), `extras` the data pipeline's queues, `build` assembles one device's Trace. The devices of
a directory are the ranks of one run, with or without op timelines.
"""

from __future__ import annotations

import os

from perflint.errors import InputError, PartialRead
from perflint.model import Trace
from perflint.readers.mindspore.build import FORMAT, device_trace
from perflint.readers.mindspore.files import (
    ASCEND_FAMILIES,
    GPU_FAMILIES,
    DeviceFiles,
    devices,
    is_mindspore_dir,
    prof_timelines,
)
from perflint.readers.protocol import Reader, ReadOptions


def plan(path: str) -> list[tuple[str, DeviceFiles, str]]:
    """(trace path, device files, what to read) for every trace of the directory. A device is
    read from its op timeline ('gpu', 'ascend'); one with none of the op-level files, from its
    step trace with the HCCL and cluster analysis files ('steps'). A directory holding GPU files and a CANN PROF_ directory
    holds two runs (a run is GPU or Ascend, never both): each is read as its own trace, the PROF_
    one named by its device directory."""
    devs = devices(path)
    profs = prof_timelines(path)
    out: list[tuple[str, DeviceFiles, str]] = []
    by_id = {d.device: d for d in devs}
    for d in devs:
        # Op-level files without their timeline are an incomplete output: reading them says so.
        if any(f in d.files for f in GPU_FAMILIES):
            out.append((path, d, "gpu"))
        elif any(f in d.files for f in ASCEND_FAMILIES if f != "hccl"):
            out.append((path, d, "ascend"))
        elif "step_trace" in d.files and d.device not in profs:
            out.append((path, d, "steps"))
    used = {d.device for _, d, use in out if use in ("ascend", "steps")}
    for dev, jsons in sorted(profs.items()):
        if dev in used:
            continue  # MindSpore's own Ascend files of that device are read instead
        own = by_id.get(dev)
        pd = DeviceFiles(dev, dict(own.files) if own else {}, list(jsons), own.cluster if own else None, own.cluster_device if own else None)
        alone = not out
        out.append((path if alone else os.path.dirname(os.path.dirname(jsons[0])), pd, "msprof"))
    return out


def _ranks(todo: list[tuple[str, DeviceFiles, str]]) -> list[tuple[int | None, int | None]]:
    """(rank, world size) of each trace. The devices of one directory are the ranks of one run
    (a run is GPU or Ascend: the CANN PROF_ timelines beside GPU files are another); the cluster
    analysis file names the run's size, so one rank of a larger run knows its rank too."""
    out: list[tuple[int | None, int | None]] = []
    for p, d, use in todo:
        run = [d2 for p2, d2, u2 in todo if p2 == p and (u2 == "msprof") == (use == "msprof")]
        size = d.cluster[2] if d.cluster is not None else None
        if len(run) > 1 or (size or 0) > 1:
            out.append((d.device, size or len(run)))
        else:
            out.append((None, None))
    return out


class MindSporeReader(Reader):
    name = "mindspore"
    title = "MindSpore profiler output directory"
    suffixes = ()

    def sniff(self, path: str, head: bytes) -> bool:
        return False  # a directory format: read through claims_dir

    def claims_dir(self, path: str, files: list[str]) -> bool:
        try:
            return is_mindspore_dir(path, files)
        except OSError:
            return False

    def read(self, path: str, options: ReadOptions) -> list[Trace]:
        if not os.path.isdir(path):
            raise InputError(path, "a MindSpore profiler output is a directory (the profiler/ folder)")
        todo = plan(path)
        if not todo:
            raise InputError(
                path,
                "no MindSpore op timeline or step trace (output_timeline_data_N.txt, gpu_timeline_display_N.json, "
                "step_trace_raw_N_detail_time.csv or PROF_*/device_N/timeline/msprof_*.json)",
            )
        out: list[Trace] = []
        errors: list[InputError] = []
        for (p, d, use), (rank, world) in zip(todo, _ranks(todo)):
            try:  # a rank that cannot be read costs only itself: the others are still checked
                out.append(device_trace(p, d, use, rank, world))
            except InputError as exc:
                errors.append(exc)
        if errors:
            raise PartialRead(errors, out)
        return out


__all__ = ["FORMAT", "MindSporeReader"]
