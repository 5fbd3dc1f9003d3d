from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = Path(os.environ.get("PERFLINT_SHARED", ROOT.parent / "shared"))
TRACES = SHARED / "traces"
FIXTURES = ROOT / "fixtures"

# Hypothesis profiles. "ci" (the default, what .ci/run runs) is deterministic: the same examples
# on every run and machine, so a landing never depends on a dice roll; an example it should keep
# checking is written into the test (@example) or as a plain test. "explore" (PERFLINT_FUZZ=explore)
# draws fresh random examples, many of them, to hunt for new bugs; CI runs it in a job of its own
# that cannot fail the build. PERFLINT_FUZZ_EXAMPLES sets how many examples it draws.
settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=60, print_blob=True)
settings.register_profile(
    "explore", deadline=None, max_examples=int(os.environ.get("PERFLINT_FUZZ_EXAMPLES", "1000")), print_blob=True
)
settings.load_profile(os.environ.get("PERFLINT_FUZZ", "ci"))


def shared_trace(rel: str) -> str:
    """Path of a corpus trace; in CI a missing corpus fails loudly instead of skipping."""
    p = TRACES / rel
    if not p.exists():
        if os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
            pytest.fail(f"shared trace corpus missing: {p}")
        pytest.skip(f"shared trace corpus not available: {p}")
    return str(p)


@pytest.fixture
def traces_dir() -> Path:
    if not TRACES.exists():
        if os.environ.get("CI") or os.environ.get("PERFLINT_REQUIRE_SHARED"):
            pytest.fail(f"shared trace corpus missing: {TRACES}")
        pytest.skip("shared trace corpus not available")
    return TRACES
