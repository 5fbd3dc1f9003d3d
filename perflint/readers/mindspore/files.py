"""Which files of a MindSpore profiler output directory belong to which device or rank.

MindSpore names its outputs with the device (or rank) id inside the name:
`gpu_op_detail_info_{dev}.csv`, `aicore_intermediate_{dev}_type.csv`, `hccl_raw_{rank}.csv`, ...;
the CANN (msprof) timelines of an Ascend run live under `PROF_*/device_{n}/timeline/`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from perflint.readers.source import head as first_bytes

# file family -> pattern; group 1 is the device (or rank) id.
PATTERNS: dict[str, re.Pattern[str]] = {
    "gpu_timeline": re.compile(r"^gpu_timeline_display_(\d+)\.json$"),
    "gpu_op_detail": re.compile(r"^gpu_op_detail_info_(\d+)\.csv$"),
    "gpu_op_type": re.compile(r"^gpu_op_type_info_(\d+)\.csv$"),
    "gpu_activity": re.compile(r"^gpu_activity_data_(\d+)\.csv$"),
    "step_trace": re.compile(r"^step_trace_raw_(\d+)_detail_time\.csv$"),
    "minddata": re.compile(r"^minddata_pipeline_raw_(\d+)\.csv$"),
    "ascend_timeline": re.compile(r"^output_timeline_data_(\d+)\.txt$"),
    "ascend_display": re.compile(r"^(?:ascend_)?timeline_display_(\d+)\.json$"),
    "framework": re.compile(r"^framework_raw_(\d+)\.csv$"),
    "aicore_type": re.compile(r"^aicore_intermediate_(\d+)_type\.csv$"),
    "aicore_detail": re.compile(r"^aicore_intermediate_(\d+)_detail\.csv$"),
    "hccl": re.compile(r"^hccl_raw_(\d+)\.csv$"),
    "cluster": re.compile(r"^(ascend|gpu)_cluster_analyse_([a-z]+-parallel)_(\d+)_(\d+)_(\d+)\.csv$"),
    "flops_summary": re.compile(r"^flops_summary_(\d+)\.json$"),
}
GPU_FAMILIES = ("gpu_timeline", "gpu_op_detail", "gpu_op_type", "gpu_activity")
ASCEND_FAMILIES = ("ascend_timeline", "ascend_display", "framework", "aicore_type", "aicore_detail", "hccl")

# The first bytes a file of the family starts with: a directory is claimed only when one of its
# files has the name and the start of a MindSpore output.
HEADS: dict[str, bytes] = {
    "gpu_op_detail": b"op_side,op_type,op_name,op_full_name",
    "gpu_op_type": b"op_type,",
    "gpu_activity": b"name,type,op_full_name",
    "step_trace": b"step_num,start_point,end_point",
    "minddata": b"op_id,op_type,num_workers",
    "ascend_timeline": b"op_name,",
    "framework": b"task_id,stream_id",
    "aicore_type": b"kernel_type,",
    "aicore_detail": b"full_kernel_name,",
    "hccl": b"step_num,communication_cost",
    "cluster": b"computation_time,communication_alone_time",
    "gpu_timeline": b"[",
}  # a bare `timeline_display_N.json` is too common a name to claim a directory by
_PROF = re.compile(r"^PROF_[0-9A-Za-z_]+$")
_DEVICE = re.compile(r"^device_(\d+)$")


@dataclass
class DeviceFiles:
    """The files of one device (rank) of a run: family -> path; `msprof`: CANN timeline JSONs."""

    device: int
    files: dict[str, str] = field(default_factory=dict)
    msprof: list[str] = field(default_factory=list)
    cluster: tuple[str, int, int] | None = None  # (parallel mode, stage count, rank count)
    cluster_device: str | None = None  # 'ascend' or 'gpu': the cluster analysis file's prefix

    @property
    def kind(self) -> str:
        if any(f in self.files for f in GPU_FAMILIES) or self.cluster_device == "gpu":
            return "gpu"
        return "ascend"


def family_of(name: str) -> tuple[str, int] | None:
    for fam, pat in PATTERNS.items():
        m = pat.match(name)
        if m:
            return fam, int(m.group(m.lastindex or 1))
    return None


def _starts_with(path: str, head: bytes) -> bool:
    got = first_bytes(path, len(head) + 64)  # a member of an archive too: the scan says it is not read from there
    if got is None:
        return False
    return got[0].lstrip(b"\xef\xbb\xbf \t\r\n").replace(b" ", b"").startswith(head.replace(b" ", b""))


def prof_timelines(path: str) -> dict[int, list[str]]:
    """CANN timeline JSONs under `path/PROF_*/device_{n}/timeline/`, per device."""
    out: dict[int, list[str]] = {}
    try:
        profs = sorted(d for d in os.listdir(path) if _PROF.match(d) and os.path.isdir(os.path.join(path, d)))
    except OSError:
        return out
    for prof in profs:
        try:
            devs = sorted(os.listdir(os.path.join(path, prof)))
        except OSError:
            continue
        for d in devs:
            m = _DEVICE.match(d)
            tl = os.path.join(path, prof, d, "timeline")
            if not m or not os.path.isdir(tl):
                continue
            found = sorted(os.path.join(tl, f) for f in os.listdir(tl) if f.startswith("msprof_") and f.endswith(".json"))
            if found:
                out.setdefault(int(m.group(1)), []).extend(found)
    return out


def is_mindspore_dir(path: str, names: list[str]) -> bool:
    """A directory holding a MindSpore profiler file, by name and first bytes, or a CANN PROF_ dir."""
    for name in names:
        got = family_of(name)
        if got is None:
            continue
        head = HEADS.get(got[0])
        if head is not None and _starts_with(os.path.join(path, name), head):
            return True
    return bool(prof_timelines(path)) if any(_PROF.match(n) for n in names) else False


def devices(path: str) -> list[DeviceFiles]:
    """Every device of the directory with its files, by device id."""
    out: dict[int, DeviceFiles] = {}
    for name in sorted(os.listdir(path)):
        got = family_of(name)
        if got is None:
            continue
        fam, dev = got
        d = out.setdefault(dev, DeviceFiles(dev))
        if fam == "cluster":
            m = PATTERNS["cluster"].match(name)
            assert m is not None
            d.cluster = (m.group(2), int(m.group(3)), int(m.group(4)))
            d.cluster_device = m.group(1)
        d.files[fam] = os.path.join(path, name)
    return [out[k] for k in sorted(out)]
