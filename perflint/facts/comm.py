"""Communication (NCCL / RCCL collectives) per trace: share of the step and overlap with compute.

Where a trace has no communication kernels but the host ran the collectives itself (the gloo
backend, on CPU-only training: `gloo:all_reduce` spans), communication is the union of those
spans and nothing is counted as hiding it (`comm_source` says which).

- comm_pct: communication kernel time (union of comm kernel spans) inside the analysis steps /
  step time. Steps are timed as the TB plugin times them: extended to the end of the GPU work
  they launched (`step_windows`), so the share stays <= 100% when the GPU lags the CPU.
- comm_exposed_pct: the part no compute kernel, memcpy or memset hides — the TensorBoard
  plugin's "Communication" role, which ranks below Kernel/Memcpy/Memset in its step breakdown
  and is what its "> 10% of the step time is in communication" recommendation uses.
- comm_overlap_pct: |comm ∩ compute| / |comm|, as HTA's get_comm_comp_overlap computes it
  (compute = kernels that are not communication, memcpy or memset).

Where a trace has no compute kernels but its profiler measured each step's compute and the
communication nothing overlapped (MindSpore's cluster analysis, `meta["step_breakdown"]`), those
give compute_us and comm_exposed_*, and communication time is the union of the recorded
communication spans per step (`breakdown_source` says so).

Fields are added to the `trace` scope (one row per trace / rank). `compute_time_us` (kernel
time that is not communication) is there too: the straggler rule compares it across ranks,
because fast ranks spend their wait for the slow one inside the collectives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, capability, enricher, typed
from perflint.facts import rows as fact_rows
from perflint.facts._common import kernel_op, model, op_info, window_mask
from perflint.facts._spans import EMPTY, Spans, length, spans, step_windows, union
from perflint.facts.collectives import collective_evidence
from perflint.graph.names import ops_named
from perflint.metrics.collectives import collective_kind, collectives, kernel_calls
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.model import KERNEL, MEMCPY, MEMSET, NONE, Trace

FIELDS: Fields = {
    "comm_kernels": typed("communication kernels running in the analysis steps (null for host collectives)", "integer"),
    "comm_time_us": "communication kernel time (union of spans) inside the analysis steps",
    "comm_us": "communication time per analysis step (us)",
    "comm_pct": "communication time / step time, %",
    "comm_exposed_us": "communication time per step not hidden by compute, memcpy or memset (us)",
    "comm_exposed_pct": "exposed communication / step time, % (TB plugin Communication role)",
    "comm_overlap_pct": "HTA compute/communication overlap: |comm ∩ compute| / |comm|, %",
    "compute_time_us": "non-communication kernel time launched in the analysis steps",
    "compute_us": "non-communication kernel time per analysis step (us)",
    "collectives": typed("collective names recorded on comm kernels (Collective name arg), comma-separated", "text"),
    "comm_source": typed("'host' when the collectives ran on the CPU (gloo spans), null for NCCL/RCCL kernels", "text"),
    "comm_traffic": typed("what the communication is for, by the collective with the most kernel time: expert_parallel (all-to-all: MoE experts, sharded embeddings), tensor_parallel (all-reduce on forward ops), data_parallel, pipeline (send/recv), other", "text"),
    "comm_advice": typed("the fix for that traffic, in words", "text"),
    "comm_recorded_wait_us": "per step (median over the analysis steps), the time the rank's collectives waited for their peers as the profiler itself recorded it (MindSpore's HCCL wait_cost); null where it records none",
    "comm_recorded_wait_rank": typed("the peer whose transfers held most of that wait (HCCL's per-link wait), where recorded", "integer"),
    "comm_evidence": typed("the numbers behind the advice: the collective with the most kernel time, its calls, bytes and time per step, its bus bandwidth beside the link's peak", "text"),
    "breakdown_source": typed("where compute and exposed communication come from when the trace has no compute kernels: "
                              "the profiler's own per-step breakdown (MindSpore's cluster analysis); null when kernels give them", "text"),
}

_HOST_COLLECTIVE = ("gloo:",)

_COMM = CAT_INDEX["communication"]


def comm_mask(t: Trace) -> np.ndarray:
    mask: np.ndarray = (t.gpu.kind == KERNEL) & (classify(t).category == _COMM)
    return mask


def host_collectives(t: Trace) -> np.ndarray:
    """Op rows of collectives the host ran itself (gloo)."""
    return ops_named(t, _is_host_collective)


def _is_host_collective(name: str) -> bool:
    return name.startswith(_HOST_COLLECTIVE)


@capability("communication", "the trace has communication (NCCL/RCCL kernels, gloo collectives, or a profiler's per-step communication)")
def _has_comm(t: Trace) -> str | None:
    if comm_mask(t).any() or len(host_collectives(t)) or any(v > 0 for v in _breakdown(t).get("comm_exposed_us", ())):
        return None
    if t.world_size is not None and t.world_size > 1:
        # A rank of a larger job: its communication ran in kernels perflint does not know as
        # such, or outside the profiled window. Never "a single-process run".
        return (
            f"the trace records no communication perflint knows (no NCCL/RCCL, expert-parallel or gloo collectives) "
            f"although it is a rank of a {t.world_size}-process job"
        )
    return "the trace has no communication (no NCCL/RCCL kernels, no gloo collectives): a single-process run"


def _spans_of(t: Trace, mask: np.ndarray) -> Spans:
    g = t.gpu
    return spans(g.ts[mask], g.ts[mask] + g.dur[mask]) if mask.any() else EMPTY


def _in_windows(a: Spans, wins: list[tuple[float, float]]) -> list[float]:
    return [length(a, lo, hi) for lo, hi in wins]


def _overlap_in_windows(a: Spans, a_len: list[float], b: Spans, wins: list[tuple[float, float]]) -> float:
    """sum over windows of overlap(a, b, lo, hi), with |a| per window (`a_len`) and a ∪ b computed once."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return sum(0.0 for _ in wins)
    ab = union(a, b)
    return sum(
        max(0.0, la + length(b, lo, hi) - length(ab, lo, hi)) for la, (lo, hi) in zip(a_len, wins)
    )


def comm_numbers(ctx: Context) -> dict[str, Any]:
    t = ctx.trace
    g = t.gpu
    out: dict[str, Any] = {k: None for k in FIELDS}
    kern = g.kind == KERNEL
    comm = kern & comm_mask(t)
    # compute time per step for rank comparisons: kernels launched in the analysis steps
    compute_win = window_mask(ctx) & kern & ~comm
    n_steps = len(ctx.steps)
    if _breakdown(t) and not (kern & ~comm).any():
        return _recorded_numbers(ctx, out, comm)
    compute_time = float(g.dur[compute_win].sum())
    out["compute_time_us"] = compute_time
    out["compute_us"] = compute_time / n_steps if n_steps else compute_time
    # Shares: device time inside the (device-extended) analysis steps, as the TB plugin clips
    # its roles to steps; without steps the whole trace is one window.
    wins = step_windows(ctx)
    lo_all = min((w[0] for w in wins), default=0.0)
    hi_all = max((w[1] for w in wins), default=0.0)
    live = (g.ts < hi_all) & (g.ts + g.dur > lo_all)
    comm &= live
    out["comm_kernels"] = int(comm.sum())
    if not comm.any():
        return _host_numbers(ctx, out) if n_steps else out
    if not wins:
        return out
    cs = _spans_of(t, comm)
    comp = _spans_of(t, kern & ~comm & live)
    hiding = union(comp, _spans_of(t, live & ((g.kind == MEMCPY) | (g.kind == MEMSET))))
    cs_len = _in_windows(cs, wins)
    comm_time = sum(cs_len)
    exposed = max(0.0, comm_time - _overlap_in_windows(cs, cs_len, hiding, wins))
    total = sum(hi - lo for lo, hi in wins)
    per = float(len(wins))
    out["comm_time_us"] = comm_time
    out["comm_us"] = comm_time / per
    out["comm_exposed_us"] = exposed / per
    if total > 0:
        out["comm_pct"] = 100.0 * comm_time / total
        out["comm_exposed_pct"] = 100.0 * exposed / total
    out["comm_overlap_pct"] = 100.0 * _overlap_in_windows(cs, cs_len, comp, wins) / comm_time if comm_time > 0 else None
    names = sorted({t.s(int(c)) for c in g.collective[comm].tolist() if c >= 0})
    out["collectives"] = ", ".join(names) if names else None
    out["comm_traffic"] = _traffic(ctx, np.flatnonzero(comm))
    out["comm_advice"] = ADVICE[out["comm_traffic"]]
    out["comm_evidence"] = collective_evidence(fact_rows(ctx, "collectives"))
    return out


def _traffic(ctx: Context, rows: np.ndarray) -> str:
    """What the communication is for, by the collective kind with the most kernel time:
    expert_parallel (all-to-all), tensor_parallel (all-reduce launched by forward ops),
    data_parallel (all-reduce, reduce-scatter, all-gather otherwise), pipeline (send/recv), other.
    A kernel's kind comes from the collective name recorded for its call (on the kernel, else on
    the op that launched it: metrics.collectives), else from the collective op that launched it (c10d::alltoall_base_), else from its own name: NCCL runs all-to-all as
    SendRecv kernels, which only the first two tell from pipeline send/recv."""
    t = ctx.trace
    g = t.gpu
    time: dict[str, float] = {}
    kop = kernel_op(t, rows)
    by_op: dict[int, tuple[str | None, bool]] = {}
    calls, call_of = collectives(t), kernel_calls(t)
    for r, op in zip(rows.tolist(), kop.tolist()):
        # the name recorded for its call (on the kernel, else on its launching op)
        k = call_of.get(r)
        recorded = calls[k].recorded if k is not None else None
        kind = collective_kind(recorded) if recorded else None
        forward = False
        if op != NONE:
            if op not in by_op:
                info = op_info(ctx, op)
                of_stack = next((k for k in map(collective_kind, reversed(info.stack)) if k), None)
                ddp = any("reducer" in n or "DistributedDataParallel" in n or "AccumulateGrad" in n for n in info.stack)
                by_op[op] = (of_stack, bool(info.stack) and not info.is_backward and not ddp)
            of_stack, forward = by_op[op]
            kind = kind or of_stack
        kind = kind or collective_kind(t.s(int(g.name[r]))) or "other"
        if kind == "all_reduce" and forward:
            kind = "tp_all_reduce"
        time[kind] = time.get(kind, 0.0) + float(g.dur[r])
    top = max(time, key=lambda k: time[k]) if time else "other"
    return {
        "all_to_all": "expert_parallel", "tp_all_reduce": "tensor_parallel", "all_reduce": "data_parallel",
        "reduce_scatter": "data_parallel", "all_gather": "data_parallel", "send_recv": "pipeline",
    }.get(top, "other")  # fmt: skip


ADVICE = {
    "expert_parallel": (
        "The communication is all-to-all (expert parallelism: MoE token dispatch and combine; embedding "
        "tables sharded across ranks exchange the same way). Balance the experts' (or shards') load (auxiliary load-balancing loss, capacity factor), keep tokens on their node where the "
        "router allows (node-limited routing), and overlap dispatch and combine with the experts' or shared "
        "experts' compute (micro-batch pipelining, DeepEP's low-latency kernels with hooks). DDP gradient "
        "bucketing does not apply to this traffic."
    ),
    "tensor_parallel": (
        "The communication is all-reduce on each layer's forward (tensor parallelism): it sits on the critical "
        "path of every layer, so gradient bucketing does not apply. Overlap it with sequence parallelism "
        "(reduce-scatter + all-gather around the norms) or fused GEMM + communication kernels, keep each "
        "tensor-parallel group inside one NVLink domain, or use fewer tensor-parallel ranks per layer."
    ),
    "data_parallel": (
        "The communication is data-parallel gradient traffic (all-reduce, reduce-scatter, all-gather). Send "
        "less or less often: gradient accumulation with no_sync() for the inner micro-steps, a larger per-GPU "
        "batch, bf16 gradients (DDP compression hooks, FSDP reduce_dtype). Overlap it with backward: DDP "
        "bucket_cap_mb sized to the model, gradient_as_bucket_view=True, FSDP backward_prefetch and "
        "forward_prefetch. Use the fastest transport (NCCL/RCCL over NVLink/InfiniBand, not TCP sockets)."
    ),
    "pipeline": (
        "The communication is point-to-point send/recv (pipeline parallelism): the exposed part is the "
        "pipeline bubble. Use more micro-batches per step, an interleaved (virtual-stage) schedule, and "
        "balance the stages so no stage waits for a slower one."
    ),
    "other": (
        "Send less or less often (larger per-GPU batches, fewer synchronizations), overlap the collectives "
        "with independent compute, and use the fastest transport (NCCL/RCCL over NVLink/InfiniBand)."
    ),
}


def _breakdown(t: Trace) -> dict[str, Any]:
    """What the trace's profiler measured per step where it recorded no kernel timeline
    (`meta["step_breakdown"]`: 'step', 'compute_us', 'comm_exposed_us' lists and its 'source')."""
    got = t.meta.get("step_breakdown")
    return got if isinstance(got, dict) else {}


def _recorded_numbers(ctx: Context, out: dict[str, Any], comm: np.ndarray) -> dict[str, Any]:
    """The profiler's per-step compute and exposed communication over the analysis steps, for a
    trace without compute kernels. Communication time per step is the union of the
    communication spans in it, never less than the exposed part (the spans may be missing)."""
    t = ctx.trace
    bd = _breakdown(t)
    at = {int(n): i for i, n in enumerate(bd.get("step", ()))}
    wins = [(s.lo, s.hi, at[s.number]) for s in model(ctx).steps if s.number is not None and s.number in at]
    if not wins:
        return out
    g = t.gpu
    cs = _spans_of(t, comm)
    exposed = [float(bd["comm_exposed_us"][i]) for _, _, i in wins]
    comm_per = [max(length(cs, lo, hi), e) for (lo, hi, _), e in zip(wins, exposed)]
    n, total = float(len(wins)), sum(hi - lo for lo, hi, _ in wins)
    comm_time, exposed_time = sum(comm_per), sum(exposed)
    compute_time = sum(float(bd["compute_us"][i]) for _, _, i in wins)
    live = comm & (g.ts < wins[-1][1]) & (g.ts + g.dur > wins[0][0])
    names = sorted({t.s(int(c)) for c in g.collective[live].tolist() if c >= 0})
    out.update(
        compute_time_us=compute_time, compute_us=compute_time / n, comm_kernels=int(live.sum()),
        comm_time_us=comm_time, comm_us=comm_time / n, comm_exposed_us=exposed_time / n,
        comm_pct=100.0 * comm_time / total if total > 0 else None,
        comm_exposed_pct=100.0 * exposed_time / total if total > 0 else None,
        comm_overlap_pct=100.0 * (comm_time - exposed_time) / comm_time if comm_time > 0 else None,
        collectives=", ".join(names) if names else None, breakdown_source=bd.get("source"),
    )  # fmt: skip
    if comm_time > 0:
        out["comm_traffic"] = _traffic(ctx, np.flatnonzero(live))
        out["comm_advice"] = ADVICE[out["comm_traffic"]]
    return out


def _host_numbers(ctx: Context, out: dict[str, Any]) -> dict[str, Any]:
    """Communication the host ran (gloo), over the analysis steps' windows: nothing hides it."""
    t = ctx.trace
    idx = host_collectives(t)
    if not len(idx):
        return out
    wins = step_windows(ctx)
    cs = spans(t.ops.ts[idx], t.ops.ts[idx] + t.ops.dur[idx])
    comm_time = sum(_in_windows(cs, wins))
    total = sum(hi - lo for lo, hi in wins)
    if comm_time <= 0 or total <= 0:
        return out
    per = float(len(wins))
    out.update(
        comm_kernels=None, comm_time_us=comm_time, comm_us=comm_time / per, comm_exposed_us=comm_time / per,
        comm_pct=100.0 * comm_time / total, comm_exposed_pct=100.0 * comm_time / total, comm_overlap_pct=0.0,
        collectives=", ".join(sorted({t.s(int(n)).split(":", 1)[1] for n in t.ops.name[idx].tolist()})),
        comm_source="host", comm_traffic="data_parallel", comm_advice=ADVICE["data_parallel"],
    )  # fmt: skip
    return out


@enricher("trace", fields=FIELDS)
def _enrich(ctx: Context, row: Row) -> Row:
    # The communication kernels, for the step model's what-if of overlapping them with compute.
    t = ctx.trace
    wait_us, wait_rank = recorded_wait(ctx)
    return {
        **comm_numbers(ctx), "comm_recorded_wait_us": wait_us, "comm_recorded_wait_rank": wait_rank,
        "_comm_gpu": np.flatnonzero((t.gpu.kind == KERNEL) & comm_mask(t)),
    }  # fmt: skip


def recorded_wait(ctx: Context) -> tuple[float | None, int | None]:
    """The wait for peers the profiler recorded (MindSpore's hccl_raw: per step, and per link
    with the peer): the median per analysis step, and the peer that held most of it."""
    h = ctx.trace.meta.get("hccl")
    if not isinstance(h, dict):
        return None, None
    steps = {s.number for s in ctx.steps}
    per = h.get("per_step") or {}
    waits = [float(w) for n, w in zip(per.get("step", []), per.get("wait_us", [])) if n in steps and w is not None]
    if not waits:
        return None, None
    by: dict[int, float] = {}
    for tr in h.get("transfers", []):
        if tr.get("step") in steps and tr.get("wait_us"):
            peer = int(tr["src_rank"] if tr.get("dst_rank") == ctx.trace.rank else tr["dst_rank"])
            by[peer] = by.get(peer, 0.0) + float(tr["wait_us"])
    return float(np.median(waits)), (max(by, key=lambda k: by[k]) if by else None)
