"""A hand-built RunResult covering every report feature, so report goldens do not move when rules evolve."""

from __future__ import annotations

from typing import Any

from perflint.findings import Finding, RuleStatus, RunResult, SkippedFile, TraceResult

RULES: list[dict[str, Any]] = [
    {
        "code": "TC001",
        "name": "tensor-cores.half-precision-without-tensor-cores",
        "severity": "error",
        "groups": ["tensor-cores", "gemm"],
        "summary": "fp16/bf16 GEMM or convolution kernels that ran without Tensor Cores",
        "rationale": "Half-precision matrix math is only fast on Tensor Cores.",
        "fix": "Pad the inner dimensions to multiples of 8.",
        "params": {"min_share_pct": 0.5},
        "references": [{"title": "NVIDIA DL Performance Guide", "url": "https://docs.nvidia.com/deeplearning/performance/"}],
    },
    {
        "code": "LAUNCH001",
        "name": "launch.launch-bound",
        "severity": "warning",
        "groups": ["launch"],
        "summary": "The GPU waits on kernel launches",
        "rationale": "Short kernels launched one by one leave the GPU idle between them.",
        "fix": "Use CUDA graphs or torch.compile.",
        "params": {},
        "references": [],
    },
    {
        "code": "HEALTH003",
        "name": "health.no-input-dims",
        "severity": "info",
        "groups": ["health"],
        "summary": "The trace has no input shapes",
        "rationale": "Shape rules need record_shapes=True.",
        "fix": "Profile with record_shapes=True.",
        "params": {},
        "references": [],
    },
    {
        "code": "STRAG001",
        "name": "distributed.straggler-rank",
        "severity": "warning",
        "groups": ["distributed"],
        "summary": "One rank is slower than the others",
        "rationale": "Collectives wait for the slowest rank.",
        "fix": "Balance the work across ranks.",
        "params": {"min_excess_pct": 10.0},
        "references": [],
    },
]

METRICS: dict[str, Any] = {
    "steps": {"count": 3, "median_us": 12500.0, "excluded_edges": True},
    "gpu": {"utilization_pct": 61.25, "sm_efficiency_pct": 40.0, "achieved_occupancy_pct": None},
    "temporal": {"idle_pct": 38.75, "compute_pct": 55.0, "non_compute_pct": 6.25},
    "tensor_cores": {"kernel_time_pct": 12.5},
    "kernels": {
        "count": 42,
        "by_category": {
            "gemm": {"time_us": 6000.0, "pct": 60.0},
            "elementwise": {"time_us": 3000.0, "pct": 30.0},
            "memcpy": {"time_us": 1000.0, "pct": 10.0},
            "conv": {"time_us": 0.0, "pct": 0.0},
        },
        "top": [
            {"name": "void gemv2T_kernel_val<int, int, __nv_bfloat16, float, 128|16>", "total_us": 4000.0, "count": 12, "mean_us": 333.33, "top_level_op": "aten::linear"},
            {"name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", "total_us": 2000.0, "count": 12, "mean_us": 166.67, "top_level_op": "aten::mm"},
        ],
    },
}


def _finding(code: str, severity: str, message: str, trace: str, rank: int | None, n: int, **kw: Any) -> Finding:
    name = next(r["name"] for r in RULES if r["code"] == code)
    return Finding(code=code, name=name, severity=severity, message=message, trace=trace, rank=rank,
                   fingerprint=f"{code.lower()}-{n:04d}", **kw)


def sample_result(fail_on: str = "error") -> RunResult:
    a = "traces/train.pt.trace.json.gz"
    b = "traces/ranks/rank1.json"
    statuses = [
        RuleStatus("TC001", RULES[0]["name"], "error", "failed", findings=2),
        RuleStatus("LAUNCH001", RULES[1]["name"], "warning", "failed", findings=2),
        RuleStatus("HEALTH003", RULES[2]["name"], "info", "passed"),
    ]
    t1 = TraceResult(
        path=a, rank=None, device={"name": "NVIDIA A100-SXM4-80GB", "sm_count": 108}, metrics=METRICS,
        statuses=statuses,
        findings=[
            _finding("TC001", "error", "bf16 gemm kernel ran without Tensor Cores: 12 launches, 4000.0 us (40.0% of kernel time) from aten::linear | with input dims [[1, 1024], [1024, 4096]]",
                     a, None, 1, impact_us=3000.0, kernel="void gemv2T_kernel_val<int, int, __nv_bfloat16>", op="aten::linear",
                     op_stack=["nn.Module: Model_0", "aten::linear"], input_dims=[[1, 1024], [1024, 4096]],
                     source="model/head.py:42", fix="Pad the inner dimensions to multiples of 8.",
                     evidence={"kernel": "void gemv2T_kernel_val<int, int, __nv_bfloat16>", "count": 12, "time_us": 4000.0, "share_pct": 40.0}),
            _finding("TC001", "error", "fp16 gemm kernel ran without Tensor Cores: 3 launches, 90.0 us", a, None, 2,
                     impact_us=67.5, evidence={"count": 3, "time_us": 90.0}, suppressed="known: tiny head, fixed in #123"),
            _finding("LAUNCH001", "warning", "the GPU is idle 38.8% of the step waiting on launches", a, None, 3,
                     impact_us=4800.0, evidence={"idle_pct": 38.75, "kernels_per_step": 1400}),
            _finding("LAUNCH001", "warning", "the GPU is idle 20.0% of the step waiting on launches", a, None, 4,
                     impact_us=900.0, accepted="baseline since v1.2"),
        ],
        warnings=["the last ProfilerStep is incomplete"],
    )
    t2 = TraceResult(
        path=b, rank=1, device={"name": "NVIDIA H100 80GB HBM3", "sm_count": 132}, metrics={},
        statuses=[
            RuleStatus("TC001", RULES[0]["name"], "error", "skipped", reason="the trace has no GPU kernel events (CPU-only trace?)"),
            RuleStatus("LAUNCH001", RULES[1]["name"], "warning", "passed"),
            RuleStatus("HEALTH003", RULES[2]["name"], "info", "failed", findings=1),
        ],
        findings=[_finding("HEALTH003", "info", "no op has Input Dims: profile with record_shapes=True", b, 1, 5)],
    )
    return RunResult(
        traces=[t1, t2],
        errors=["traces/broken.json: invalid JSON at byte 17"],
        run_findings=[_finding("STRAG001", "warning", "rank 1 steps take 25.0% longer than the median rank", b, 1, 6,
                               impact_us=2500.0, evidence={"rank": 1, "excess_pct": 25.0})],
        run_statuses=[RuleStatus("STRAG001", RULES[3]["name"], "warning", "failed", findings=1)],
        notices=["suppression for TC009 in .perflint.yaml matched nothing"],
        rules=RULES,
        fail_on=fail_on,
        skipped=[
            SkippedFile("traces/et/run_et.json.gz", "PyTorch execution trace (top-level keys 'schema', 'nodes'), not a profiler trace"),
            SkippedFile("traces/README.md", "not a trace file name (.json, .json.gz)"),
        ],
    )


def many_findings(n: int) -> RunResult:
    """A clean run (no errors) with n findings: for size budgets and annotation limits."""
    r = sample_result()
    t = r.traces[0]
    sev = ("error", "warning", "info")
    codes = {"error": "TC001", "warning": "LAUNCH001", "info": "HEALTH003"}
    t.findings = [
        _finding(codes[sev[i % 3]], sev[i % 3], f"finding number {i} " + "x" * 80, t.path, None, 100 + i,
                 impact_us=float(i), evidence={"i": i, "blob": "y" * 60}, source=f"src/m{i % 7}.py:{i + 1}")
        for i in range(n)
    ]
    r.errors = []
    r.run_findings = []
    return r
