"""The step graph and its replay: built traces with known answers, and the real corpus, where
replaying each step's graph with the measured durations must give back the measured step."""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from perflint.graph.load import load_trace, load_traces
from perflint.readers import discover
from perflint.stepmodel import REPLAY_OK_PCT, step_model
from perflint.stepmodel.graph import trace_facts
from tests.builder import TraceBuilder
from tests.conftest import FIXTURES, TRACES


def _model(b: TraceBuilder, tmp_path: Path) -> object:
    return step_model(load_trace(b.write(tmp_path / "t.json")))


def _steps(b: TraceBuilder, n: int, length: float, cpu: float | None = None) -> None:
    """n steps `length` apart whose CPU spans last `cpu` (the whole length by default)."""
    for i in range(n):
        b.step(i + 1, ts=i * length, dur=length if cpu is None else cpu)


def test_host_bound_step_replays_exactly_and_waits_on_the_cpu(tmp_path: Path) -> None:
    """Tiny kernels launched with 90 us of Python between them: the step waits on the CPU."""
    b = TraceBuilder()
    _steps(b, 3, 1000.0)
    for i in range(3):
        for k in range(10):
            at = i * 1000.0 + 10 + k * 95
            b.kernel("void at::native::vectorized_elementwise_kernel<4>", ts=at + 8, dur=3, launch_ts=at, launch_dur=5)
    m = step_model(load_trace(b.write(tmp_path / "t.json")))
    assert m.replay_error_pct is not None and m.replay_error_pct < 0.5
    bound = dict(m.bound_by())
    assert max(bound, key=lambda c: bound[c]) == "cpu"
    assert abs(sum(bound.values()) - m.steps[m.median_index].us) < 1e-6  # the pieces add up to the step


def test_gpu_bound_step_waits_on_its_kernels(tmp_path: Path) -> None:
    b = TraceBuilder()
    _steps(b, 3, 1000.0, cpu=20.0)  # the host launches all four at once and moves on
    for i in range(3):
        t0 = i * 1000.0
        for k in range(4):  # launched at once, each runs 240 us back to back
            b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 10 + k * 240, dur=240, launch_ts=t0 + k * 2, launch_dur=1)
    m = step_model(load_trace(b.write(tmp_path / "t.json")))
    bound = dict(m.bound_by())
    assert max(bound, key=lambda c: bound[c]) == "gpu_gemm" and bound["gpu_gemm"] > 0.9 * sum(bound.values())


def test_a_host_sync_waits_for_the_kernel_it_syncs_on(tmp_path: Path) -> None:
    """cudaStreamSynchronize returns when the long kernel ends: the replay derives its end from
    the kernel's, and the CPU work after it follows."""
    b = TraceBuilder()
    _steps(b, 3, 2000.0)
    for i in range(3):
        t0 = i * 2000.0
        b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 20, dur=1500, launch_ts=t0 + 10, launch_dur=5)
        b.runtime("cudaStreamSynchronize", ts=t0 + 30, dur=1492)  # returns at 1522, 2 us after the kernel
        b.kernel("void at::native::vectorized_elementwise_kernel<4>", ts=t0 + 1700, dur=50, launch_ts=t0 + 1690, launch_dur=5)
    m = step_model(load_trace(b.write(tmp_path / "t.json")))
    assert m.replay_error_pct is not None and m.replay_error_pct < 0.5
    path = m.critical_path()
    assert path is not None
    cats = [s.category for s in path.segments(m.trace)]
    assert "gpu_gemm" in cats and "sync" in cats and cats.index("gpu_gemm") < cats.index("sync")


def test_the_replay_does_not_copy_an_unexplained_start(tmp_path: Path) -> None:
    """A kernel that starts 5 ms after its launch with nothing recorded to wait for: the replay
    starts it after its launch latency, and says which edge is missing."""
    b = TraceBuilder()
    _steps(b, 3, 7000.0, cpu=700.0)
    for i in range(3):
        t0 = i * 7000.0
        for k in range(5):  # a few idle-stream launches set the latency to 8 us
            b.kernel("void at::native::vectorized_elementwise_kernel<4>", ts=t0 + k * 100 + 8, dur=5, launch_ts=t0 + k * 100)
        b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 5600, dur=100, launch_ts=t0 + 600)
    m = step_model(load_trace(b.write(tmp_path / "t.json")))
    assert m.replay_error_pct is not None and m.replay_error_pct > 50
    assert m.replay_notes and "does not record" in m.replay_notes[0]
    assert dict(m.bound_by()).get("other", 0.0) > 4000  # the unexplained wait is named as such


def test_an_inferred_cross_stream_wait(tmp_path: Path) -> None:
    """A kernel on stream 8 starts right when a copy on stream 7 ends, long after its launch:
    the replay makes it wait for the copy."""
    b = TraceBuilder()
    _steps(b, 3, 3000.0, cpu=50.0)
    for i in range(3):
        t0 = i * 3000.0
        for k in range(3):  # launches onto an idle stream 8 show the launch latency
            b.kernel("void at::native::vectorized_elementwise_kernel<4>", ts=t0 + k * 5 + 8, dur=1, launch_ts=t0 + k * 5, launch_dur=2, stream=8)
        b.memcpy(ts=t0 + 20, dur=2000, nbytes=1 << 20, src="Pinned", launch_ts=t0 + 10, stream=7)
        b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 2023, dur=300, launch_ts=t0 + 15, stream=8)
    m = step_model(load_trace(b.write(tmp_path / "t.json")))
    assert m.replay_error_pct is not None and m.replay_error_pct < 1.0
    path = m.critical_path()
    assert path is not None
    assert [s.category for s in path.segments(m.trace) if s.us > 100] == ["memcpy", "gpu_gemm"]


def test_a_recorded_event_wait(tmp_path: Path) -> None:
    """Stream 8 waits for an event recorded on stream 7 after a long GEMM, and starts 30 us after
    the GEMM ends (too late for a timing guess to tie them): the recorded wait ties them, and the
    replay does not start the waiting kernel at its launch."""
    b = TraceBuilder()
    _steps(b, 3, 4000.0, cpu=60.0)
    for i in range(3):
        t0 = i * 4000.0
        for k in range(3):  # launches onto an idle stream 8 show the launch latency
            b.kernel("void at::native::vectorized_elementwise_kernel<4>", ts=t0 + k * 5 + 8, dur=1, launch_ts=t0 + k * 5, launch_dur=2, stream=8)
        b.kernel("ampere_sgemm_128x64_nn", ts=t0 + 30, dur=1000, launch_ts=t0 + 20, launch_dur=2, stream=7)
        rec = b.event_record(t0 + 23)
        b.kernel("ampere_sgemm_64x64_nn", ts=t0 + 1030, dur=500, launch_ts=t0 + 27, launch_dur=2, stream=7)  # after the record
        b.stream_wait_event(t0 + 30, stream=8, record=rec, record_stream=7)
        b.kernel("void at::native::reduce_kernel<512, 1>", ts=t0 + 1060, dur=2000, launch_ts=t0 + 33, launch_dur=2, stream=8)
    t = load_trace(b.write(tmp_path / "t.json"))
    m = step_model(t)
    assert m.replay_error_pct is not None and m.replay_error_pct < 2.0
    tf = trace_facts(t)
    names = [(t.s(int(t.gpu.name[a])), t.s(int(t.gpu.name[z]))) for a, z in zip(tf.event_src.tolist(), tf.event_dst.tolist())]
    assert names == [("ampere_sgemm_128x64_nn", "void at::native::reduce_kernel<512, 1>")] * 3
    path = m.critical_path()
    assert path is not None
    assert [s.category for s in path.segments(t) if s.us > 100] == ["gpu_gemm", "gpu_reduction"]


def test_recorded_event_waits_in_a_real_trace() -> None:
    """HTA's AlexNet trace records cudaStreamWaitEvent waits between its compute and side
    streams: each pair ties the last work launched on the recording stream before the record to
    the first work launched on the waiting stream after the wait, found here from the raw events."""
    path = TRACES / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    if not path.exists():
        pytest.skip("shared traces not present")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    work = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    expected = set()
    for e in events:
        a = e.get("args", {})
        if e.get("cat") != "cuda_sync" or "wait_on_cuda_event_record_corr_id" not in a:
            continue
        rec_ts = calls[a["wait_on_cuda_event_record_corr_id"]]["ts"]
        wait_ts = calls[a["correlation"]]["ts"]
        before = [w for w in work if w["args"]["stream"] == a["wait_on_stream"] and calls[w["args"]["correlation"]]["ts"] < rec_ts]
        after = [w for w in work if w["args"]["stream"] == a["stream"] and calls[w["args"]["correlation"]]["ts"] >= wait_ts]
        if before and after:
            src = max(before, key=lambda w: calls[w["args"]["correlation"]]["ts"])
            dst = min(after, key=lambda w: calls[w["args"]["correlation"]]["ts"])
            expected.add((src["args"]["correlation"], dst["args"]["correlation"]))
    t = load_trace(str(path))
    tf = trace_facts(t)
    got = set(zip(t.gpu.correlation[tf.event_src].tolist(), t.gpu.correlation[tf.event_dst].tolist()))
    assert expected and got == expected


# --- the real corpus ----------------------------------------------------------------------


def _corpus() -> list[str]:
    """The real traces: the corpus and the recorded fixtures (fixtures/nsys holds made-up rows)."""
    roots = [str(FIXTURES / "gpu"), str(FIXTURES / "cpu")]
    if TRACES.exists():
        roots.append(str(TRACES))
    elif os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
        raise RuntimeError(f"shared trace corpus missing: {TRACES}")
    return discover(roots)[0]


@pytest.fixture(scope="module")
def replays() -> dict[str, list[tuple[str, int, float | None, tuple[str, ...]]]]:
    """Per format: (trace, recorded steps, replay error %, notes) of every trace with GPU work."""
    out: dict[str, list[tuple[str, int, float | None, tuple[str, ...]]]] = defaultdict(list)
    for path in _corpus():
        for t in load_traces(path):
            if not (t.gpu.kind == 0).any():
                continue
            m = step_model(t)
            out[t.format].append((t.label, len(t.steps), m.replay_error_pct, m.replay_notes))
    return out


def test_replay_reproduces_steps_with_three_or_more_steps(replays: dict[str, list[tuple[str, int, float | None, tuple[str, ...]]]]) -> None:
    """<= 3% on at least 90% of the traces with >= 3 steps, and <= 10% on all of them unless the
    output says which edge the trace could not give."""
    eligible = [(f, r) for f, rows in replays.items() for r in rows if r[1] >= 3 and r[2] is not None]
    assert len(eligible) >= 20
    within = [r for _, r in eligible if r[2] is not None and r[2] <= REPLAY_OK_PCT]
    assert len(within) >= 0.9 * len(eligible), [(r[0], r[2]) for _, r in eligible if r not in within]
    for fmt, (label, _, err, notes) in eligible:
        assert err is not None
        assert err <= 10.0 or (notes and "does not record" in notes[0]), (fmt, label, err)


def test_replay_per_format(replays: dict[str, list[tuple[str, int, float | None, tuple[str, ...]]]]) -> None:
    """Every format with launch records replays its traces within 3%, or says why not; a format
    that records none (MindSpore) says so instead of a number."""
    for fmt, rows in replays.items():
        for label, _, err, notes in rows:
            if err is None:
                assert notes and notes[0].startswith("no replay"), (fmt, label)
            elif err > REPLAY_OK_PCT:
                assert notes, (fmt, label, err)
    assert {"kineto", "nsys", "nvprof"} <= {f for f, rows in replays.items() if any(r[2] is not None for r in rows)}
    assert all(np.isfinite(r[2]) for rows in replays.values() for r in rows if r[2] is not None)


def test_the_c_replay_equals_the_python_one() -> None:
    """The C extension (where built) and the pure-Python replay give the same floats, on real
    step graphs and on random graphs with cycles."""
    import importlib

    replay = importlib.import_module("perflint.stepmodel.replay")
    if replay.native is None:
        pytest.skip("the C replay is not built here")
    from perflint.stepmodel.simulate import block_graph

    graphs = []
    for name in ("clean_bf16", "sync_item", "dataloader"):
        t = load_trace(str(FIXTURES / "gpu" / f"{name}.pt.trace.json.gz"))
        got = block_graph(t, step_model(t).window)
        assert got is not None
        g = got[0]
        graphs.append((g.indptr, g.pred, g.delay, g.from_start, g.release, g.dur))
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        counts = rng.integers(0, 4, n)
        indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        pred = rng.integers(0, n, int(counts.sum())).astype(np.int64)  # any node: cycles too
        graphs.append((indptr, pred, rng.random(len(pred)) * 5, rng.random(len(pred)) < 0.3, rng.random(n) * 10, rng.random(n) * 3))
    for args in graphs:
        c, py = replay.longest_path(*args), replay.longest_path_py(*args)
        assert c.start.tolist() == py.start.tolist() and c.end.tolist() == py.end.tolist() and c.binding.tolist() == py.binding.tolist()
        # The critical-path walk back from every node, with and without a shared `seen`.
        n = len(c.start)
        shared_c, shared_py = np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.uint8)
        for v in range(0, n, max(1, n // 25)):
            lo = float(c.start[v]) - 5.0
            w = (c.binding, args[1], args[3], c.start, c.end, lo, v)
            assert replay.walk(*w).tolist() == replay.walk_py(*w, np.zeros(n, dtype=np.uint8)).tolist()
            assert replay.walk(*w[:5], -np.inf, v, shared_c).tolist() == replay.walk_py(*w[:5], -np.inf, v, shared_py).tolist()


def test_node_lookup_by_row_is_isin() -> None:
    """The what-ifs find a fix's nodes by table lookup: the same nodes as a search of every node."""
    t = load_trace(str(FIXTURES / "gpu/regress_head.pt.trace.json.gz"))
    r = step_model(t).block
    assert r is not None
    g = r.graph
    rng = np.random.default_rng(0)
    for kinds, n in (((2,), len(t.gpu)), ((0,), len(t.runtime)), ((0, 1), len(t.runtime)), ((1,), len(t.runtime))):
        rows = np.concatenate([rng.integers(0, n, 200), [-1, n + 5]])
        got = g.nodes_of(kinds, rows)
        assert got.any()
        assert (got == (np.isin(g.kind, kinds) & np.isin(g.ref, rows))).all()
