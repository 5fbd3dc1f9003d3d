"""pytest plugin (entry point `pytest11`): the `perflint` fixture, to check profiler traces in a
test suite (docs/api.md).

pytest loads this module at every start-up where perflint is installed, so it imports only pytest
and the standard library; perflint's analysis is imported by the first check.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from perflint.api import CheckResult, FailOn, PathArg, Paths, Selectors

FAIL_ON_CHOICES = ("error", "warning", "info", "never")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perflint", "perflint: performance checks on profiler traces")
    group.addoption(
        "--perflint-fail-on",
        choices=FAIL_ON_CHOICES,
        default=None,
        help="severity at which the perflint fixture fails a test, for every check of the session "
        "(overrides the tests' own fail_on)",
    )
    group.addoption(
        "--perflint-keep-traces",
        default=None,
        metavar="DIR",
        help="copy the traces that perflint.profile() records to DIR",
    )


@dataclass
class Profiled:
    """What `perflint.profile()` yields: `path` and `result` are set when the block has ended."""

    path: Path | None = None
    result: CheckResult | None = None


def failure_text(result: CheckResult) -> str:
    """Why a check failed: the one-line errors of traces that could not be read, else the report
    as `perflint check` prints it followed by each failing rule's fix."""
    if result.errors:
        return "\n".join(f"perflint: error: {e.line()}" for e in result.errors)
    from perflint.findings import SEVERITY_RANK

    floor = SEVERITY_RANK.get(result.run.fail_on, 0)
    fixes: dict[str, str] = {}
    for f in result.findings:
        if SEVERITY_RANK[f.severity] >= floor and f.fix:
            fixes.setdefault(f.code, f.fix)
    text = result.to_text().rstrip("\n")
    if fixes:
        text += "\n\nHow to fix\n" + "\n".join(f"  {code}: {fix}" for code, fix in fixes.items())
    return text


class PerflintFixture:
    """The `perflint` fixture: check traces, fail the test when they are not clean, and profile a
    block of PyTorch code."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self._request = request
        self._tmp_path = tmp_path
        self._fail_on: str | None = request.config.getoption("perflint_fail_on")
        self._keep: str | None = request.config.getoption("perflint_keep_traces")
        self._profiles = 0

    def check(
        self,
        paths: Paths,
        *,
        select: Selectors = None,
        ignore: Selectors = None,
        fail_on: FailOn | None = None,
        config: PathArg | None = None,
        **kwargs: Any,
    ) -> CheckResult:
        """`perflint.check` with the session's --perflint-fail-on; the result, pass or fail."""
        from perflint.api import check

        gate: Any = self._fail_on or fail_on
        return check(paths, select=select, ignore=ignore, fail_on=gate, config=config, **kwargs)

    def assert_clean(
        self,
        paths: Paths,
        *,
        select: Selectors = None,
        ignore: Selectors = None,
        fail_on: FailOn | None = None,
        config: PathArg | None = None,
        **kwargs: Any,
    ) -> CheckResult:
        """Fail the test unless the traces pass the gate; the result when they do."""
        result = self.check(paths, select=select, ignore=ignore, fail_on=fail_on, config=config, **kwargs)
        if result.exit_code != 0:
            pytest.fail(failure_text(result), pytrace=False)
        return result

    @contextlib.contextmanager
    def profile(
        self,
        *,
        select: Selectors = None,
        ignore: Selectors = None,
        fail_on: FailOn | None = None,
        config: PathArg | None = None,
        name: str | None = None,
    ) -> Iterator[Profiled]:
        """Run torch.profiler (CPU, and CUDA where available; shapes and stacks recorded) around
        the block, write the trace under the test's tmp_path and `assert_clean` it when the block
        ends. Skips the test where torch is missing. Rules that need what the trace lacks (GPU
        kernels on a CPU run) are skipped, not failed."""
        try:
            import torch
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as torch_profile
        except ImportError as exc:
            pytest.skip(f"perflint.profile() needs torch: {exc}")
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        handle = Profiled()
        with torch_profile(activities=activities, record_shapes=True, with_stack=True) as prof:
            yield handle
        self._profiles += 1
        stem = name or f"profile{self._profiles}"
        path = self._tmp_path / f"{_safe(stem)}.pt.trace.json"
        prof.export_chrome_trace(str(path))
        handle.path = path
        if self._keep:
            os.makedirs(self._keep, exist_ok=True)
            shutil.copyfile(path, Path(self._keep) / f"{_safe(self._request.node.nodeid)}-{path.name}")
        handle.result = self.assert_clean(path, select=select, ignore=ignore, fail_on=fail_on, config=config)


def _safe(text: str) -> str:
    """A file name from a test id or a user's label."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.") or "profile"


@pytest.fixture
def perflint(request: pytest.FixtureRequest, tmp_path: Path) -> PerflintFixture:
    """Check profiler traces in a test: `assert_clean(paths, ...)`, `check(paths, ...)`,
    `with profile(...):`."""
    return PerflintFixture(request, tmp_path)
