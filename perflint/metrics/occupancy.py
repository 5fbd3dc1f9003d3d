"""Theoretical occupancy: the CUDA occupancy calculator (cuda_occupancy.h) for NVIDIA GPUs.

Used where a trace has launch arguments (block size, registers per thread, shared memory) but no
`est. achieved occupancy %` (Nsight Systems exports, trimmed Kineto traces), and for the
maximum resident blocks per SM that the tail-effect rule needs. The logic follows
`cudaOccMaxActiveBlocksPerMultiprocessor`:

- warps:     floor(max warps per SM / warps per block)
- blocks:    the architecture's max resident blocks per SM
- registers: registers are allocated per warp in units of 256, in each of the SM's sub-partitions
             (4 on Maxwell and later, 2 on GP100): floor(regs per sub-partition / regs per warp)
             warps per sub-partition, times the sub-partitions, divided by warps per block
- shared memory: (static + dynamic + reserved-per-block) rounded up to the allocation unit
             (256 B before Volta, 128 B after), into the SM's shared memory

Occupancy = active blocks x warps per block / max warps per SM.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflint.model import Device

# (major, minor) -> (max warps per SM, max resident blocks per SM), from the CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability". Major-only fallbacks below.
_ARCH: dict[tuple[int, int], tuple[int, int]] = {
    (3, 0): (64, 16), (3, 5): (64, 16), (3, 7): (64, 16),
    (5, 0): (64, 32), (5, 2): (64, 32), (5, 3): (64, 32),
    (6, 0): (64, 32), (6, 1): (64, 32), (6, 2): (64, 32),
    (7, 0): (64, 32), (7, 2): (64, 32), (7, 5): (32, 16),
    (8, 0): (64, 32), (8, 6): (48, 16), (8, 7): (48, 16), (8, 9): (48, 24),
    (9, 0): (64, 32),
    (10, 0): (64, 32), (10, 3): (64, 32),
    (12, 0): (48, 32),
}
_MAJOR: dict[int, tuple[int, int]] = {3: (64, 16), 5: (64, 32), 6: (64, 32), 7: (64, 32), 8: (48, 16), 9: (64, 32), 10: (64, 32), 12: (48, 32)}
# Shared memory per SM (bytes) when the device properties do not say (max carveout).
_SMEM_PER_SM: dict[tuple[int, int], int] = {
    (7, 0): 98304, (7, 5): 65536, (8, 0): 167936, (8, 6): 102400, (8, 7): 167936, (8, 9): 102400,
    (9, 0): 233472, (10, 0): 233472, (12, 0): 102400,
}
REG_ALLOC_UNIT = 256  # registers are allocated per warp in chunks of 256
MAX_REGS_PER_THREAD = 255

LIMITERS = ("registers", "shared_memory", "warps", "blocks")  # tie order: what the user can change first
_UNLIMITED = 1 << 30


@dataclass(frozen=True)
class Occupancy:
    occupancy_pct: float
    active_blocks: int  # resident blocks per SM
    active_warps: int
    max_warps: int
    limiter: str  # registers | shared_memory | warps | blocks (ties: in that order)
    limits: dict[str, int]  # blocks per SM allowed by each resource


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def theoretical_occupancy(
    threads_per_block: int,
    registers_per_thread: int,
    shared_memory: int,
    cc: tuple[int, int],
    *,
    warp_size: int = 32,
    max_threads_per_sm: int | None = None,
    regs_per_sm: int | None = None,
    regs_per_block: int | None = None,
    shared_mem_per_sm: int | None = None,
    max_blocks_per_sm: int | None = None,
) -> Occupancy | None:
    """Theoretical occupancy of one launch configuration, or None when it cannot be computed."""
    if threads_per_block <= 0 or threads_per_block > 1024 or registers_per_thread < 0 or shared_memory < 0:
        return None
    if registers_per_thread > MAX_REGS_PER_THREAD:
        return None
    arch = _ARCH.get(cc) or _MAJOR.get(cc[0])
    if arch is None:
        return None
    max_warps = (max_threads_per_sm // warp_size) if max_threads_per_sm else arch[0]
    max_blocks = max_blocks_per_sm or arch[1]
    regs_sm = regs_per_sm or (131072 if cc == (3, 7) else 65536)
    regs_blk = regs_per_block or 65536
    smem_sm = shared_mem_per_sm or _SMEM_PER_SM.get(cc) or 49152
    warps_per_block = -(-threads_per_block // warp_size)

    limits: dict[str, int] = {"warps": max_warps // warps_per_block, "blocks": max_blocks}
    # Registers: per-warp allocation in 256-register units, split across sub-partitions.
    regs_per_warp = _round_up(registers_per_thread * warp_size, REG_ALLOC_UNIT)
    if regs_per_warp == 0:
        limits["registers"] = _UNLIMITED
    elif regs_per_warp * warps_per_block > regs_blk:
        limits["registers"] = 0
    else:
        subparts = 2 if cc == (6, 0) else 4
        warps_sm = (regs_sm // subparts // regs_per_warp) * subparts
        limits["registers"] = warps_sm // warps_per_block
    # Shared memory: Ampere and later reserve 1 KiB per block for the system.
    reserved = 1024 if cc[0] >= 8 else 0
    unit = 256 if cc[0] < 7 else 128
    smem_blk = _round_up(shared_memory + reserved, unit)
    limits["shared_memory"] = smem_sm // smem_blk if smem_blk else _UNLIMITED

    active = min(limits.values())
    limiter = next(k for k in LIMITERS if limits[k] == active)
    warps = active * warps_per_block
    return Occupancy(
        occupancy_pct=100.0 * warps / max_warps,
        active_blocks=active,
        active_warps=warps,
        max_warps=max_warps,
        limiter=limiter,
        limits=limits,
    )


def device_occupancy(dev: Device | None, threads_per_block: int | None, registers: int | None, shared_memory: int | None) -> Occupancy | None:
    """Theoretical occupancy on `dev` (NVIDIA only: AMD CUs schedule wavefronts differently)."""
    if dev is None or dev.vendor != "nvidia" or dev.compute_capability is None:
        return None
    if threads_per_block is None or registers is None:
        return None
    return theoretical_occupancy(
        threads_per_block,
        registers,
        shared_memory or 0,
        dev.compute_capability,
        warp_size=dev.warp_size or 32,
        max_threads_per_sm=dev.max_threads_per_sm,
        regs_per_sm=dev.regs_per_sm,
        regs_per_block=dev.regs_per_block,
        shared_mem_per_sm=dev.shared_mem_per_sm,
        max_blocks_per_sm=dev.max_blocks_per_sm,
    )
