"""MindSpore profiler output directories (GPU or Ascend): one Trace per device or rank.

`files` tells which files belong to which device, `table` reads CSVs with one-line errors,
`steps` the step trace, `ascend`, `gpu` and `msprof` the op and kernel timelines, `extras` the
data pipeline's queues and communication per step, `build` assembles one device's Trace.
"""

from __future__ import annotations

import os

from perflint.errors import InputError
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
    """(trace path, device files, what to read) for every trace of the directory. A directory
    holding GPU files and a CANN PROF_ directory holds two runs (a run is GPU or Ascend, never
    both): each is read as its own trace, the PROF_ one named by its device directory."""
    devs = devices(path)
    profs = prof_timelines(path)
    out: list[tuple[str, DeviceFiles, str]] = []
    by_id = {d.device: d for d in devs}
    for d in devs:
        if any(f in d.files for f in GPU_FAMILIES):
            out.append((path, d, "gpu"))
        elif any(f in d.files for f in ASCEND_FAMILIES if f != "hccl"):
            out.append((path, d, "ascend"))
    used = {d.device for _, d, use in out if use == "ascend"}
    for dev, jsons in sorted(profs.items()):
        if dev in used:
            continue  # MindSpore's own Ascend files of that device are read instead
        own = by_id.get(dev)
        pd = DeviceFiles(dev, dict(own.files) if own else {}, list(jsons), own.cluster if own else None)
        alone = not out
        out.append((path if alone else os.path.dirname(os.path.dirname(jsons[0])), pd, "msprof"))
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
            raise InputError(path, "no MindSpore op timeline (output_timeline_data_N.txt, gpu_timeline_display_N.json or PROF_*/device_N/timeline/msprof_*.json)")
        out: list[Trace] = []
        for kind in ("gpu", "ascend", "msprof"):
            group = [(p, d) for p, d, use in todo if use == kind]
            multi = len(group) > 1 and all(p == group[0][0] for p, _ in group)
            for p, d in group:
                rank = d.device if multi else None
                out.append(device_trace(p, d, kind, rank, len(group) if multi else None))
        return out


__all__ = ["FORMAT", "MindSporeReader"]
