"""The what-ifs against real before/after pairs: each pair is one run recorded before and after
the change a finding recommends, so the finding's predicted step saving can be held to the
measured change of the median step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perflint.api import check
from perflint.findings import Finding
from perflint.graph.load import load_trace
from perflint.stepmodel import step_model
from tests.conftest import FIXTURES, shared_trace


def _only_file(folder: str) -> str:
    (p,) = Path(folder).iterdir()
    return str(p)


def _checked(path: str) -> tuple[list[Finding], dict[str, Any]]:
    (t,) = check([path]).run.traces
    return t.findings, t.metrics["step_model"]


def _median_step(path: str) -> float:
    us = step_model(load_trace(path)).median_step_us
    assert us is not None and us > 0
    return us


def _one(found: list[Finding], code: str) -> Finding:
    (f,) = [f for f in found if f.code == code]
    return f


def _per_step(f: Finding, key: str) -> float:
    v = f.evidence[key]
    assert isinstance(v, (int, float))
    return float(v)


def _gemm_per_step(path: str) -> float:
    m = step_model(load_trace(path))
    return m.category_us()["gemm"] / len(m.steps)


def test_data_loading_saving_matches_more_workers() -> None:
    """num_workers=0 -> 4: the loader's wait leaves the step, the rest of the step stays."""
    before, after = (_only_file(shared_trace(f"kineto/samples/resnet50_num_workers_{n}")) for n in (0, 4))
    found, _ = _checked(before)
    predicted = _per_step(_one(found, "DATA001"), "step_saving_per_step_us")
    measured = _median_step(before) - _median_step(after)
    assert measured > 0
    assert abs(predicted - measured) <= 0.25 * measured, (predicted, measured)


def test_tensor_core_saving_on_a_launch_bound_step_is_what_the_step_won() -> None:
    """fp32 -> TF32 GEMMs on a launch-bound step: the kernels get faster, the step does not, and
    the finding predicts the step's change, not the GPU time, while keeping that in evidence."""
    before, after = str(FIXTURES / "gpu/gemm_fp32.pt.trace.json.gz"), str(FIXTURES / "gpu/gemm_tf32.pt.trace.json.gz")
    found, _ = _checked(before)
    tc = _one(found, "TC002")
    step = _median_step(before)
    measured = max(0.0, step - _median_step(after))
    assert _per_step(tc, "step_saving_per_step_us") <= measured + 0.1 * step
    assert tc.severity == "info"  # off the critical path: below a warning
    steps = len(step_model(load_trace(before)).steps)
    gpu_saved = _per_step(tc, "gpu_time_saved_us") / steps
    gemm_change = _gemm_per_step(before) - _gemm_per_step(after)
    assert abs(gpu_saved - gemm_change) <= 0.5 * gemm_change, (gpu_saved, gemm_change)


def test_alignment_saving_on_a_launch_bound_step_is_what_the_step_won() -> None:
    """fp16 GEMMs with odd dims -> padded to multiples of 8: the same launch-bound shape."""
    before = str(FIXTURES / "gpu/gemm_fp16_unaligned.pt.trace.json.gz")
    after = str(FIXTURES / "gpu/gemm_fp16_aligned.pt.trace.json.gz")
    found, _ = _checked(before)
    dim = _one(found, "DIM001")
    step = _median_step(before)
    measured = max(0.0, step - _median_step(after))
    assert _per_step(dim, "step_saving_per_step_us") <= measured + 0.1 * step
    steps = len(step_model(load_trace(before)).steps)
    gpu_saved = _per_step(dim, "gpu_time_saved_us") / steps
    gemm_change = _gemm_per_step(before) - _gemm_per_step(after)
    assert abs(gpu_saved - gemm_change) <= 0.5 * gemm_change, (gpu_saved, gemm_change)


def test_fixing_a_regression_predicts_the_step_it_came_from() -> None:
    """regress_head adds a host sync and odd GEMM dims to regress_base: fixing every finding of
    the head together predicts the base's step."""
    before = str(FIXTURES / "gpu/regress_head.pt.trace.json.gz")
    after = str(FIXTURES / "gpu/regress_base.pt.trace.json.gz")
    found, model = _checked(before)
    assert {"DIM001", "SYNC001"} <= {f.code for f in found}
    wi = model["what_if_all"]
    predicted = wi["step_us"] - wi["predicted_step_us"]
    measured = _median_step(before) - _median_step(after)
    assert measured > 0
    assert abs(predicted - measured) <= 0.25 * measured, (predicted, measured)
    # Each alone saves less than all together, and none more than the step.
    for w in wi["what_ifs"]:
        assert 0 <= w["saving_per_step_us"] <= predicted + 1e-6
