"""Work done a slice of rows at a time (to keep big traces' temporaries small) gives what the
same work over whole columns gives. The traces that ship with the project are far shorter than
one slice, so each test shrinks the slice to a few rows: every slice boundary is crossed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflint import ids
from perflint.facts import Context, rows
from perflint.facts import launch as launch_facts
from perflint.facts.builtin import load_all
from perflint.graph.load import load_trace
from perflint.readers.nsys import queries
from perflint.stepmodel import step_model
from perflint.stepmodel import usage as step_usage
from perflint.stepmodel import window as step_window
from tests.conftest import shared_trace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GPU_TRACES = sorted(str(p) for p in (FIXTURES / "gpu").glob("*.pt.trace.json.gz"))


def test_rows_of_is_flatnonzero_in_int32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ids, "_SLICE", 5)
    mask = np.random.default_rng(0).random(103) < 0.4
    got = ids.rows_of(mask)
    assert got.dtype == np.int32
    assert got.tolist() == np.flatnonzero(mask).tolist()
    assert ids.rows_of(np.zeros(0, dtype=bool)).tolist() == []


def test_compress_in_place_keeps_the_rows_asked_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(1).random(101)
    expected = values[values < 0.3].tolist()
    for size in (1, 4, 1 << 18):
        monkeypatch.setattr(ids, "_SLICE", size)
        a = values.copy()
        got = ids.compress_in_place(a, lambda part: part < 0.3)
        assert got.tolist() == expected
        assert np.shares_memory(got, a)  # the caller's own buffer, no copy


def _gap_lengths_whole(ms: np.ndarray, me: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The gaps between busy intervals inside [lo, hi], over whole columns."""
    a = int(np.searchsorted(me, lo, side="right"))
    b = max(a, int(np.searchsorted(ms, hi, side="left")))
    gap = np.append(np.clip(ms[a:b], lo, hi), hi)
    gap[1:] -= np.clip(me[a:b], lo, hi)
    gap[0] -= lo
    return gap[gap > 0]


@pytest.mark.parametrize("seed", range(6))
def test_gap_lengths_across_slices(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    # Disjoint sorted busy intervals, some touching (a zero gap is no gap).
    gaps = np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * 5)
    lens = rng.random(n) * 3 + 0.1
    ms = np.cumsum(gaps + np.concatenate(([0.0], lens[:-1]))) if n else np.zeros(0)
    me = ms + lens
    top = float(me[-1]) if n else 1.0
    lo, hi = float(rng.random() * top / 3), float(top * (0.7 + rng.random() * 0.5))
    expected = _gap_lengths_whole(ms, me, lo, hi)
    for size in (1, 2, 3, 7, 1 << 18):
        monkeypatch.setattr(step_usage, "_SLICE", size)
        monkeypatch.setattr(ids, "_SLICE", max(1, size - 1))
        got = step_usage.gap_lengths(ms, me, lo, hi)
        assert got.tolist() == expected.tolist(), size


def _launch_rows(path: str) -> tuple[list[dict[str, object]], list[dict[str, object]], list[object]]:
    ctx = Context(load_trace(path))
    m = step_model(ctx.trace)
    return rows(ctx, "launch_groups"), rows(ctx, "launch_summary"), [(w.lo, w.hi, u) for w, u in zip(m.steps, m.usage)]


@pytest.mark.parametrize("path", GPU_TRACES[:6], ids=lambda p: Path(p).name.split(".")[0])
def test_launch_facts_and_windows_across_slices(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    load_all()
    whole = _launch_rows(path)
    assert whole[0] and whole[1]  # the fixtures launch kernels: something is compared
    monkeypatch.setattr(launch_facts, "_SLICE", 3)
    monkeypatch.setattr(step_usage, "_SLICE", 5)
    monkeypatch.setattr(step_window, "_SLICE", 5)
    monkeypatch.setattr(ids, "_SLICE", 4)
    sliced = _launch_rows(path)
    assert repr(sliced) == repr(whole)  # repr: nan fields compare equal, floats to the last bit


def test_launch_facts_and_window_without_steps_across_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real Nsight Systems export has no NVTX ranges: one window over the whole trace."""
    load_all()
    path = shared_trace("pipit/cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite")
    whole = _launch_rows(path)
    assert whole[0] and len(whole[2]) == 1 and whole[2][0][2].kernel_count > 1000
    monkeypatch.setattr(launch_facts, "_SLICE", 7)
    monkeypatch.setattr(step_usage, "_SLICE", 6)
    monkeypatch.setattr(step_window, "_SLICE", 6)
    monkeypatch.setattr(ids, "_SLICE", 5)
    assert repr(_launch_rows(path)) == repr(whole)


def test_sink_widens_32_bit_ids_that_do_not_fit() -> None:
    spec: queries.Spec = {"correlation": (np.int32, ()), "ts": (np.float64, ())}
    sink = queries.Sink(spec, 4)
    sink.put({"correlation": np.array([1, 2], dtype=np.int64), "ts": np.array([0.5, 1.5])})
    assert sink.cols["correlation"].dtype == np.int32
    big = 2**32 - 2  # CUPTI ids are unsigned 32-bit
    sink.put({"correlation": np.array([big, -1], dtype=np.int64), "ts": np.array([2.5, 3.5])})
    out = sink.done()
    assert out["correlation"].dtype == np.int64
    assert out["correlation"].tolist() == [1, 2, big, -1]
    assert out["ts"].tolist() == [0.5, 1.5, 2.5, 3.5]


@pytest.mark.parametrize("seed", range(5))
def test_primary_device_and_device_work_across_slices(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    from perflint import model
    from perflint.readers.tables import Strings, Threads, build_trace

    rng = np.random.default_rng(seed)
    n = 40
    kind = rng.choice([model.KERNEL, model.MEMCPY, model.GPU_SYNC], n).astype(np.int8)
    device = rng.choice([0, 1, 3] if seed % 2 else [2], n).astype(np.int32)
    trace = build_trace("t", "test", Strings(), Threads(), gpu={"kind": kind, "device": device, "ts": np.arange(n, dtype=np.float64)})
    devs, counts = np.unique(device[kind == model.KERNEL], return_counts=True)
    expected = int(devs[int(np.argmax(counts))])  # the most kernels; ties: the lowest id
    work = kind != model.GPU_SYNC
    if len(set(device[work].tolist())) > 1:
        work &= device == expected
    for size in (1, 3, 1 << 18):
        monkeypatch.setattr(model, "_SLICE", size)
        monkeypatch.setattr(step_window, "_SLICE", size)
        primary = trace.primary_device
        assert primary is not None and primary.id == expected
        assert step_window.device_work(trace).tolist() == work.tolist()
