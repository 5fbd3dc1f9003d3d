"""perflint: a rules-based performance linter and CI gate for GPU profiler traces.

The Python API (docs/api.md) is re-exported here and imported on first use: `import perflint`
stays as cheap as the CLI's start-up needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflint._version import __version__
from perflint.errors import InputError, PerflintError

if TYPE_CHECKING:
    from perflint.api import CheckResult, check, comms, kernels, load, ops, summary  # noqa: F401 (lazy re-exports, see __getattr__)

_API = ("CheckResult", "check", "comms", "kernels", "load", "ops", "summary")
__all__ = [*_API, "InputError", "PerflintError", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from perflint import api

        return getattr(api, name)
    raise AttributeError(f"module 'perflint' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
