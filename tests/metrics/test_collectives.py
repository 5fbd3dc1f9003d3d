"""Collective calls (metrics.collectives): nccl-tests' sizes and bus factors per collective type,
NCCL kernel names, and which record describes which kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perflint.graph.load import load_trace
from perflint.metrics.collectives import bus_factor, collective_type, collectives, gbps, message_bytes, nccl_kernel
from perflint.metrics.dtypes import dtype_size, scalar_dtype
from tests.builder import TraceBuilder

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


# --------------------------------------------------------------------------- nccl-tests' formulas


@pytest.mark.parametrize(
    ("kind", "n", "factor"),
    [
        ("all_reduce", 8, 2 * 7 / 8), ("all_reduce", 2, 1.0), ("all_reduce", 1, 0.0),
        ("all_gather", 8, 7 / 8), ("reduce_scatter", 4, 3 / 4), ("all_to_all", 16, 15 / 16),
        ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("send", 2, 1.0), ("recv", 2, 1.0), ("send_recv", None, 1.0),
        ("broadcast", None, 1.0),
        # no factor: unknown n where it matters, or a type nccl-tests gives none here
        ("all_reduce", None, None), ("all_gather", None, None), ("gather", 8, None), ("barrier", 8, None), (None, 8, None),
    ],
)  # fmt: skip
def test_bus_factor_per_collective(kind: str | None, n: int | None, factor: float | None) -> None:
    assert bus_factor(kind, n) == factor


@pytest.mark.parametrize(
    ("kind", "in_n", "out_n", "n", "elem", "want"),
    [
        ("all_reduce", 1000, 1000, 8, 2, 2000),  # the buffer
        ("broadcast", 10, 10, 8, 8, 80),
        ("reduce", 10, None, 8, 4, 40),
        ("all_gather", 125, 1000, 8, 4, 4000),  # the output: every rank's part
        ("all_gather", 125, None, 8, 4, 4000),  # the output from the input when only it is recorded
        ("all_gather", 125, None, None, 4, None),
        ("reduce_scatter", 1000, 125, 8, 4, 4000),  # the input
        ("reduce_scatter", None, 125, 8, 4, 4000),
        ("all_to_all", 1000, 1000, 8, 2, 2000),  # what a rank sends in all
        ("send", 300, None, 2, 4, 1200),
        ("recv", None, 300, 2, 4, 1200),
        ("all_reduce", 1000, 1000, 8, None, None),  # no element type: no size
        ("gather", 1000, 1000, 8, 4, None),
        (None, 1000, 1000, 8, 4, None),
    ],
)  # fmt: skip
def test_message_bytes_as_nccl_tests_counts_them(kind: str | None, in_n: int | None, out_n: int | None, n: int | None,
                                                 elem: int | None, want: int | None) -> None:  # fmt: skip
    assert message_bytes(kind, in_n, out_n, n, elem) == want


def test_bandwidth_is_decimal_gigabytes_per_second() -> None:
    assert gbps(1e9, 1e6) == pytest.approx(1.0)  # 1 GB in one second
    assert gbps(1000.0, 0.0) is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("allreduce", "all_reduce"), ("allreduce_coalesced", "all_reduce"), ("_allgather_base", "all_gather"),
        ("allgather_into_tensor_coalesced", "all_gather"), ("_reduce_scatter_base", "reduce_scatter"),
        ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("all_to_all", "all_to_all"), ("alltoall_base", "all_to_all"),
        ("broadcast", "broadcast"), ("reduce", "reduce"), ("send", "send"), ("recv", "recv"), ("recvAnySource", "recv"),
        ("barrier", "barrier"), ("gather", "gather"), ("scatter", "scatter"), ("SendRecv", "send_recv"),
        ("ncclAllReduce", "all_reduce"), ("nccl:all_reduce", "all_reduce"), ("c10d::allgather_", "all_gather"),
        ("wait", None), ("coalesced", None),
    ],
)  # fmt: skip
def test_collective_type_in_any_spelling(name: str, kind: str | None) -> None:
    assert collective_type(name) == kind


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", ("all_reduce", "fp32", "RING", "LL")),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_NVLS_SIMPLE", ("reduce_scatter", "bf16", "NVLS", "SIMPLE")),
        ("ncclDevKernel_AllReduce_Sum_f16_COLLNET_DIRECT_SIMPLE", ("all_reduce", "fp16", "COLLNET_DIRECT", "SIMPLE")),
        ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE", ("all_reduce", "bf16", "NVLS_TREE", "SIMPLE")),
        ("ncclDevKernel_AllGather_RING_LL128", ("all_gather", None, "RING", "LL128")),
        ("ncclDevKernel_Broadcast_RING_LL", ("broadcast", None, "RING", "LL")),
        ("ncclDevKernel_SendRecv", ("send_recv", None, None, None)),
        ("ncclDevKernel_Generic", (None, None, None, None)),
        # NCCL before 2.12: algorithm and protocol first, then the operation and type
        ("ncclKernel_AllReduce_RING_LL_Sum_float", ("all_reduce", "fp32", "RING", "LL")),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", ("send_recv", "int8", "RING", "SIMPLE")),
        ("ncclKernel_AllReduce_TREE_LL128_Sum_half", ("all_reduce", "fp16", "TREE", "LL128")),
    ],
)  # fmt: skip
def test_nccl_kernel_names(name: str, want: tuple[Any, ...]) -> None:
    k = nccl_kernel(name)
    assert k is not None
    assert (k.collective, k.dtype, k.algorithm, k.protocol) == want


@pytest.mark.parametrize("name", ["void at::native::reduce_kernel<512, 1>", "all_reduce_fusion_kernel", "nccl_helper"])
def test_other_kernels_are_not_nccl(name: str) -> None:
    assert nccl_kernel(name) is None


def test_recorded_dtypes() -> None:
    assert [scalar_dtype(d) for d in ("Float", "BFloat16", "Half", "Long", "Byte", "Float8_e4m3fn", "Weird")] == [
        "fp32", "bf16", "fp16", "int64", "uint8", "fp8", None,
    ]  # fmt: skip
    assert [dtype_size(scalar_dtype(d)) for d in ("Float", "BFloat16", "Long", "Byte", "ComplexDouble")] == [4, 2, 8, 1, 16]


# --------------------------------------------------------------------------- records and kernels

META = {
    "dtype": "BFloat16", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 4, "Process Group Name": "3",
    "Process Group Description": "dp", "Process Group Ranks": "[0, 1, 2, 3]", "Seq": 7,
}  # fmt: skip


def _trace(tmp_path: Path, build: Any) -> Any:
    b = TraceBuilder(device="NVIDIA H100 80GB HBM3", sm_count=132, cc=(9, 0), rank=0)
    build(b)
    return load_trace(b.write(tmp_path / "t.json"))


def test_record_on_the_launching_op(tmp_path: Path) -> None:
    def build(b: TraceBuilder) -> None:
        b.op("c10d::allreduce_", 10, 40)
        b.op("record_param_comms", 12, 30, args={"Collective name": "allreduce", **META})
        b.kernel(NCCL, 100, 50, launch_ts=20)

    (c,) = collectives(_trace(tmp_path, build))
    assert (c.kind, c.process_group, c.pg_desc, c.group_size, c.seq, c.dtype) == ("all_reduce", "3", "dp", 4, 7, "bf16")
    assert c.nbytes == 1024 * 2
    assert (c.time_us, len(c.kernels), c.algorithm, c.protocol) == (50.0, 1, "RING", "LL")


def test_record_on_the_kernel_and_its_op_is_one_call(tmp_path: Path) -> None:
    def build(b: TraceBuilder) -> None:
        b.op("record_param_comms", 12, 30, args={"Collective name": "allreduce", **META})
        b.kernel(NCCL, 100, 50, launch_ts=20, collective={"Collective name": "allreduce", **META, "Seq": 8})

    (c,) = collectives(_trace(tmp_path, build))
    assert c.seq == 8  # the kernel's own record first


def test_a_record_without_kernels_is_a_call_without_time(tmp_path: Path) -> None:
    def build(b: TraceBuilder) -> None:
        b.op("record_param_comms", 12, 30, args={"Collective name": "broadcast", **META, "dtype": "Long"})
        b.op("record_param_comms", 50, 3, args={"Collective name": "wait", "dtype": "Byte", "In msg nelems": 0})

    (c,) = collectives(_trace(tmp_path, build))  # work.wait() is no collective
    assert (c.kind, c.nbytes, c.time_us, c.kernels) == ("broadcast", 1024 * 8, None, [])


def test_kernels_without_records(tmp_path: Path) -> None:
    def build(b: TraceBuilder) -> None:
        b.op("c10d::alltoall_base_", 10, 40)
        b.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 100, 50, launch_ts=20)
        b.op("aten::add", 200, 20)
        b.kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", 300, 20, launch_ts=205)

    a2a, ag = collectives(_trace(tmp_path, build))
    # all-to-all runs as SendRecv kernels: the launching c10d op tells it from pipeline send/recv
    assert (a2a.kind, a2a.nbytes, a2a.process_group) == ("all_to_all", None, None)
    assert (ag.kind, ag.dtype, ag.algorithm, ag.protocol) == ("all_gather", None, "RING", "LL")  # a copy: no dtype


@pytest.mark.parametrize(
    "bad", [{"In msg nelems": "1024"}, {"In msg nelems": -5}, {"In msg nelems": 1.5}, {"In msg nelems": True}, {"dtype": 4},
            {"In msg nelems": None}, {"In msg nelems": 2**64}, {"In msg nelems": [1024]}],
)  # fmt: skip
def test_malformed_values_are_unknown(tmp_path: Path, bad: dict[str, Any]) -> None:
    meta = {k: v for k, v in META.items() if k != "Out msg nelems"}

    def build(b: TraceBuilder) -> None:
        b.op("record_param_comms", 12, 30, args={"Collective name": "allreduce", **meta, **bad})
        b.kernel(NCCL, 100, 50, launch_ts=20)

    (c,) = collectives(_trace(tmp_path, build))
    assert c.kind == "all_reduce" and c.time_us == 50.0
    assert c.nbytes is None


@pytest.mark.parametrize(
    ("meta", "n"),
    [
        ({"Group size": 4}, 4),
        ({"Process Group Ranks": "[0, 2, 4]"}, 3),  # a complete rank list
        ({"Process Group Ranks": "[0, 1, 2, ...]"}, None),  # a truncated one says nothing
        ({"Process Group Description": "default_pg"}, 16),  # the default group is every rank of the job
        ({"Process Group Description": "tp"}, None),
    ],
)
def test_group_size(tmp_path: Path, meta: dict[str, Any], n: int | None) -> None:
    def build(b: TraceBuilder) -> None:
        b.meta["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": 16}
        b.op("record_param_comms", 12, 30, args={"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 8, **meta})
        b.kernel(NCCL, 100, 50, launch_ts=20)

    (c,) = collectives(_trace(tmp_path, build))
    assert c.group_size == n
    assert c.nbytes == 32
