"""pytest plugin (entry point `pytest11`): the `perflint` fixture, to check profiler traces in a
test suite (docs/api.md).

pytest loads this module at every start-up where perflint is installed, so it imports only pytest,
the standard library and the declaration of the check's options (perflint.options); perflint's
analysis is imported by the first check.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from perflint.findings import FAIL_ON, reaches
from perflint.options import OPTIONS

if TYPE_CHECKING:
    from perflint.api import CheckResult, Paths


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perflint", "perflint: performance checks on profiler traces")
    group.addoption(
        "--perflint-fail-on",
        choices=FAIL_ON,
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
    """What `perflint.profile()` yields: call `step()` at the end of each training step inside the
    block, so that the trace marks steps (the step rules need them); `path` and `result` are set
    when the block has ended."""

    path: Path | None = None
    result: CheckResult | None = None
    steps: int = 0
    profiler: Any = field(default=None, repr=False)

    def step(self) -> None:
        """End the current step and start the next (`torch.profiler.profile.step()`)."""
        if self.profiler is None or self.path is not None:
            raise RuntimeError("step() is called inside the `with perflint.profile()` block")
        self.profiler.step()
        self.steps += 1


def failure_text(result: CheckResult) -> str:
    """Why a check failed: the one-line errors of traces that could not be read, else the report
    as `perflint check` prints it followed by each failing rule's fix."""
    if result.errors:
        return "\n".join(f"perflint: error: {e.line()}" for e in result.errors)
    fixes: dict[str, str] = {}
    for f in result.findings:
        if reaches(f.severity, result.run.fail_on) and f.fix:
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

    def check(self, paths: Paths, **options: Any) -> CheckResult:
        """`perflint.check` (the same keyword arguments) with the session's --perflint-fail-on;
        the result, pass or fail."""
        from perflint.api import check

        if self._fail_on:
            options["fail_on"] = self._fail_on
        return check(paths, **options)

    def assert_clean(self, paths: Paths, **options: Any) -> CheckResult:
        """Fail the test unless the traces pass the gate; the result when they do."""
        result = self.check(paths, **options)
        if result.exit_code != 0:
            pytest.fail(failure_text(result), pytrace=False)
        return result

    @contextlib.contextmanager
    def profile(self, *, name: str | None = None, **options: Any) -> Iterator[Profiled]:
        """Run torch.profiler (CPU, and CUDA where available; shapes and stacks recorded) around
        the block, write the trace under the test's tmp_path and `assert_clean` it when the block
        ends, with `options` (those of `perflint.check`). Skips the test where torch is missing. Rules
        that need what the trace lacks (GPU kernels on a CPU run) are skipped, not failed."""
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
        # A schedule that always records: without one, torch's step() marks no ProfilerStep#N.
        with torch_profile(
            activities=activities, schedule=_record_always, record_shapes=True, with_stack=True
        ) as prof:
            handle.profiler = prof
            yield handle
        self._profiles += 1
        stem = name or f"profile{self._profiles}"
        path = self._tmp_path / f"{_safe(stem)}.pt.trace.json"
        prof.export_chrome_trace(str(path))
        handle.path = path
        if self._keep:
            os.makedirs(self._keep, exist_ok=True)
            shutil.copyfile(path, Path(self._keep) / f"{_safe(self._request.node.nodeid)}-{path.name}")
        handle.result = self.assert_clean(path, **options)


def _record_always(step: int) -> Any:
    from torch.profiler import ProfilerAction

    return ProfilerAction.RECORD


def _with_options(method: Callable[..., Any]) -> None:
    """`method`'s signature as help() and inspect show it: its own parameters, then each option of
    the check as a keyword argument (what its `**options` takes)."""
    keywords = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=o.type) for o in OPTIONS]
    own = inspect.signature(method)
    params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    method.__signature__ = own.replace(parameters=[*params, *keywords])  # type: ignore[attr-defined]


_with_options(PerflintFixture.check)
_with_options(PerflintFixture.assert_clean)
_with_options(PerflintFixture.profile)


def _safe(text: str) -> str:
    """A file name from a test id or a user's label."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.") or "profile"


@pytest.fixture
def perflint(request: pytest.FixtureRequest, tmp_path: Path) -> PerflintFixture:
    """Check profiler traces in a test: `assert_clean(paths, ...)`, `check(paths, ...)`,
    `with profile(...):`."""
    return PerflintFixture(request, tmp_path)
