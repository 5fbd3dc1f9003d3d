"""msgspec structs for the Kineto / Chrome-trace JSON fields perflint reads.

The structs hold no references the cyclic GC must trace (`gc=False`: they are never
tracked, so millions of them cost the collector nothing). Decoding straight into these structs (unknown keys skipped in C) is several times
faster and smaller than building dicts; see DESIGN §9. Field names are the Kineto
arg names across versions (old traces say "external id", new "External id").
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
from msgspec import field

EMPTY_RAW = msgspec.Raw()


class Args(msgspec.Struct, omit_defaults=True, gc=False):
    ext: Any = field(name="External id", default=None)
    ext_lc: Any = field(name="external id", default=None)
    correlation: Any = None
    seq: Any = field(name="Sequence number", default=None)
    fwd_tid: Any = field(name="Fwd thread id", default=None)
    dims: msgspec.Raw = field(name="Input Dims", default=EMPTY_RAW)
    types: msgspec.Raw = field(name="Input type", default=EMPTY_RAW)
    stack: Any = field(name="Call stack", default=None)
    grid: Any = None
    block: Any = None
    grid_dim: Any = None  # MindSpore GPU timeline ("8,1,1")
    block_dim: Any = None
    regs: Any = field(name="registers per thread", default=None)
    shmem: Any = field(name="shared memory", default=None)
    blocks_per_sm: Any = field(name="blocks per SM", default=None)
    warps_per_sm: Any = field(name="warps per SM", default=None)
    occupancy: Any = field(name="est. achieved occupancy %", default=None)
    stream: Any = None
    device: Any = None
    nbytes: Any = field(name="bytes", default=None)
    collective: Any = field(name="Collective name", default=None)
    # [memory] instant events
    mem_bytes: Any = field(name="Bytes", default=None)
    total_allocated: Any = field(name="Total Allocated", default=None)
    total_reserved: Any = field(name="Total Reserved", default=None)
    device_type: Any = field(name="Device Type", default=None)
    device_id: Any = field(name="Device Id", default=None)


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Union[Args, None] = None


class TraceFile(msgspec.Struct, gc=False):
    traceEvents: list[Event]
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    schemaVersion: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    cupti_version: Any = None


TraceDoc = Union[TraceFile, list[Event]]
DECODER: msgspec.json.Decoder[TraceDoc] = msgspec.json.Decoder(TraceDoc)
# One slice of the traceEvents array, wrapped in brackets (the chunked reader).
EVENTS_DECODER: msgspec.json.Decoder[list[Event]] = msgspec.json.Decoder(list[Event])
DEFAULT_ARGS = Args()
