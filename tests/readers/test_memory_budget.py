"""--memory-budget (issue 6 point 5): a trace bigger than the budget is still read, slice by
slice, with the same findings and numbers as the fast path, and a progress line on a TTY."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from perflint.cli import main
from perflint.readers import budget
from perflint.readers.kineto import chunked
from perflint.readers.kineto import reader as kineto
from perflint.report import progress
from tests.conftest import shared_trace

TRACE = "hta/negative_queue_length_values_check/rank0.json.gz"  # 25.8 MB uncompressed
MB = 1 << 20


@pytest.mark.parametrize(
    ("text", "n"),
    [("512M", 512 * MB), ("4G", 4 << 30), ("1.5GiB", int(1.5 * (1 << 30))), ("2048", 2048), ("64 mb", 64 * MB), ("1k", 1024)],
)
def test_parse_size(text: str, n: int) -> None:
    assert budget.parse_size(text) == n


@pytest.mark.parametrize("text", ["", "12X", "-1G", "0", "G", "1.2.3M"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        budget.parse_size(text)


def test_bad_budget_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", shared_trace(TRACE), "--memory-budget", "lots"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--memory-budget" in err[0] and "not a size" in err[0]


def test_plan_shrinks_slices_then_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    size = 32 * MB
    limit = 64 << 30
    assert budget.plan(1 << 30, 2, size, memory_budget=limit) == budget.Plan(2, size, None)
    # Room for two workers, but not with 32 MB slices.
    need_fixed = budget.BASE_BYTES + budget.COLUMNS_PER_BYTE * (1 << 30)
    limit = int(need_fixed + budget.in_flight(2, 8 * MB, False))
    p = budget.plan(1 << 30, 2, size, memory_budget=limit)
    assert p.workers == 2 and budget.MIN_PARALLEL_SLICE <= p.slice_bytes <= 8 * MB and p.note is None
    # Too little for parallel slices of a useful size: one worker, small slices.
    limit = int(need_fixed + budget.in_flight(1, 3 * MB, False))
    p = budget.plan(1 << 30, 2, size, memory_budget=limit)
    assert p.workers == 1 and budget.MIN_SLICE <= p.slice_bytes <= 3 * MB and p.note is None
    # Below what the columns alone need: still read (smallest slices), with a warning.
    limit = 64 * MB
    p = budget.plan(1 << 30, 2, size, memory_budget=limit)
    assert p == budget.Plan(2, budget.MIN_PARALLEL_SLICE, p.note) and p.note and "64 MiB" in p.note
    assert budget.plan(1 << 30, 1, size, memory_budget=limit) == budget.Plan(1, budget.MIN_SLICE, p.note)
    # A .gz keeps a ring of slices: the same budget allows smaller slices than a plain file.
    limit = int(need_fixed + budget.in_flight(2, 8 * MB, False))
    assert budget.plan(1 << 30, 2, size, gz=True, memory_budget=limit).slice_bytes < budget.plan(1 << 30, 2, size, memory_budget=limit).slice_bytes


def test_environment_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLINT_MEMORY_BUDGET", "3G")
    assert budget.budget() == 3 << 30
    monkeypatch.setenv("PERFLINT_MEMORY_BUDGET", "nonsense")  # ignored, not fatal
    assert budget.budget() == budget.available_memory()


def _json_check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    rc = main(["check", "--format", "json", "--jobs", "1", *argv])
    return rc, json.loads(capsys.readouterr().out)


def test_budget_below_trace_size_same_results(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = shared_trace(TRACE)
    rc_fast, fast = _json_check([path], capsys)
    slices: list[int] = []
    real = chunked.read_sliced

    def spy(buf: Any, add: Any, size: int | None = None, progress: Any = None) -> Any:
        slices.append(int(size or 0))
        return real(buf, add, size, progress)

    monkeypatch.setattr(kineto, "read_sliced", spy)
    rc_small, small = _json_check([path, "--memory-budget", "16M"], capsys)
    assert slices == [budget.MIN_SLICE]  # the sequential slicer, 1 MiB slices
    assert rc_small == rc_fast
    (t_fast,), (t_small,) = fast["traces"], small["traces"]
    assert [w for w in t_small["warnings"] if "memory budget (16 MiB)" in w]
    t_small["warnings"] = [w for w in t_small["warnings"] if "memory budget" not in w]
    assert t_small == t_fast
    assert small == fast  # findings, metrics, rule statuses: the whole report


def test_progress_while_streaming(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "enabled", lambda stream=None: True)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.001)
    seen: list[tuple[int, int]] = []
    from perflint import pipeline

    real_call = pipeline._ProgressRelay.__call__

    def record(self: Any, done: int, total: int) -> None:
        if self.progress is not None:
            seen.append((done, total))
        real_call(self, done, total)

    monkeypatch.setattr(pipeline._ProgressRelay, "__call__", record)
    rc = main(["check", shared_trace(TRACE), "--jobs", "1", "--memory-budget", "16M"])
    assert rc in (0, 1)
    assert len(seen) > 10 and seen[-1][0] <= seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    err = capsys.readouterr().err
    assert re.search(r"rank0\.json\.gz \d+%", err), err[-300:]
