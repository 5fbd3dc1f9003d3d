"""The normalized trace: compact columnar tables, one per event class.

Readers fill these; the graph step links them; metrics and rules only read them.
Events live in numpy columns (never one Python object per event) because traces
reach gigabytes. Strings are interned into `Trace.strings`; columns hold ids.
Times are microseconds as float64, as in the Chrome trace format.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from perflint.ids import distinct
from perflint.memo import Memo

# GPU activity kinds.
KERNEL = 0
MEMCPY = 1
MEMSET = 2
GPU_SYNC = 3  # device-side cuda_sync records: not GPU work
KIND_NAMES = ("kernel", "memcpy", "memset", "sync")
# The names of GPU_SYNC records, as Kineto's cuda_sync_kind spells them; readers of CUPTI's sync
# types (nsys, nvprof) use the same ones. CUPTI_SYNC_NAMES: by CUpti_ActivitySynchronizationType.
EVENT_SYNC = "Event Sync"
STREAM_WAIT_EVENT = "Stream Wait Event"
CUPTI_SYNC_NAMES = {0: "Unknown Sync", 1: EVENT_SYNC, 2: STREAM_WAIT_EVENT, 3: "Stream Sync", 4: "Context Sync"}

# CPU op kinds.
OP_CPU = 0
OP_ANNOTATION = 1

NONE = -1  # missing integer value / missing link

_SLICE = 1 << 18  # rows per slice where a column is worked through a slice at a time

# Annotation ops named with this prefix span the time a step waited for its input data, as a
# profiler that measures it directly records it (MindSpore's iteration interval).
DATA_WAIT_PREFIX = "DataWait#"


@dataclass(frozen=True)
class Device:
    id: int
    name: str = ""
    vendor: str = "unknown"  # nvidia | amd | mtia | unknown
    sm_count: int | None = None
    compute_capability: tuple[int, int] | None = None
    max_threads_per_sm: int | None = None
    regs_per_sm: int | None = None
    regs_per_block: int | None = None
    shared_mem_per_sm: int | None = None
    shared_mem_per_block: int | None = None
    max_blocks_per_sm: int | None = None
    warp_size: int = 32
    total_memory: int | None = None

    @property
    def cc_str(self) -> str | None:
        if self.compute_capability is None:
            return None
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


def _same_part(a: Device, b: Device) -> bool:
    """Two devices of one part: equal but for the id, and total memory within 1% (drivers reserve
    a few MB more on some devices of one machine)."""
    if replace(a, id=0, total_memory=None) != replace(b, id=0, total_memory=None):
        return False
    ma, mb = a.total_memory, b.total_memory
    if ma is None or mb is None:
        return ma == mb
    return abs(ma - mb) <= 0.01 * max(ma, mb)


def one_part(devices: dict[int, Device]) -> Device | None:
    """The device every entry describes when all are one part (the lowest id's entry), else None."""
    if not devices:
        return None
    first = devices[min(devices)]
    return first if all(_same_part(first, d) for d in devices.values()) else None


@dataclass
class Table:
    """A set of equal-length numpy columns."""

    def __len__(self) -> int:
        first = next(iter(vars(self).values()))
        return int(len(first))


@dataclass
class OpTable(Table):
    kind: np.ndarray  # int8: OP_CPU | OP_ANNOTATION
    name: np.ndarray  # int32 string id
    thread: np.ndarray  # int32 index into Trace.threads
    ts: np.ndarray  # float64 µs
    dur: np.ndarray  # float64 µs
    ext_id: np.ndarray  # int64
    seq: np.ndarray  # int64 autograd sequence number
    fwd_tid: np.ndarray  # int64 forward thread id (set on backward ops)
    dims: np.ndarray  # int32 string id of the raw JSON "Input Dims"
    types: np.ndarray  # int32 string id of the raw JSON "Input type"
    concrete: np.ndarray  # int32 string id of the raw JSON "Concrete Inputs" (scalar args as text)
    stack: np.ndarray  # int32 string id of "Call stack"
    pycall: np.ndarray  # int32 string id of the Python call the op ran as, "module.function" (pyprof's mod and op), NONE unknown
    # Filled by the graph step:
    parent: np.ndarray  # int32 op index
    depth: np.ndarray  # int16
    source: np.ndarray  # int32 string id of the user's "file.py:LINE" (or NONE)
    fwd_op: np.ndarray  # int32 op index of the forward op of a backward op


@dataclass
class RuntimeTable(Table):
    name: np.ndarray
    thread: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    correlation: np.ndarray  # int64, or int32 where a format records 32-bit ids (CUPTI)
    ext_id: np.ndarray
    op: np.ndarray  # int32 innermost enclosing op (graph step)


@dataclass
class GpuTable(Table):
    kind: np.ndarray  # int8 KERNEL | MEMCPY | MEMSET | GPU_SYNC
    name: np.ndarray
    device: np.ndarray  # int32
    stream: np.ndarray  # int64, or int32 where a format records 32-bit ids (CUPTI)
    ts: np.ndarray
    dur: np.ndarray
    correlation: np.ndarray  # as RuntimeTable.correlation
    ext_id: np.ndarray
    grid: np.ndarray  # int32 (n, 3); 0 when unknown
    block: np.ndarray  # int32 (n, 3)
    regs: np.ndarray  # int32 registers per thread
    shmem: np.ndarray  # int32 shared memory bytes per block
    blocks_per_sm: np.ndarray  # float64, nan when unknown
    warps_per_sm: np.ndarray  # float64
    occupancy: np.ndarray  # float64 est. achieved occupancy %, nan when unknown
    nbytes: np.ndarray  # int64 bytes moved by memcpy/memset
    collective: np.ndarray  # int32 string id of NCCL "Collective name"
    # A sync record of an event wait: the stream the event was recorded on and the correlation id
    # of the call that recorded it (NONE: not an event wait, or not recorded). Usually a read-only
    # broadcast of NONE.
    wait_stream: np.ndarray  # int64
    wait_corr: np.ndarray  # int64
    # Filled by the graph step:
    launch: np.ndarray  # int32 runtime index


@dataclass
class PyFnTable(Table):
    name: np.ndarray  # string id of "path/file.py(LINE): func"
    thread: np.ndarray
    ts: np.ndarray
    dur: np.ndarray


@dataclass
class MemoryTable(Table):
    thread: np.ndarray
    ts: np.ndarray
    nbytes: np.ndarray  # int64 (negative = free)
    total_allocated: np.ndarray  # int64, -1 unknown
    total_reserved: np.ndarray
    device_type: np.ndarray  # int16 (0 CPU, 1 CUDA ...)
    device_id: np.ndarray  # int16


# CommTable.side: the event that recorded the collective's metadata.
COMM_OP = 0  # the op that launched it (PyTorch's record_param_comms): linked by External id
COMM_GPU = 1  # the collective's GPU activity itself: linked by correlation id


@dataclass
class CommTable(Table):
    """Collective metadata as the profiler recorded it: one row per event that carries it (only
    those, so the table is small or empty). Counts are NONE where not recorded or not a
    non-negative integer; strings are ids (NONE unknown)."""

    side: np.ndarray  # int8 COMM_OP | COMM_GPU
    ext_id: np.ndarray  # int64 the event's External id (COMM_OP: the op's)
    correlation: np.ndarray  # int64 the GPU activity's correlation id (COMM_GPU)
    name: np.ndarray  # int32 the collective as recorded ("allreduce", "_allgather_base", ...)
    dtype: np.ndarray  # int32 element type as recorded ("Float", "BFloat16", ...)
    in_nelems: np.ndarray  # int64 elements in the input message
    out_nelems: np.ndarray  # int64 elements in the output message
    group_size: np.ndarray  # int64 ranks in the process group
    seq: np.ndarray  # int64 the collective's sequence number in its process group
    rank_start: np.ndarray  # int64 the group's first global rank
    rank_stride: np.ndarray  # int64 the stride of its global ranks
    pg_name: np.ndarray  # int32 process group name
    pg_desc: np.ndarray  # int32 process group description ("default_pg")
    pg_ranks: np.ndarray  # int32 the group's global ranks as recorded ("[0, 1, 2, 3]")


def empty_comms() -> CommTable:
    i64, i32 = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    return CommTable(
        side=np.zeros(0, dtype=np.int8), ext_id=i64, correlation=i64, name=i32, dtype=i32, in_nelems=i64,
        out_nelems=i64, group_size=i64, seq=i64, rank_start=i64, rank_stride=i64, pg_name=i32, pg_desc=i32, pg_ranks=i32,
    )  # fmt: skip


@dataclass(frozen=True)
class Step:
    number: int
    name: str
    ts: float
    dur: float
    op: int  # index in OpTable

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass
class CounterRange:
    """A CUPTI profiler-mode range: one kernel's counters, without a kernel event."""

    name: int
    ts: float
    dur: float
    counters: dict[str, float]
    launch: int = -1  # runtime index of the cudaLaunchKernel it belongs to (graph step)


# What a trace lacks, and how to record it, in its profiler's words (`Trace.recording` overrides
# these per format): `X` names the data, `X_hint` is the short how, `X_fix` the full advice.
DEFAULT_RECORDING: dict[str, str] = {
    "steps": "step markers",
    "steps_hint": "the profile does not mark iterations",
    "steps_fix": "Record the profile with one step marker per training/inference iteration.",
    "shapes": "operator input shapes",
    "shapes_hint": "the profiler did not record them",
    "shapes_fix": "Record the profile with operator input shapes.",
    "device": "device properties",
    "device_hint": "the profiler did not record them",
    "device_fix": "Record the profile with the device's properties (SM count, compute capability, memory).",
    "memory": "memory allocation events",
    "memory_hint": "the profiler did not record them",
}


@dataclass
class Trace:
    path: str
    format: str
    strings: list[str]
    threads: list[tuple[str, str]]  # (pid, tid) as strings
    ops: OpTable
    runtime: RuntimeTable
    gpu: GpuTable
    pyfn: PyFnTable
    memory: MemoryTable
    comms: CommTable = field(default_factory=empty_comms)
    counter_ranges: list[CounterRange] = field(default_factory=list)
    devices: dict[int, Device] = field(default_factory=dict)
    rank: int | None = None
    world_size: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # How this trace's profiler records what a rule may find missing (keys of DEFAULT_RECORDING).
    recording: dict[str, str] = field(default_factory=dict)
    # Lazily decoded JSON blobs (Input Dims etc.), keyed by string id.
    _decoded: dict[int, Any] = field(default_factory=dict, repr=False)
    # Derived per-trace data computed once by graph and metrics (kernel classes, launch times...).
    memo: Memo = field(default_factory=Memo, repr=False, compare=False)

    def __repr__(self) -> str:
        # The dataclass repr would print every column and string: thousands of lines.
        rank = "" if self.rank is None else f", rank={self.rank}"
        return (
            f"Trace({self.path!r}, format={self.format!r}{rank}, ops={len(self.ops)}, runtime={len(self.runtime)}, "
            f"gpu={len(self.gpu)}, steps={len(self.steps)}, devices={sorted(self.devices)}, warnings={len(self.warnings)})"
        )

    def recorded(self, key: str) -> str:
        """The words for `key` of DEFAULT_RECORDING in this trace's profiler's terms."""
        return self.recording.get(key) or DEFAULT_RECORDING[key]

    def s(self, sid: int) -> str:
        return self.strings[sid] if sid >= 0 else ""

    def decoded(self, sid: int) -> Any:
        """The parsed JSON value behind an interned raw-JSON string id (None if missing/bad)."""
        if sid < 0:
            return None
        if sid not in self._decoded:
            import orjson

            try:
                self._decoded[sid] = orjson.loads(self.strings[sid])
            except orjson.JSONDecodeError:
                self._decoded[sid] = None
        return self._decoded[sid]

    @property
    def label(self) -> str:
        return self.path if self.rank is None else f"{self.path} [rank {self.rank}]"

    def device(self, dev_id: int) -> Device | None:
        """Device `dev_id`. One the trace does not list takes the listed devices' properties when
        they are all one part: the ids kernels record and the ids of deviceProperties can number
        the same GPUs differently (ROCm's visible devices, CUDA_VISIBLE_DEVICES). When the listed
        devices differ, which one ran the kernels is unknown: None."""
        if dev_id in self.devices:
            return self.devices[dev_id]
        part = one_part(self.devices)
        return replace(part, id=dev_id) if part is not None else None

    def kernel_devices(self) -> list[int]:
        """The device ids kernels ran on, ascending (a slice of rows at a time)."""
        g = self.gpu
        ids: set[int] = set()
        for i in range(0, len(g), _SLICE):
            ids.update(distinct(g.device[i : i + _SLICE][g.kind[i : i + _SLICE] == KERNEL]))
        return sorted(ids)

    @property
    def primary_device(self) -> Device | None:
        """The device doing most kernel work (a rank usually drives one GPU)."""
        g = self.gpu
        if len(g) == 0:
            return next(iter(self.devices.values()), None) if len(self.devices) == 1 else None
        # Kernels per device id, a slice of rows at a time (no compacted copy or sort of the
        # whole column). Ties go to the lowest id.
        counts: dict[int, int] = {}
        for i in range(0, len(g), _SLICE):
            d = g.device[i : i + _SLICE][g.kind[i : i + _SLICE] == KERNEL]
            for k, c in zip(*(a.tolist() for a in np.unique(d, return_counts=True))):
                counts[k] = counts.get(k, 0) + c
        if not counts:
            return None
        dev_id = min(counts, key=lambda k: (-counts[k], k))
        # Without device properties the vendor is what the trace says otherwise (an MTIA process group).
        return self.device(dev_id) or Device(id=dev_id, vendor=str(self.meta.get("device_vendor") or "unknown"))
