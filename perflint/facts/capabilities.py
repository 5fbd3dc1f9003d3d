"""Capabilities: what a trace must hold for a rule to run (else the rule is skipped, with why)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from perflint.facts import capability
from perflint.metrics.kernel_classes import CAT_INDEX, classify
from perflint.model import KERNEL, MEMCPY, NONE, Trace

_COMM = CAT_INDEX["communication"]


@capability("gpu_kernels", "the trace has GPU kernel events (besides communication)")
def _gpu_kernels(t: Trace) -> str | None:
    if not (t.gpu.kind == KERNEL).any():
        return "the trace has no GPU kernel events (CPU-only trace?)"
    cat = classify(t).category
    if not _any_kernel(t, lambda sl: cat[sl] != _COMM):
        # Only the collectives' spans (a step trace's without its op timeline): device busy time,
        # kernels and launches are unknown, not idle.
        return "the trace records only communication, no compute kernels (no kernel or op timeline)"
    return None


@capability("steps", "the trace has step markers (ProfilerStep#N or the format's equivalent)")
def _steps(t: Trace) -> str | None:
    return None if t.steps else f"the trace has no {t.recorded('steps')} ({t.recorded('steps_hint')})"


@capability("input_dims", "some op recorded its input shapes")
def _input_dims(t: Trace) -> str | None:
    return None if (t.ops.dims != NONE).any() else f"the trace has no {t.recorded('shapes')} ({t.recorded('shapes_hint')})"


@capability("device_properties", "the trace records the device's properties")
def _device_props(t: Trace) -> str | None:
    d = t.primary_device
    if d is None or not t.devices:
        return f"the trace has no {t.recorded('device')}"
    return None


@capability("sm_count", "the device properties give the SM count")
def _sm_count(t: Trace) -> str | None:
    d = t.primary_device
    return None if d is not None and d.sm_count else "the trace's device properties give no SM count"


_SLICE = 1 << 18  # GPU rows looked at at once: a capability never copies a whole column


def _any_kernel(t: Trace, test: Callable[[slice], np.ndarray]) -> bool:
    """Whether `test` (a bool per row of a slice of the GPU table) holds for some kernel."""
    g = t.gpu
    return any(bool((test(sl) & (g.kind[sl] == KERNEL)).any()) for sl in (slice(i, i + _SLICE) for i in range(0, len(g), _SLICE)))


@capability("launch_args", "kernel events carry grid/block launch arguments")
def _launch_args(t: Trace) -> str | None:
    if _any_kernel(t, lambda sl: t.gpu.block[sl].sum(axis=1) > 0):
        return None
    return "kernel events carry no grid/block launch arguments"


@capability("occupancy_args", "kernel events carry an occupancy estimate or blocks per SM")
def _occupancy(t: Trace) -> str | None:
    if _any_kernel(t, lambda sl: ~np.isnan(t.gpu.occupancy[sl]) | ~np.isnan(t.gpu.blocks_per_sm[sl])):
        return None
    return "kernel events carry no occupancy / blocks-per-SM arguments"


@capability("launch_links", "GPU events are linked to their CPU launch calls (correlation ids)")
def _links(t: Trace) -> str | None:
    return None if (t.gpu.launch != NONE).any() else "GPU events are not linked to CPU launches (no correlation ids)"


@capability("cpu_ops", "the trace has CPU operator events")
def _cpu_ops(t: Trace) -> str | None:
    return None if len(t.ops) else "the trace has no CPU operator events"


@capability("memory_events", "the trace has memory allocation events")
def _memory(t: Trace) -> str | None:
    return None if len(t.memory) else f"the trace has no {t.recorded('memory')} ({t.recorded('memory_hint')})"


@capability("memcpy", "the trace has memcpy events")
def _memcpy(t: Trace) -> str | None:
    return None if (t.gpu.kind == MEMCPY).any() else "the trace has no memcpy events"


@capability("runtime", "the trace has CUDA/HIP runtime API events")
def _runtime(t: Trace) -> str | None:
    return None if len(t.runtime) else "the trace has no CUDA/HIP runtime events"
