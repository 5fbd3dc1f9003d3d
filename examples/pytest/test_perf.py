"""Pre-merge performance checks with perflint's pytest plugin (the `perflint` fixture).

Run: pytest examples/pytest   (add --perflint-keep-traces DIR to keep the recorded traces)
"""

from __future__ import annotations

from pathlib import Path

from tiny_model import make_model, train

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_recorded_trace_is_clean(perflint):  # type: ignore[no-untyped-def]
    """A trace recorded elsewhere (a nightly GPU job, say) must pass the Tensor Core and shape rules."""
    perflint.assert_clean(FIXTURES / "gpu" / "clean_bf16.pt.trace.json.gz", select=["TC", "DIM"], fail_on="warning")


def test_training_steps_are_clean(perflint):  # type: ignore[no-untyped-def]
    """Profile three training steps, each marked with `prof.step()`, and fail on any warning. On a
    CPU-only machine the rules that need GPU kernels are reported as skipped; without torch the
    test is skipped."""
    with perflint.profile(select=["TC", "SYNC", "DIM", "HEALTH"], fail_on="warning", name="train") as prof:
        train(make_model(), steps=3, on_step=prof.step)
    assert prof.result is not None and prof.result.passed and prof.steps == 3
