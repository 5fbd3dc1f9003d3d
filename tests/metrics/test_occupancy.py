"""The occupancy calculator (perflint.metrics.occupancy): hand-worked launch configs, and Kineto's own
per-kernel estimates on a real V100 trace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perflint.metrics.occupancy import theoretical_occupancy
from tests.conftest import shared_trace

RN0 = "kineto/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def test_occupancy_256_threads_32_regs_sm80_is_full() -> None:
    # warps: 64 / 8 = 8 blocks; regs: 32*32 = 1024 per warp, 65536/4 = 16384 per sub-partition
    # -> 16 warps x 4 = 64 warps -> 8 blocks; smem: 1 KiB reserved -> 163 blocks; max 32.
    # 8 blocks x 8 warps = 64 / 64 warps = 100%.
    o = theoretical_occupancy(256, 32, 0, (8, 0))
    assert o is not None and o.occupancy_pct == 100.0 and o.active_blocks == 8


def test_occupancy_1024_threads_64_regs_is_half_limited_by_registers() -> None:
    # regs: 64*32 = 2048 per warp, 16384 / 2048 = 8 warps per sub-partition -> 32 warps -> 1 block
    # of 32 warps; warps alone would allow 2 blocks. 32 / 64 = 50%.
    o = theoretical_occupancy(1024, 64, 0, (8, 0))
    assert o is not None and o.occupancy_pct == 50.0 and o.limiter == "registers" and o.active_blocks == 1


def test_occupancy_shared_memory_and_turing_limits() -> None:
    # 48 KiB + 1 KiB reserved per block into 164 KiB (cc 8.0): 3 blocks of 4 warps = 12 / 64.
    o = theoretical_occupancy(128, 32, 48 * 1024, (8, 0), shared_mem_per_sm=167936)
    assert o is not None and o.limiter == "shared_memory" and o.active_blocks == 3
    assert o.occupancy_pct == pytest.approx(100 * 12 / 64)
    # Turing: 32 warps and 16 blocks per SM; 64-thread blocks: 16 x 2 warps = 32 / 32 = 100%;
    # 32-thread blocks hit the 16-block limit: 16 x 1 / 32 = 50%.
    o = theoretical_occupancy(64, 16, 0, (7, 5))
    assert o is not None and o.occupancy_pct == 100.0
    o = theoretical_occupancy(32, 16, 0, (7, 5))
    assert o is not None and o.limiter == "blocks" and o.occupancy_pct == 50.0
    assert theoretical_occupancy(128, 300, 0, (8, 0)) is None  # over 255 registers: invalid


def test_occupancy_matches_kineto_estimates_on_v100_resnet50() -> None:
    """Kineto's `est. achieved occupancy %` = min(resident blocks, blocks per SM) x warps per block /
    max warps (cudaOccMaxActiveBlocksPerMultiprocessor): every launch config must agree."""
    from perflint.graph.load import load_trace
    from perflint.metrics.occupancy import device_occupancy
    from perflint.model import KERNEL

    t = load_trace(shared_trace(RN0), None)
    g, dev = t.gpu, t.primary_device
    idx = np.flatnonzero(g.kind == KERNEL)
    checked = 0
    seen: set[tuple[Any, ...]] = set()
    for i in idx.tolist():
        tpb = int(np.prod(g.block[i]))
        key = (tpb, int(g.regs[i]), int(g.shmem[i]), float(g.blocks_per_sm[i]))
        if key in seen:
            continue
        seen.add(key)
        o = device_occupancy(dev, tpb, int(g.regs[i]), int(g.shmem[i]))
        assert o is not None
        expect = 100 * min(o.active_blocks, key[3]) * (-(-tpb // 32)) / o.max_warps
        assert abs(expect - float(g.occupancy[i])) < 0.6, (key, expect, g.occupancy[i])
        checked += 1
    assert checked > 100
