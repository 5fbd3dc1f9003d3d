"""Builder for small synthetic Kineto traces with exact, known timings.

Used by metric, graph and rule tests (and to write rule fixtures). Times are microseconds.

    b = TraceBuilder(device="NVIDIA A100-SXM4-80GB", sm_count=108, cc=(8, 0))
    b.step(1, ts=0, dur=1000)                                  # ProfilerStep#1 (user_annotation)
    b.op("aten::mm", ts=10, dur=100, dims=[[30, 100], [100, 37]], types=["c10::Half", "c10::Half"])
    b.kernel("ampere_sgemm_128x64_nn", ts=50, dur=200, launch_ts=20)   # + cudaLaunchKernel + flow
    b.memcpy(ts=300, dur=10, nbytes=4096, direction="HtoD", src="Pageable", launch_ts=30)
    b.runtime("cudaDeviceSynchronize", ts=60, dur=300)
    b.write(path)                                              # .json or .json.gz

Kernels are launched by a runtime call on the CPU thread at `launch_ts` (inside whatever op
encloses that time), linked by a correlation id, as Kineto writes them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


class TraceBuilder:
    def __init__(
        self,
        device: str | None = "NVIDIA A100-SXM4-80GB",
        sm_count: int = 108,
        cc: tuple[int, int] = (8, 0),
        total_memory: int = 85_899_345_920,
        pid: int = 1000,
        tid: int = 1000,
        rank: int | None = None,
        warp_size: int = 32,
    ) -> None:
        self.pid, self.tid = pid, tid
        self.events: list[dict[str, Any]] = []
        self.meta: dict[str, Any] = {"schemaVersion": 1}
        if device is not None:
            self.meta["deviceProperties"] = [
                {
                    "id": 0,
                    "name": device,
                    "totalGlobalMem": total_memory,
                    "computeMajor": cc[0],
                    "computeMinor": cc[1],
                    "maxThreadsPerBlock": 1024,
                    "maxThreadsPerMultiprocessor": 2048,
                    "regsPerBlock": 65536,
                    "regsPerMultiprocessor": 65536,
                    "warpSize": warp_size,
                    "sharedMemPerBlock": 49152,
                    "sharedMemPerMultiprocessor": 167936,
                    "numSms": sm_count,
                    "sharedMemPerBlockOptin": 166912,
                }
            ]
        if rank is not None:
            self.meta["distributedInfo"] = {"rank": rank, "world_size": rank + 1}
        self._corr = 1000
        self._ext = 1

    def _next_ext(self) -> int:
        self._ext += 1
        return self._ext

    def step(self, n: int, ts: float, dur: float) -> None:
        self.events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": self.pid, "tid": self.tid,
             "ts": ts, "dur": dur, "args": {"External id": self._next_ext()}}
        )

    def op(
        self,
        name: str,
        ts: float,
        dur: float,
        dims: list[Any] | None = None,
        types: list[str] | None = None,
        seq: int | None = None,
        fwd_tid: int | None = None,
        cat: str = "cpu_op",
        tid: int | None = None,
        stack: str | None = None,
        concrete: list[str] | None = None,
        args: dict[str, Any] | None = None,
    ) -> int:
        ext = self._next_ext()
        extra = args
        args = {"External id": ext}
        if dims is not None:
            args["Input Dims"] = dims
        if types is not None:
            args["Input type"] = types
        if seq is not None:
            args["Sequence number"] = seq
        if fwd_tid is not None:
            args["Fwd thread id"] = fwd_tid
        if stack is not None:
            args["Call stack"] = stack
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        if extra:
            args.update(extra)
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.tid if tid is None else tid,
             "ts": ts, "dur": dur, "args": args}
        )
        return ext

    def annotation(self, name: str, ts: float, dur: float, tid: int | None = None) -> int:
        return self.op(name, ts, dur, cat="user_annotation", tid=tid)

    def runtime(self, name: str, ts: float, dur: float, correlation: int | None = None, tid: int | None = None) -> int:
        if correlation is None:
            self._corr += 1
            correlation = self._corr
        self.events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid, "tid": self.tid if tid is None else tid,
             "ts": ts, "dur": dur, "args": {"cbid": 211, "correlation": correlation}}
        )
        return correlation

    def _gpu(
        self, cat: str, name: str, ts: float, dur: float, stream: int, launch_ts: float | None,
        launch_name: str, launch_dur: float, args: dict[str, Any], device: int = 0,
    ) -> int:
        self._corr += 1
        corr = self._corr
        lts = ts - 5 if launch_ts is None else launch_ts
        self.runtime(launch_name, lts, launch_dur, correlation=corr)
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.tid, "ts": lts, "cat": "ac2g", "name": "ac2g"})
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur,
             "args": {"device": device, "context": 1, "stream": stream, "correlation": corr, **args}}
        )
        self.events.append({"ph": "f", "id": corr, "pid": device, "tid": stream, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        return corr

    def kernel(
        self,
        name: str,
        ts: float,
        dur: float,
        launch_ts: float | None = None,
        launch_dur: float = 5.0,
        stream: int = 7,
        grid: tuple[int, int, int] = (108, 1, 1),
        block: tuple[int, int, int] = (256, 1, 1),
        blocks_per_sm: float | None = 1.0,
        occupancy: float | None = 50.0,
        registers: int = 32,
        shared_memory: int = 0,
        collective: dict[str, Any] | None = None,
        runtime: str = "cudaLaunchKernel",
        device: int = 0,
    ) -> int:
        args: dict[str, Any] = {"queued": 0, "registers per thread": registers, "shared memory": shared_memory,
                                "grid": list(grid), "block": list(block)}
        if blocks_per_sm is not None:
            args["blocks per SM"] = blocks_per_sm
            args["warps per SM"] = blocks_per_sm * (block[0] * block[1] * block[2]) / 32
        if occupancy is not None:
            args["est. achieved occupancy %"] = occupancy
        if collective:
            args.update(collective)
        return self._gpu("kernel", name, ts, dur, stream, launch_ts, runtime, launch_dur, args, device)

    def memcpy(
        self,
        ts: float,
        dur: float,
        nbytes: int,
        direction: str = "HtoD",
        src: str = "Pageable",
        dst: str = "Device",
        launch_ts: float | None = None,
        runtime: str = "cudaMemcpyAsync",
        launch_dur: float = 5.0,
        stream: int = 7,
    ) -> int:
        name = f"Memcpy {direction} ({src} -> {dst})"
        return self._gpu("gpu_memcpy", name, ts, dur, stream, launch_ts, runtime, launch_dur, {"bytes": nbytes}, 0)

    def memset(self, ts: float, dur: float, nbytes: int, launch_ts: float | None = None, stream: int = 7) -> int:
        return self._gpu("gpu_memset", "Memset (Device)", ts, dur, stream, launch_ts, "cudaMemsetAsync", 3.0, {"bytes": nbytes}, 0)

    def event_record(self, ts: float, dur: float = 3.0) -> int:
        """A cudaEventRecord call (its correlation id names the event in the waits below)."""
        return self.runtime("cudaEventRecord", ts, dur)

    def stream_wait_event(self, ts: float, stream: int, record: int, record_stream: int, dur: float = 2.0) -> int:
        """A cudaStreamWaitEvent call making `stream` wait for the event `record` recorded on
        `record_stream`, with the cuda_sync record Kineto writes for it."""
        corr = self.runtime("cudaStreamWaitEvent", ts, dur)
        self.events.append(
            {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": stream, "ts": ts + 1, "dur": 0,
             "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": record_stream, "wait_on_cuda_event_record_corr_id": record,
                      "wait_on_cuda_event_id": 1, "stream": stream, "correlation": corr, "device": 0, "context": 1}}
        )  # fmt: skip
        return corr

    def wait_for_gpu(self, ts: float, until: float) -> None:
        """A cudaDeviceSynchronize from `ts` that returns 2 us after `until` (the end of the step's
        GPU work): the step waits on its GPU work, as a loop that reads its loss each step does."""
        self.runtime("cudaDeviceSynchronize", ts, until + 2 - ts)

    def pyfn(self, name: str, ts: float, dur: float, tid: int | None = None) -> None:
        self.events.append(
            {"ph": "X", "cat": "python_function", "name": name, "pid": self.pid, "tid": self.tid if tid is None else tid,
             "ts": ts, "dur": dur, "args": {}}
        )

    def memory(self, ts: float, nbytes: int, total_allocated: int, total_reserved: int, device_type: int = 1,
               device_id: int = 0) -> None:
        self.events.append(
            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": self.pid, "tid": self.tid,
             "ts": ts, "args": {"Bytes": nbytes, "Total Allocated": total_allocated, "Total Reserved": total_reserved,
                                "Device Type": device_type, "Device Id": device_id}}
        )

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta, "traceEvents": list(self.events)}

    def write(self, path: str | Path) -> str:
        path = Path(path)
        data = json.dumps(self.to_dict(), indent=0).encode()
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(data, mtime=0))
        else:
            path.write_bytes(data)
        return str(path)


def write_rank_run(directory: Path, ranks: int) -> Path:
    """`ranks` small rank files under `directory` (made), each with four steps of one GEMM whose
    step and kernel time grow with the rank: a run whose findings repeat across ranks."""
    directory.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        b = TraceBuilder(rank=r)
        for s in range(4):
            t0 = s * 1000.0
            b.step(s + 1, t0, 900.0 + 10 * r)
            b.op("aten::mm", t0 + 10, 300.0)
            b.kernel("gemm_kernel", t0 + 50, 200.0 + 5 * r, launch_ts=t0 + 20)
        b.write(directory / f"rank{r}.json")
    return directory
