"""The pytest plugin: the `perflint` fixture run inside pytest's own plugin-test harness."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytest_plugins = ["pytester"]

GPU = ROOT / "fixtures" / "gpu"
# Odd GEMM dims (4100/4090 hidden sizes) that the GPU-bound step waits on: DIM001 is a warning.
UNALIGNED = str(GPU / "regress_head.pt.trace.json.gz")
CLEAN = str(GPU / "clean_bf16.pt.trace.json.gz")

NO_TORCH = """
import sys
sys.modules["torch"] = None  # import torch raises ImportError, as where it is not installed
"""


@pytest.fixture(autouse=True, scope="module")
def _analysis_loaded() -> None:
    """pytester's in-process runs forget the modules they imported: numpy cannot be imported twice
    in one process, and a process pool's classes must stay those its threads pickle. Load
    perflint's analysis, its report and the worker pool (two traces) here, outside those runs."""
    import concurrent.futures.process  # noqa: F401

    import perflint

    perflint.check([UNALIGNED, CLEAN], select=["DIM"]).to_text()


def _tests(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_traces=f"UNALIGNED = {UNALIGNED!r}\nCLEAN = {CLEAN!r}\n\n{body}")


def test_plugin_is_registered_through_the_entry_point(pytester: pytest.Pytester) -> None:
    _tests(pytester, "def test_fixture(perflint):\n    assert hasattr(perflint, 'assert_clean')\n")
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--perflint-fail-on*", "*--perflint-keep-traces*"])
    pytester.runpytest().assert_outcomes(passed=1)


def test_importing_the_plugin_loads_no_analysis() -> None:
    import subprocess

    code = (
        "import sys, perflint.pytest_plugin\n"
        "loaded = [m for m in ('perflint.api', 'numpy', 'perflint.pipeline') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_assert_clean_passes_and_fails_with_the_report(pytester: pytest.Pytester) -> None:
    _tests(
        pytester,
        """
def test_clean(perflint):
    result = perflint.assert_clean(CLEAN, select=["TC", "DIM"], fail_on="warning")
    assert result.exit_code == 0

def test_unaligned(perflint):
    perflint.assert_clean(UNALIGNED, select=["DIM"], fail_on="warning")

def test_check_returns_the_result(perflint):
    result = perflint.check(UNALIGNED, select=["DIM"], fail_on="warning")
    assert result.exit_code == 1 and result.findings[0].code == "DIM001"
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*DIM001 shapes.gemm-dims-not-aligned*", "*How to fix*", "*DIM001: Pad the misaligned dims*"])
    assert "perflint: FAILED (fail-on warning)" in out
    assert "Traceback" not in out and "pytest_plugin.py" not in out  # pytest.fail without a traceback


def test_bad_trace_fails_with_the_one_line_error(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "broken.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    _tests(pytester, f"def test_bad(perflint):\n    perflint.assert_clean([{str(bad)!r}, CLEAN])\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    lines = [line for line in result.stdout.lines if line.startswith("perflint: error:")]
    assert len(lines) == 1 and str(bad) in lines[0], result.stdout.str()


def test_fail_on_option_overrides_the_tests(pytester: pytest.Pytester) -> None:
    _tests(pytester, "def test_unaligned(perflint):\n    perflint.assert_clean(UNALIGNED, select=['DIM'], fail_on='warning')\n")
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest("--perflint-fail-on", "never").assert_outcomes(passed=1)
    pytester.runpytest("--perflint-fail-on", "error").assert_outcomes(passed=1)
    _tests(pytester, "def test_unaligned(perflint):\n    perflint.assert_clean(UNALIGNED, select=['DIM'])\n")
    pytester.runpytest().assert_outcomes(passed=1)  # DIM001 is a warning; the default gate is error
    pytester.runpytest("--perflint-fail-on", "info").assert_outcomes(failed=1)


PROFILE_TEST = """
import json
import pytest

def test_profile(perflint):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    batch = torch.randn(16, 64)
    with perflint.profile(select=["TC", "SYNC", "HEALTH"], fail_on="info", name="mlp") as prof:
        for _ in range(3):
            model(batch).sum().backward()
            prof.step()
    assert prof.path.exists() and prof.result.exit_code == 0 and prof.steps == 3
    names = {e.get("name") for e in json.loads(prof.path.read_text())["traceEvents"]}
    assert {"ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"} <= names
    assert not prof.result.findings  # HEALTH001 ("call prof.step()") does not fire: the steps are marked
    if not torch.cuda.is_available():  # a CPU run: the GPU rules are skipped, not failed
        assert "GPU kernel" in prof.result.skipped_rules["TC001"]
    with pytest.raises(RuntimeError, match="inside the"):
        prof.step()  # the block has ended
"""


def test_profile_skips_without_torch(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_TORCH)
    pytester.makepyfile(
        test_profile="def test_profile(perflint):\n    with perflint.profile():\n        raise AssertionError('not run')\n"
    )
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*perflint.profile() needs torch*"])


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_profile_records_checks_and_keeps_the_trace(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # Not imported here: pytester forgets the modules a test imported, and torch's extension
    # cannot be imported twice in one process.
    keep = tmp_path / "kept"
    pytester.makepyfile(test_profile=PROFILE_TEST)
    # In a process of its own: torch's modules cannot be forgotten and imported again, as an
    # in-process run would.
    result = pytester.runpytest_subprocess("--perflint-keep-traces", str(keep))
    result.assert_outcomes(passed=1)
    kept = [p.name for p in keep.iterdir()]
    assert kept == ["test_profile.py_test_profile-mlp.pt.trace.json"], kept
    import perflint

    assert perflint.ops(keep / kept[0]), "the kept trace is readable"


def test_the_example_skips_its_profile_test_without_torch(pytester: pytest.Pytester) -> None:
    """examples/pytest as shipped: the recorded-trace test passes, the profile() test skips."""
    pytester.makeconftest(NO_TORCH)
    copy = pytester.path / "examples" / "pytest"
    copy.mkdir(parents=True)
    for name in ("test_perf.py", "tiny_model.py"):
        (copy / name).write_text((ROOT / "examples" / "pytest" / name).read_text())
    (pytester.path / "fixtures").symlink_to(ROOT / "fixtures")  # where the example finds the repository's traces
    result = pytester.runpytest_subprocess("examples/pytest", "-rs")  # its module names are taken in this process
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*perflint.profile() needs torch*"])
