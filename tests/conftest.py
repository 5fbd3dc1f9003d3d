from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PERFLINT_SHARED", ROOT.parent / "shared"))
TRACES = SHARED / "traces"
FIXTURES = ROOT / "fixtures"


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
