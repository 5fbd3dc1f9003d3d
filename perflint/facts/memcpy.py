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

from perflint.facts import Context, Row, capability, fact, rows
from perflint.facts._common import kernel_op, op_info, window_mask
from perflint.facts.launch import window_span_us
from perflint.metrics.intervals import merge
from perflint.metrics.steps import step_of
from perflint.model import KERNEL, MEMCPY, NONE, Trace

# "Memcpy HtoD (Pageable -> Device)"; older/AMD traces may omit the parenthesis.
_NAME = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
ALLOC_APIS = frozenset(
    {"cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemAlloc_v2", "cuMemFree", "cuMemFree_v2",
     "hipMalloc", "hipFree", "hipExtMallocWithFlags", "cudaMallocManaged", "hipMallocManaged"}
)


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


GROUP_FIELDS = {
    "direction": "HtoD | DtoH | DtoD | HtoH | PtoP",
    "host_memory": "pageable | pinned | managed (null for device-only copies)",
    "pageable": "the host side is pageable memory",
    "memcpy": "memcpy event name, e.g. 'Memcpy HtoD (Pageable -> Device)'",
    "api": "runtime call that launched it (cudaMemcpyAsync, cudaMemcpy, ...)",
    "is_async": "launched by an *Async runtime call",
    "op": "bottom-level op that launched the copy",
    "top_level_op": "outermost op on the launch stack",
    "op_stack": "ops from outermost to innermost",
    "source": "user's file:line, when stacks were recorded",
    "count": "copies in the analysis steps",
    "bytes": "bytes copied",
    "mean_bytes": "mean bytes per copy",
    "time_us": "total copy time on the GPU",
    "bandwidth_gbs": "bytes / time (GB/s)",
    "step_share_pct": "time_us / step time (GPU span without steps)",
    "steps": "number of analysis steps",
}


@fact("memcpy_groups", key=("direction", "host_memory", "api", "top_level_op", "op"), fields=GROUP_FIELDS)
def memcpy_groups(ctx: Context) -> list[Row]:
    """Copies launched in the analysis steps, per direction x host memory x launching op."""
    t = ctx.trace
    g = t.gpu
    sel = np.flatnonzero(window_mask(ctx) & (g.kind == MEMCPY))
    if len(sel) == 0:
        return []
    span = window_span_us(ctx)
    kop = kernel_op(t)[sel]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for pos, (row, op) in enumerate(zip(sel.tolist(), kop.tolist())):
        direction, src, dst = parse_memcpy(t.s(int(g.name[row])))
        launch = int(g.launch[row])
        api = t.s(int(t.runtime.name[launch])) if launch != NONE else None
        info = op_info(ctx, op)
        top = info.stack[0] if info.stack else None
        bottom = info.stack[-1] if info.stack else None
        groups.setdefault((direction, _host_memory(src, dst), api, top, bottom), []).append(pos)
    out: list[Row] = []
    for (direction, host, api, top, bottom), positions in groups.items():
        idx = sel[np.asarray(positions)]
        dur = g.dur[idx]
        nb = g.nbytes[idx]
        nbytes = int(nb[nb > 0].sum())
        time_us = float(dur.sum())
        info = op_info(ctx, int(kop[positions[0]]))
        out.append(
            {
                "direction": direction,
                "host_memory": host,
                "pageable": host == "pageable",
                "memcpy": t.s(int(g.name[idx[0]])),
                "api": api,
                "is_async": bool(api and "Async" in api),
                "op": bottom,
                "top_level_op": top,
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


SHARE_FIELDS = {
    "direction": "HtoD | DtoH | DtoD | ...",
    "count": "copies in the analysis steps",
    "bytes": "bytes copied",
    "time_us": "copy time: union of the copy intervals on the GPU",
    "exposed_us": "copy time not overlapped by any kernel",
    "step_share_pct": "time_us / step time (GPU span without steps)",
    "exposed_share_pct": "exposed_us / step time",
    "pageable_pct": "share of the copy time from/to pageable host memory",
    "top_ops": "ops with the most copy time: 'op N copies, X us'",
    "steps": "number of analysis steps",
}


def _overlap(ms: np.ndarray, me: np.ndarray, ks: np.ndarray, ke: np.ndarray) -> float:
    """Length of (union A) intersect (union B), both given as merged sorted intervals."""
    if len(ms) == 0 or len(ks) == 0:
        return 0.0
    total = 0.0
    j = 0
    for s, e in zip(ms.tolist(), me.tolist()):
        while j < len(ks) and ke[j] <= s:
            j += 1
        k = j
        while k < len(ks) and ks[k] < e:
            total += max(0.0, min(e, float(ke[k])) - max(s, float(ks[k])))
            k += 1
    return total


@fact("memcpy_share", key=("direction",), fields=SHARE_FIELDS)
def memcpy_share(ctx: Context) -> list[Row]:
    """Copy time per direction as a share of step time (and the part kernels did not hide)."""
    t = ctx.trace
    g = t.gpu
    win = window_mask(ctx)
    span = window_span_us(ctx)
    kern = win & (g.kind == KERNEL)
    ks, ke = merge(g.ts[kern], g.ts[kern] + g.dur[kern])
    by_dir: dict[str | None, list[Row]] = {}
    for r in rows(ctx, "memcpy_groups"):
        by_dir.setdefault(r["direction"], []).append(r)
    out: list[Row] = []
    cp_all = np.flatnonzero(win & (g.kind == MEMCPY))
    dirs = np.array([parse_memcpy(t.s(int(n)))[0] or "" for n in g.name[cp_all].tolist()], dtype=object)
    for direction, groups in by_dir.items():
        idx = cp_all[dirs == (direction or "")]
        ms, me = merge(g.ts[idx], g.ts[idx] + g.dur[idx])
        busy = float((me - ms).sum())
        exposed = busy - _overlap(ms, me, ks, ke)
        total = sum(r["time_us"] for r in groups)
        pageable = sum(r["time_us"] for r in groups if r["pageable"])
        top = sorted(groups, key=lambda r: -r["time_us"])[:3]
        out.append(
            {
                "direction": direction,
                "count": sum(r["count"] for r in groups),
                "bytes": sum(r["bytes"] for r in groups),
                "time_us": busy,
                "exposed_us": exposed,
                "step_share_pct": 100.0 * busy / span if span else None,
                "exposed_share_pct": 100.0 * exposed / span if span else None,
                "pageable_pct": 100.0 * pageable / total if total else 0.0,
                "top_ops": [f"{r['op'] or '(no op)'} {r['count']} copies, {r['time_us']:.1f} us" for r in top],
                "steps": len(ctx.steps),
            }
        )
    out.sort(key=lambda r: -r["time_us"])
    return out


@capability("steady_steps")
def _steady_steps(t: Trace) -> str | None:
    if len(t.steps) >= 2:
        return None
    return "needs at least two ProfilerStep markers to tell steady-state steps from the warm-up step"


ALLOC_FIELDS = {
    "api": "allocation API (cudaMalloc, cudaFree, hipMalloc, ...)",
    "op": "bottom-level op enclosing the call",
    "top_level_op": "outermost op on the stack",
    "op_stack": "ops from outermost to innermost",
    "source": "user's file:line, when stacks were recorded",
    "count": "calls in steady-state steps",
    "per_step": "calls per steady-state step",
    "time_us": "CPU time in the calls (cudaFree also synchronizes the device)",
    "max_us": "longest call",
    "steady_steps": "steady-state steps examined (analysis steps after the first profiled step)",
}


@fact("alloc_groups", key=("api", "op_stack", "source"), fields=ALLOC_FIELDS)
def alloc_groups(ctx: Context) -> list[Row]:
    """Device malloc/free calls in steady-state steps, per API x op stack x source."""
    t = ctx.trace
    rt = t.runtime
    first = t.steps[0] if t.steps else None
    steady = [s for s in ctx.steps if s is not first]
    if not steady or len(rt) == 0:
        return []
    api_ids = [i for i in np.unique(rt.name).tolist() if t.s(i) in ALLOC_APIS]
    if not api_ids:
        return []
    cand = np.flatnonzero(np.isin(rt.name, np.asarray(api_ids, dtype=rt.name.dtype)))
    cand = cand[step_of(t, steady, rt.ts[cand]) >= 0]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for r in cand.tolist():
        info = op_info(ctx, int(rt.op[r]))
        groups.setdefault((int(rt.name[r]), info.stack, info.source), []).append(r)
    out: list[Row] = []
    for (api, stack, source), rs in groups.items():
        dur = rt.dur[np.asarray(rs)]
        out.append(
            {
                "api": t.s(api),
                "op": stack[-1] if stack else None,
                "top_level_op": stack[0] if stack else None,
                "op_stack": list(stack),
                "source": source,
                "count": len(rs),
                "per_step": len(rs) / len(steady),
                "time_us": float(dur.sum()),
                "max_us": float(dur.max()),
                "steady_steps": len(steady),
            }
        )
    out.sort(key=lambda r: -r["time_us"])
    return out
