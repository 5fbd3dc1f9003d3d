"""The fact catalogue: every scope a rule can run over, with each field's type, unit and meaning,
and the capabilities a rule can `require`. `perflint rules facts` prints it; docs/facts.md is
generated from it (a test keeps the file fresh and checks every type against real rows).

A field's unit and type follow its name (`_us` microseconds, `_pct` percent, `_bytes` bytes,
`has_` a yes/no); the few fields whose names do not say are listed in TYPES.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflint.facts import CAPABILITIES, CAPABILITY_DOCS, FIELD_MODULE, RUN_SOURCES, SOURCES, fields_of, load_all

# unit suffix -> (unit, type)
_SUFFIX = {
    "_us": ("µs", "number"),
    "_ms": ("ms", "number"),
    "_pct": ("%", "number"),
    "_bytes": ("bytes", "integer"),
    "_gib": ("GiB", "number"),
    "_ratio": ("", "number"),
}
# Fields whose names do not say their type (checked against real rows by the tests).
TYPES: dict[str, str] = {
    "achieved_tflops": "number",
    "align": "integer",
    "api_count": "integer",
    "api_slow_calls": "integer",
    "attainable_tflops": "number",
    "bandwidth_gbps": "number",
    "bandwidth_gbs": "number",
    "base_count": "integer",
    "base_median": "number",
    "base_n": "integer",
    "batch": "integer",
    "block": "list",
    "blocks": "integer",
    "blocks_per_sm": "number",
    "bytes": "integer",
    "comm_kernels": "integer",
    "compute_capability": "integer",
    "conv": "object",
    "count": "integer",
    "cur_count": "integer",
    "cur_median": "number",
    "cur_n": "integer",
    "dataloader_calls": "integer",
    "dataloader_steps": "integer",
    "dataloader_in_main_process": "bool",
    "delay_outliers": "integer",
    "delta": "number",
    "device_id": "integer",
    "events": "integer",
    "exact": "bool",
    "fastest_stage": "integer",
    "flops": "number",
    "fused": "bool",
    "gap_count": "integer",
    "gaps_ms": "list",
    "grid": "list",
    "grid_fill": "number",
    "half_fp_inst": "number",
    "helper": "bool",
    "higher_is_worse": "bool",
    "idle_delay_outliers": "integer",
    "in_steps": "bool",
    "input_dims": "list",
    "intensity": "number",
    "iterations": "number",
    "k": "integer",
    "kernel_align": "integer",
    "kernel_count": "integer",
    "launch_count": "integer",
    "launches": "integer",
    "layout_conversion": "bool",
    "long_gap_count": "integer",
    "longest_step": "integer",
    "m": "integer",
    "matrix_tflops": "number",
    "max_blocks_per_sm": "integer",
    "mean_bytes": "number",
    "misaligned_dims": "list",
    "misaligned_values": "list",
    "n": "integer",
    "op_stack": "list",
    "ops_per_step": "number",
    "p_better": "number",
    "p_value": "number",
    "padded": "object",
    "padded_dims": "list",
    "pageable": "bool",
    "pct_of_attainable": "number",
    "peer_min_steps": "integer",
    "peers": "integer",
    "late_collectives": "integer",
    "joined_collectives": "integer",
    "late_step": "integer",
    "per_step": "number",
    "pipeline_stage": "integer",
    "pipeline_stages": "integer",
    "rank": "integer",
    "ranks": "integer",
    "recorded_steps": "integer",
    "registers": "integer",
    "runtime_outliers": "integer",
    "shared_memory": "integer",
    "short_kernels": "integer",
    "slow_calls": "integer",
    "slow_launch_calls": "integer",
    "slowest": "bool",
    "sm_count": "integer",
    "stage": "integer",
    "stages": "integer",
    "steady": "bool",
    "steady_steps": "integer",
    "step": "integer",
    "step_busy_worst": "integer",
    "step_count": "integer",
    "steps": "integer",
    "tc_peak_tflops": "number",
    "tensor_cores": "bool",
    "tensor_pipe_inst": "number",
    "threads_per_block": "integer",
    "tiles": "integer",
    "timed_steps": "integer",
    "top_launch_ops": "list",
    "top_ops": "list",
    "warp_size": "integer",
    "waves": "number",
    "whole_trace": "bool",
    "window_kernels": "integer",
    "world_size": "integer",
    "worse": "number",
    "xstream_waits": "integer",
}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # number | integer | bool | text | list | object
    unit: str
    meaning: str


@dataclass(frozen=True)
class Scope:
    name: str
    run_level: bool  # rows over all ranks of a run, not per trace
    key: tuple[str, ...]
    doc: str
    fields: tuple[Field, ...]


def field_type(name: str) -> tuple[str, str]:
    """(type, unit) of a field from its name (TYPES first)."""
    for suffix, (unit, typ) in _SUFFIX.items():
        if name.endswith(suffix):
            return TYPES.get(name, typ), unit
    if name.startswith(("has_", "is_")):
        return TYPES.get(name, "bool"), ""
    return TYPES.get(name, "text"), ""


def _builtin(module: str) -> bool:
    return module.startswith("perflint.")


def scopes(builtin_only: bool = False) -> list[Scope]:
    """Every scope (with `builtin_only`, perflint's own: what docs/facts.md documents)."""
    load_all()
    out = []
    for name, src in sorted(SOURCES.items()):
        if not builtin_only or _builtin(src.fn.__module__):
            out.append(Scope(name, False, src.key, src.doc, _fields(name, builtin_only)))
    for name, (fn, key, _f) in sorted(RUN_SOURCES.items()):
        if not builtin_only or _builtin(fn.__module__):
            out.append(Scope(name, True, key, (fn.__doc__ or "").strip(), _fields(name, builtin_only)))
    return out


def _fields(scope: str, builtin_only: bool) -> tuple[Field, ...]:
    return tuple(
        Field(n, *field_type(n), meaning)
        for n, meaning in fields_of(scope).items()
        if not builtin_only or _builtin(FIELD_MODULE.get((scope, n), "perflint."))
    )


def capabilities(builtin_only: bool = False) -> dict[str, str]:
    """Capability -> what it checks."""
    load_all()
    return {
        name: CAPABILITY_DOCS.get(name, "")
        for name, fn in sorted(CAPABILITIES.items())
        if not builtin_only or _builtin(fn.__module__)
    }


__all__ = ["Field", "Scope", "TYPES", "capabilities", "field_type", "scopes"]
