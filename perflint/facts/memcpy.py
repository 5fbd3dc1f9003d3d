"""Memory-transfer and allocation facts.

- `memcpy_groups`: GPU copies launched in the analysis steps, per direction x host memory kind
  (pageable / pinned) x launching op.
- `memcpy_share`: one row per copy direction: copy time (union) and its share of step time, and the
  part not overlapped by kernels.
- `alloc_groups`: cudaMalloc / cudaFree (and driver / HIP equivalents) made in steady-state steps
  (after the first step), per API x op stack x source: caching-allocator misses or empty_cache.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, capability, fact, rows, typed
from perflint.facts._common import kernel_op, model, op_info, op_infos, window_mask, window_us
from perflint.facts._group import Groups, dense_ids, labels, present_ids
from perflint.graph.build import runtime_source
from perflint.ids import isin_ids
from perflint.metrics.apis import is_alloc
from perflint.metrics.intervals import covered_before, merge_spans, merged_pieces
from perflint.metrics.steps import step_of
from perflint.model import KERNEL, MEMCPY, NONE, GpuTable, Trace
from perflint.units import fmt_duration

# "Memcpy HtoD (Pageable -> Device)"; older/AMD traces may omit the parenthesis.
_NAME = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")


def parse_memcpy(name: str) -> tuple[str | None, str | None, str | None]:
    """(direction, source memory, destination memory) from a Kineto memcpy name."""
    m = _NAME.search(name)
    if not m:
        return None, None, None
    return m.group(1), m.group(2), m.group(3)


def _host_memory(src: str | None, dst: str | None) -> str | None:
    for side in (src, dst):
        if side in ("Pageable", "Pinned", "Managed"):
            return side.lower()
    return None


def _kind(name: str) -> tuple[str | None, str | None]:
    direction, src, dst = parse_memcpy(name)
    return direction, _host_memory(src, dst)


GROUP_FIELDS: Fields = {
    "direction": typed("HtoD | DtoH | DtoD | HtoH | PtoP", "text"),
    "host_memory": typed("pageable | pinned | managed (null for device-only copies)", "text"),
    "pageable": typed("the host side is pageable memory", "bool"),
    "memcpy": typed("memcpy event name, e.g. 'Memcpy HtoD (Pageable -> Device)'", "text"),
    "api": typed("runtime call that launched it (cudaMemcpyAsync, cudaMemcpy, ...)", "text"),
    "is_async": "launched by an *Async runtime call",
    "op": typed("bottom-level op that launched the copy", "text"),
    "top_level_op": typed("outermost op on the launch stack", "text"),
    "op_stack": typed("ops from outermost to innermost", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("copies in the analysis steps", "integer"),
    "bytes": typed("bytes copied", "integer"),
    "mean_bytes": typed("mean bytes per copy", "number", unit="bytes"),
    "time_us": "total copy time on the GPU",
    "bandwidth_gbs": typed("bytes / time (GB/s)", "number"),
    "step_share_pct": "time_us / step time (GPU span without steps)",
    "steps": typed("number of analysis steps", "integer"),
}


@fact("memcpy_groups", key=("direction", "host_memory", "api", "top_level_op", "op"), fields=GROUP_FIELDS)
def memcpy_groups(ctx: Context) -> list[Row]:
    """Copies launched in the analysis steps, per direction x host memory x launching op."""
    t = ctx.trace
    g = t.gpu
    sel = np.flatnonzero(window_mask(ctx) & (g.kind == MEMCPY))
    if len(sel) == 0:
        return []
    span = window_us(ctx)
    kop = kernel_op(t, sel)
    kind, kinds = labels(g.name[sel], lambda i: _kind(t.s(i)))
    launch = g.launch[sel]
    linked = launch != NONE
    api_id = np.full(len(sel), NONE, dtype=np.int32)
    api_id[linked] = t.runtime.name[launch[linked]] + 1  # shifted: NONE = not linked
    del launch, linked
    api, apis = labels(api_id, lambda i: t.s(i - 1) if i != NONE else None)
    del api_id
    iid, infos = op_infos(ctx, kop)
    del kop
    site, _ = dense_ids((info.stack[0] if info.stack else None, info.stack[-1] if info.stack else None) for info in infos)
    groups = Groups(kind, api, site[iid])
    idx_all = sel[groups.order]
    del sel
    out: list[Row] = []
    for gi, sl in enumerate(groups.slices()):
        idx = idx_all[sl]
        time_us = float(g.dur[idx].sum())
        nb = g.nbytes[idx]
        nbytes = int(nb[nb > 0].sum())
        del nb
        first = int(groups.first[gi])
        info = infos[int(iid[first])]
        direction, host = kinds[int(kind[first])]
        api_name = apis[int(api[first])]
        bottom = info.stack[-1] if info.stack else None
        calls = g.launch[idx]
        out.append(
            {
                "_gpu": idx,  # the copies and their launch calls, for the step model's what-if
                "_calls": calls[calls != NONE],
                "direction": direction,
                "host_memory": host,
                "pageable": host == "pageable",
                "memcpy": t.s(int(g.name[idx[0]])),
                "api": api_name,
                "is_async": bool(api_name and "Async" in api_name),
                "op": bottom,
                "top_level_op": info.stack[0] if info.stack else None,
                "op_stack": list(info.stack),
                "source": info.source,
                "count": len(idx),
                "bytes": nbytes,
                "mean_bytes": nbytes / len(idx),
                "time_us": time_us,
                "bandwidth_gbs": nbytes / time_us / 1e3 if time_us > 0 else None,
                "step_share_pct": 100.0 * time_us / span if span else None,
                "steps": len(ctx.steps),
            }
        )
    out.sort(key=lambda r: -r["time_us"])
    return out


SHARE_FIELDS: Fields = {
    "direction": typed("HtoD | DtoH | DtoD | ...", "text"),
    "count": typed("copies in the analysis steps", "integer"),
    "bytes": typed("bytes copied", "integer"),
    "time_us": "copy time: union of the copy intervals on the GPU",
    "exposed_us": "copy time not overlapped by any kernel",
    "step_share_pct": "time_us / step time (GPU span without steps)",
    "exposed_share_pct": "exposed_us / step time",
    "pageable_pct": "share of the copy time from/to pageable host memory",
    "top_ops": typed("ops with the most copy time: 'op N copies, X'", "list"),
    "copy_advice": typed("what to do about copies of this direction, in words: host copies (HtoD, DtoH) and device copies (DtoD, peer) have different fixes", "text"),
    "steps": typed("number of analysis steps", "integer"),
}


def _overlap(ms: np.ndarray, me: np.ndarray, ks: np.ndarray, ke: np.ndarray) -> float:
    """Length of (union A) intersect (union B), both given as merged sorted intervals.

    Every (A, B) pair that overlaps is visited in A then B order and the pieces are added left
    to right (cumsum), as the original pairwise walk added them."""
    if len(ms) == 0 or len(ks) == 0:
        return 0.0
    lo = np.searchsorted(ke, ms, side="right")  # first B interval ending after each A start
    hi = np.maximum(np.searchsorted(ks, me, side="left"), lo)  # B intervals starting before its end
    n = hi - lo
    total = int(n.sum())
    if total == 0:
        return 0.0
    a = np.repeat(np.arange(len(ms)), n)
    b = np.arange(total) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
    piece = np.maximum(0.0, np.minimum(me[a], ke[b]) - np.maximum(ms[a], ks[b]))
    return float(np.cumsum(piece)[-1])


def _kernel_spans_meeting(
    g: GpuTable, kern: np.ndarray, copies: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The merged spans of the kernel rows `kern` (a subsequence of merge_spans(g.ts, g.dur, kern))
    that `_overlap` pairs with a span of one of `copies` (merged copy spans): the others add nothing
    to any overlap, and a copy rarely runs beside a kernel. The kernel spans are streamed; only
    those kept are held."""
    kept_s: list[np.ndarray] = [np.zeros(0)]
    kept_e: list[np.ndarray] = [np.zeros(0)]
    if not any(len(ms) for ms, _ in copies):
        return kept_s[0], kept_e[0]
    for ks, ke in merged_pieces(g.ts, g.dur, kern):
        n = len(ks)
        # +1 where a copy span's run of paired kernel spans begins, -1 past its end.
        edges = np.zeros(n + 1, dtype=np.int64)
        for ms, me in copies:
            # The copy spans that can pair with this piece, then their kernel spans by the same
            # searches `_overlap` makes (restricted to the piece, they find the same pairs).
            a0, a1 = np.searchsorted(me, ks[0], side="right"), np.searchsorted(ms, ke[-1], side="left")
            if a1 > a0:
                lo = np.searchsorted(ke, ms[a0:a1], side="right")
                hi = np.maximum(np.searchsorted(ks, me[a0:a1], side="left"), lo)
                edges += np.bincount(lo, minlength=n + 1)
                edges -= np.bincount(hi, minlength=n + 1)
        keep = np.cumsum(edges[:n]) > 0
        kept_s.append(ks[keep])
        kept_e.append(ke[keep])
    return np.concatenate(kept_s), np.concatenate(kept_e)


_HOST_ADVICE = (
    "Move less data between host and device: keep tensors on the GPU across steps, avoid "
    ".cpu()/.numpy() round trips, move preprocessing onto the GPU, use smaller dtypes for inputs. "
    "Hide the rest: pinned memory with non_blocking=True copies, and prefetch the next batch on a side "
    "stream while the current one computes."
)
_DEVICE_ADVICE = (
    "These copies stay on the GPU (clone(), contiguous(), torch.cat, dtype or layout changes, and the "
    "input and output copies of compiled graphs and CUDA graphs): pinned memory does not apply. Keep "
    "one memory layout end to end (no permute().contiguous() round trips), write results in place or "
    "into preallocated buffers (out=, index_copy_), let torch.compile fuse the copy into its consumer, "
    "and with mode='reduce-overhead' keep the graph's inputs in static buffers so they are not copied in."
)
_PEER_ADVICE = (
    "Copies between GPUs: check that peer access goes over NVLink (nvidia-smi topo -m) rather than "
    "through host memory, and use NCCL collectives or send/recv for data that all ranks exchange."
)


def copy_advice(direction: str | None) -> str:
    """The fix for copies of one direction: host transfers, copies within a device, or between devices."""
    if direction == "DtoD":
        return _DEVICE_ADVICE
    if direction in ("PtoP", "Peer"):
        return _PEER_ADVICE
    return _HOST_ADVICE


@fact("memcpy_share", key=("direction",), fields=SHARE_FIELDS)
def memcpy_share(ctx: Context) -> list[Row]:
    """Copy time per direction as a share of step time (and the part kernels did not hide)."""
    t = ctx.trace
    g = t.gpu
    win = window_mask(ctx)
    span = window_us(ctx)
    by_dir: dict[str | None, list[Row]] = {}
    for r in rows(ctx, "memcpy_groups"):
        by_dir.setdefault(r["direction"], []).append(r)
    out: list[Row] = []
    cp_all = np.flatnonzero(win & (g.kind == MEMCPY))
    dirs, dir_names = labels(g.name[cp_all], lambda i: parse_memcpy(t.s(i))[0] or "")
    spans: dict[str | None, tuple[np.ndarray, np.ndarray]] = {}
    for direction in by_dir:
        want = dir_names.index(direction or "") if (direction or "") in dir_names else -1
        spans[direction] = merge_spans(g.ts, g.dur, cp_all[dirs == want])
    del cp_all, dirs
    ks, ke = _kernel_spans_meeting(g, win & (g.kind == KERNEL), list(spans.values()))
    for direction, groups in by_dir.items():
        ms, me = spans[direction]
        busy = float((me - ms).sum())
        exposed = busy - _overlap(ms, me, ks, ke)
        total = sum(r["time_us"] for r in groups)
        pageable = sum(r["time_us"] for r in groups if r["pageable"])
        per_op: dict[str, list[float]] = {}
        for r in groups:
            acc = per_op.setdefault(r["op"] or "(no op)", [0, 0.0])
            acc[0] += r["count"]
            acc[1] += r["time_us"]
        top = [(op, int(n), us) for op, (n, us) in sorted(per_op.items(), key=lambda kv: -kv[1][1])[:3]]
        out.append(
            {
                "_gpu": np.concatenate([r["_gpu"] for r in groups]),
                "direction": direction,
                "count": sum(r["count"] for r in groups),
                "bytes": sum(r["bytes"] for r in groups),
                "time_us": busy,
                "exposed_us": exposed,
                "step_share_pct": 100.0 * busy / span if span else None,
                "exposed_share_pct": 100.0 * exposed / span if span else None,
                "pageable_pct": 100.0 * pageable / total if total else 0.0,
                "top_ops": [f"{op} {n} copies, {fmt_duration(us)}" for op, n, us in top],
                "copy_advice": copy_advice(direction),
                "steps": len(ctx.steps),
            }
        )
    out.sort(key=lambda r: -r["time_us"])
    return out


@capability("steady_steps", "the trace has steady-state steps after the first profiled one")
def _steady_steps(t: Trace) -> str | None:
    if len(t.steps) >= 2:
        return None
    return f"needs at least two {t.recorded('steps')} to tell steady-state steps from the warm-up step"


ALLOC_FIELDS: Fields = {
    "api": typed("allocation API (cudaMalloc, cudaFree, hipMalloc, ...)", "text"),
    "op": typed("bottom-level op enclosing the call", "text"),
    "top_level_op": typed("outermost op on the stack", "text"),
    "op_stack": typed("ops from outermost to innermost", "list"),
    "source": typed("user's file:line, when stacks were recorded", "text"),
    "count": typed("calls in steady-state steps", "integer"),
    "per_step": typed("calls per steady-state step", "number"),
    "time_us": "CPU time in the calls (cudaFree also synchronizes the device)",
    "max_us": "longest call",
    "steady_steps": typed("steady-state steps examined (analysis steps after the first profiled step); null when the trace has fewer than two steps", "integer"),
    "steady": typed("the calls were counted in steady-state steps; false: the trace has fewer than two steps and the calls after the device's first work were counted (warm-up cannot be told apart)", "bool"),
    "where_counted": typed("where the calls were counted and what that says of their cause, in words", "text"),
    "gpu_idle_us": "device idle time during the calls: the GPU waited while the host allocated or freed (null without device work)",
}


@fact("alloc_groups", key=("api", "op_stack", "source"), fields=ALLOC_FIELDS)
def alloc_groups(ctx: Context) -> list[Row]:
    """Device malloc/free calls in steady-state steps (without two steps: once the device works),
    per API x op stack x source."""
    t = ctx.trace
    rt = t.runtime
    first = t.steps[0] if t.steps else None
    steady = [s for s in ctx.steps if s is not first] if len(t.steps) >= 2 else []
    if len(rt) == 0:
        return []
    api_ids = [i for i in present_ids(rt.name) if is_alloc(t.s(i))]
    if not api_ids:
        return []
    cand = np.flatnonzero(isin_ids(rt.name, np.asarray(api_ids, dtype=rt.name.dtype)))
    ms, me = model(ctx).spans.work
    if steady:
        cand = cand[step_of(t, steady, rt.ts[cand]) >= 0]
    elif len(ms):
        # Without steady-state steps: the calls once the device has started working (before it,
        # context creation and model set-up allocate by design), judged by the idle time they cause.
        cand = cand[(rt.ts[cand] >= ms[0]) & (rt.ts[cand] <= me[-1])]
    else:
        return []
    rsrc = runtime_source(t)  # the allocator's calls under torch.cuda.empty_cache() run outside ops
    groups: dict[tuple[Any, ...], list[int]] = {}
    for r in cand.tolist():
        info = op_info(ctx, int(rt.op[r]))
        source = info.source if info.source is not None or rsrc[r] == NONE else t.s(int(rsrc[r]))
        groups.setdefault((int(rt.name[r]), info.stack, source), []).append(r)
    out: list[Row] = []
    for (api, stack, source), rs in groups.items():
        rows = np.asarray(rs)
        dur = rt.dur[rows]
        a = rt.ts[rows]
        idle = float((dur - (covered_before(ms, me, a + dur) - covered_before(ms, me, a))).sum()) if len(ms) else None
        out.append(
            {
                "_calls": np.asarray(rs, dtype=np.int64),
                "api": t.s(api),
                "op": stack[-1] if stack else None,
                "top_level_op": stack[0] if stack else None,
                "op_stack": list(stack),
                "source": source,
                "count": len(rs),
                "per_step": len(rs) / len(steady) if steady else None,
                "time_us": float(dur.sum()),
                "max_us": float(dur.max()),
                "steady_steps": len(steady) or None,
                "steady": bool(steady),
                "where_counted": (
                    "in steady-state steps: the caching allocator is missing or being emptied"
                    if steady
                    else f"without two {t.recorded('steps')}: first-use allocation or a missing cache"
                ),
                "gpu_idle_us": max(0.0, idle) if idle is not None else None,
            }
        )
    out.sort(key=lambda r: -r["time_us"])
    return out
