"""Launch-configuration fields on `kernel_groups`: theoretical occupancy and its limiter (CUDA
occupancy calculator), the occupancy the OCC rules judge, waves and the tail wave.

Kineto's `est. achieved occupancy %` is itself computed with cudaOccMaxActiveBlocksPerMultiprocessor
capped by the grid; Kineto writes 0 when that call fails (kernels with more than 48 KiB of dynamic
shared memory on Ampere/Hopper: checked on the H100 bert-small trace), so a trace value of 0
for a kernel that did run blocks is treated as missing and the theoretical value is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perflint.facts import Context, Fields, Row, enricher, typed
from perflint.facts._common import primary_device
from perflint.facts.comm import comm_mask
from perflint.memo import once
from perflint.metrics.grid_knobs import grid_knob
from perflint.metrics.occupancy import Occupancy, device_occupancy

FIELDS: Fields = {
    "theoretical_occupancy_pct": "theoretical occupancy % from block size, registers and shared memory (NVIDIA)",
    "occupancy_limiter": typed("resource that limits resident blocks per SM: registers, shared_memory, warps or blocks", "text"),
    "max_blocks_per_sm": typed("resident blocks per SM the launch configuration allows (theoretical)", "integer"),
    "occupancy_eff_pct": "the trace's achieved-occupancy estimate, else the theoretical occupancy capped by the grid",
    "occupancy_source": typed("trace | theoretical (where occupancy_eff_pct comes from)", "text"),
    "occupancy_eff_limiter": typed("what holds occupancy_eff_pct down: 'grid size' when the grid is below the resident limit, null when the measured occupancy is well below the theoretical one (no resource limits it), else occupancy_limiter", "text"),
    "grid_fill": typed("blocks per SM launched (trace `blocks per SM`, else blocks / SM count)", "number"),
    "grid_knob": typed("what the user can change to give the kernel a larger grid, in words (the shape for library kernels, the launch grid for their own); null where the library alone decides", "text"),
    "comm_sms": typed("SMs held by communication kernels running at the same time, time-weighted over the group's launches (null when none ran beside it)", "text"),
    "free_grid_fill": typed("blocks per SM left free by those communication kernels, time-weighted (null when none ran beside it)", "text"),
    "waves": typed("blocks / (SM count x max_blocks_per_sm), of each launch's own grid, time-weighted over the group", "number"),
    "tail_wave_pct": "how full the last, partial wave is (% of a full wave), time-weighted over the launches whose last wave is partial; null when every launch's waves are whole",
    "tail_loss_us": "per launch with at least one full wave, the time its partial last wave leaves SMs idle (dur / ceil(waves) x (1 - fullness)), summed",
    "warp_size": typed("threads per warp (64 on AMD CDNA)", "integer"),
}


def _waves(ctx: Context, row: Row, wave: int) -> Row:
    """Waves and the tail of each launch's own grid (launches of one kernel may differ in grid),
    time-weighted over the group: `waves`, `tail_wave_pct` (how full the last wave is, over the
    launches whose last wave is partial) and `tail_loss_us` (per launch, the share of its time
    the partial last wave leaves idle: dur / ceil(waves) x (1 - fullness))."""
    g = ctx.trace.gpu
    rows = row.get("_gpu")
    if rows is None or not len(rows):
        blocks = float(row["blocks"])
        waves_1 = np.asarray([blocks / wave])
        dur = np.asarray([float(row.get("time_us") or 0.0)])
    else:
        grid = g.grid[rows].astype(np.float64)
        waves_1 = grid[:, 0] * grid[:, 1] * grid[:, 2] / wave
        dur = g.dur[rows]
    ok = waves_1 > 0
    waves_1, dur = waves_1[ok], dur[ok]
    if not len(dur) or dur.sum() <= 0:
        return {}
    frac = waves_1 - np.floor(waves_1)
    partial = frac > 1e-9
    full = np.maximum(np.ceil(waves_1), 1.0)
    loss = np.where(partial & (waves_1 >= 1.0), dur / full * (1.0 - frac), 0.0)
    tail = float(np.average(frac[partial], weights=dur[partial])) if partial.any() and dur[partial].sum() > 0 else None
    return {
        "waves": float(np.average(waves_1, weights=dur)),
        "tail_wave_pct": 100.0 * tail if tail is not None else None,
        "tail_loss_us": float(loss.sum()),
    }


@once
def _comm_sms(ctx: Context) -> tuple[np.ndarray, np.ndarray] | None:
    """SMs held by communication kernels over time, as a step function: (change times, SMs held
    from each time on). A communication block occupies an SM for the kernel's life (NCCL, DeepEP
    and NVSHMEM kernels are persistent), so concurrent GEMMs get the rest."""
    t = ctx.trace
    g = t.gpu
    rows = np.flatnonzero(comm_mask(t))
    if not len(rows):
        return None
    grid = g.grid[rows].astype(np.float64)
    blocks = grid[:, 0] * grid[:, 1] * grid[:, 2]
    times = np.concatenate([g.ts[rows], g.ts[rows] + g.dur[rows]])
    delta = np.concatenate([blocks, -blocks])
    order = np.argsort(times, kind="stable")
    return times[order], np.cumsum(delta[order])


def _beside_comm(ctx: Context, row: Row, sms: int) -> Row:
    """The group's grid against the SMs that concurrent communication kernels leave free: a GEMM
    sized to them (DeepEP takes about 20 SMs by design) fills its share of the GPU."""
    held = _comm_sms(ctx)
    rows = row.get("_gpu")
    if held is None or rows is None or not len(rows):
        return {"comm_sms": None, "free_grid_fill": None}
    times, level = held
    g = ctx.trace.gpu
    mid = g.ts[rows] + g.dur[rows] / 2.0
    at = np.searchsorted(times, mid, side="right") - 1
    taken = np.where(at >= 0, level[np.maximum(at, 0)], 0.0)
    taken = np.clip(taken, 0.0, sms - 1)
    grid = g.grid[rows].astype(np.float64)
    blocks = grid[:, 0] * grid[:, 1] * grid[:, 2]
    dur = g.dur[rows]
    if dur.sum() <= 0 or not taken.any():
        return {"comm_sms": None, "free_grid_fill": None}
    return {
        "comm_sms": float(np.average(taken, weights=dur)),
        "free_grid_fill": float(np.average(blocks / (sms - taken), weights=dur)),
    }


def _occupancy_of_config(ctx: Context, config: tuple[Any, Any, Any]) -> Occupancy | None:
    return device_occupancy(primary_device(ctx), *config)


@enricher("kernel_groups", fields=FIELDS)
def launch_config(ctx: Context, row: Row) -> Row:
    dev = primary_device(ctx)
    warp = (dev.warp_size if dev and dev.warp_size else None) or (64 if row.get("vendor") == "amd" else 32)
    out: Row = dict.fromkeys(FIELDS)
    out["warp_size"] = warp
    tpb, blocks, sms = row.get("threads_per_block"), row.get("blocks"), row.get("sm_count")
    # Kernel groups share a few launch configurations: one occupancy computation per config.
    occ = ctx.memo.keyed(_occupancy_of_config, ctx, (tpb, row.get("registers"), row.get("shared_memory")))
    grid_fill = row.get("blocks_per_sm")
    if grid_fill is None and blocks and sms:
        grid_fill = blocks / sms
    out["grid_fill"] = grid_fill
    out["grid_knob"] = grid_knob(row.get("library"), row.get("category"))
    if grid_fill is not None and sms and row.get("category") != "communication":
        out.update(_beside_comm(ctx, row, int(sms)))
    if occ is not None:
        out["theoretical_occupancy_pct"] = occ.occupancy_pct
        out["occupancy_limiter"] = occ.limiter
        out["max_blocks_per_sm"] = occ.active_blocks
        if blocks and sms and occ.active_blocks:
            out.update(_waves(ctx, row, sms * occ.active_blocks))
    traced = row.get("occupancy_pct")
    if traced is not None and (traced > 0 or not grid_fill):
        out["occupancy_eff_pct"], out["occupancy_source"] = traced, "trace"
    elif occ is not None:
        eff = occ.occupancy_pct
        if grid_fill is not None and tpb and occ.active_blocks:
            # A grid smaller than a full wave cannot reach theoretical occupancy (as Kineto caps it).
            eff = occ.occupancy_pct * min(1.0, grid_fill / occ.active_blocks)
        out["occupancy_eff_pct"], out["occupancy_source"] = eff, "theoretical"
    eff = out["occupancy_eff_pct"]
    if eff is not None and occ is not None and eff < 0.9 * occ.occupancy_pct and grid_fill is not None and grid_fill < occ.active_blocks:
        out["occupancy_eff_limiter"] = "grid size"  # too few blocks to fill the resident slots
    elif eff is not None and occ is not None and eff < 0.9 * occ.occupancy_pct:
        # Measured below what the resources allow: warps finish unevenly or stall; no resource to name.
        out["occupancy_eff_limiter"] = None
    else:
        out["occupancy_eff_limiter"] = out["occupancy_limiter"]
    return out
