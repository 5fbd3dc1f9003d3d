"""The PyTorch anti-pattern facts: what each pattern needs to match, and the look-alikes that must
not (a loop in C++, a Dataset indexed inside DataLoader.__next__, a model moved to the GPU at
start-up, bookkeeping ops between a convolution and its norm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import perflint.facts.builtin  # noqa: F401  (registers the fact sources)
from perflint.facts import Context
from perflint.facts.patterns import LOOP_MIN, _runs, pytorch_patterns
from perflint.graph.load import load_trace
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES


def _rows(b: TraceBuilder, tmp_path: Path) -> list[dict[str, Any]]:
    return pytorch_patterns(Context(load_trace(b.write(tmp_path / "t.json"))))


def _loop_trace(parent: str | None, kind: str = "cpu_op", iterations: int = 12) -> TraceBuilder:
    b = TraceBuilder(device=None)
    b.step(1, 0, 2000)
    if parent is not None:
        b.op(parent, 5, 1900, cat=kind)
    for i in range(iterations):
        t = 10 + 20 * i
        b.op("aten::select", t, 5, dims=[[32, 8], [], []], types=["float", "Scalar", "Scalar"])
        b.op("aten::mul", t + 7, 5, dims=[[8], []], types=["float", "Scalar"])
    return b


def test_runs_find_the_period_and_the_iteration_start() -> None:
    s, m, c, x = 1, 2, 3, 9
    names = [x, c, s, m, c, s, m, c, s, m] + [c, s, m] * (LOOP_MIN - 3) + [x]
    (start, period, reps), = _runs(names, s)
    assert (start, period) == (1, 3) and reps == LOOP_MIN  # starts at c, the op before the first select
    assert _runs([s, m] * (LOOP_MIN - 1), s) == []  # one iteration short
    # A block with several selects: the shortest period that repeats wins.
    names = [s, s, m, s, c] * LOOP_MIN
    assert _runs(names, s) == [(0, 5, LOOP_MIN)]


def test_a_python_loop_under_a_step_or_annotation_matches(tmp_path: Path) -> None:
    for parent, kind in ((None, "cpu_op"), ("my_loop", "user_annotation")):
        rows = [r for r in _rows(_loop_trace(parent, kind), tmp_path) if r["pattern"] == "loop_indexing"]
        assert [(r["what"], r["iterations"]) for r in rows] == [("aten::select -> aten::mul", 12.0)], parent


@pytest.mark.parametrize("parent", ["StackBackward0", "aten::unbind", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"])
def test_loops_in_cpp_or_in_the_data_loader_do_not(parent: str, tmp_path: Path) -> None:
    kind = "user_annotation" if parent.startswith("enumerate") else "cpu_op"
    assert not [r for r in _rows(_loop_trace(parent, kind), tmp_path) if r["pattern"] == "loop_indexing"]


def test_nine_iterations_are_not_a_loop(tmp_path: Path) -> None:
    assert not _rows(_loop_trace(None, iterations=LOOP_MIN - 1), tmp_path)


def test_conv_bias_needs_the_norm_next_on_its_level(tmp_path: Path) -> None:
    conv = {"dims": [[4, 16, 16, 16], [16, 16, 3, 3], [16], [], [], [], []], "types": ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]}
    norm = {"dims": [[4, 16, 16, 16], [16], [16], [16], [16]], "types": ["float"] * 5}
    b = TraceBuilder(device=None)
    b.step(1, 0, 2000)
    b.op("aten::conv2d", 10, 100, **conv)  # type: ignore[arg-type]
    b.op("aten::add_", 115, 3, dims=[[], [], []], types=["long int", "Scalar", "Scalar"])  # num_batches_tracked
    b.op("aten::batch_norm", 120, 50, **norm)  # type: ignore[arg-type]
    b.op("aten::conv2d", 200, 100, **conv)  # type: ignore[arg-type]
    b.op("aten::relu", 305, 10, dims=[[4, 16, 16, 16]], types=["float"])  # conv -> relu -> norm: the bias is not cancelled
    b.op("aten::batch_norm", 320, 50, **norm)  # type: ignore[arg-type]
    rows = [r for r in _rows(b, tmp_path) if r["pattern"] == "conv_bias_before_batchnorm"]
    assert [r["count"] for r in rows] == [1]


def test_a_model_moved_to_the_gpu_is_not_a_per_step_copy(tmp_path: Path) -> None:
    """Without step markers the copies are still found (the rule needs steps to judge them); a
    copy whose previous op made the tensor on the GPU is not one."""
    b = TraceBuilder()
    b.op("aten::uniform_", 10, 50, dims=[[64, 64], [], [], []], types=["float", "Scalar", "Scalar", ""])
    b.op("aten::to", 70, 60, dims=[[64, 64], [], [], [], []], types=["float", "", "", "", ""])
    b.op("aten::copy_", 75, 50, dims=[[64, 64], [64, 64], []], types=["float", "float", "Scalar"])
    b.memcpy(90, 20, 16384, launch_ts=80, launch_dur=40)
    b.op("aten::zeros", 200, 20, dims=[[], [], [], [], []], types=["", "", "", "", ""])
    b.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 230, 3, launch_ts=205)
    b.op("aten::to", 240, 60, dims=[[64, 64], [], [], [], []], types=["float", "", "", "", ""])
    b.op("aten::copy_", 245, 50, dims=[[64, 64], [64, 64], []], types=["float", "float", "Scalar"])
    b.memcpy(260, 20, 16384, launch_ts=250, launch_dur=40)
    rows = [r for r in _rows(b, tmp_path) if r["pattern"] == "cpu_tensor_to_gpu"]
    assert [(r["what"], r["count"], r["bytes"]) for r in rows] == [("aten::uniform_ -> aten::to", 1, 16384)]
    # The saving is the fill and the copy call, not the whole aten::to.
    assert rows[0]["saved_us"] == pytest.approx(50 + 40)


def test_recorded_fixtures_show_each_pattern_and_their_twins_none() -> None:
    def patterns(name: str) -> list[str]:
        return sorted(r["pattern"] for r in pytorch_patterns(Context(load_trace(str(FIXTURES / "cpu" / f"{name}.pt.trace.json.gz")))))

    assert patterns("optimizer_single_tensor") == ["single_tensor_optimizer"]
    assert patterns("zero_grad_zeroes") == ["zero_grad_not_none"]
    assert patterns("conv_bias_bn") == ["conv_bias_before_batchnorm"]
    assert patterns("loop_indexing") == ["loop_indexing", "loop_indexing"]
    for twin in ("optimizer_foreach", "zero_grad_none", "conv_nobias_bn", "loop_vectorized", "dataloader_workers"):
        assert patterns(twin) == [], twin


@pytest.mark.parametrize(
    ("name", "matrix"),
    [("aten::mm", True), ("aten::cudnn_convolution_backward_input", True), ("ConvolutionBackward0", True), ("AddmmBackward0", True),
     ("CompiledFunction", False), ("CompiledFunctionBackward", False), ("ReluBackward0", False), ("aten::relu", False)],
)  # fmt: skip
def test_matrix_ops_include_their_backward_ops_not_compiled_graphs(name: str, matrix: bool) -> None:
    from perflint.facts.matrix_owner import is_matrix_op

    assert is_matrix_op(name) is matrix
