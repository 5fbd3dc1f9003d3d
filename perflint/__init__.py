"""perflint: a rules-based performance linter and CI gate for GPU profiler traces."""

from __future__ import annotations

__version__ = "0.1.0"
