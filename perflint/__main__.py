from __future__ import annotations

from perflint.cli import entry_point

entry_point()
