"""Entry-point plugins (groups perflint.facts, perflint.readers, perflint.reporters).

importlib.metadata costs ~60 ms to import and ~15 ms per `entry_points()` scan: start-up time of
every run, although almost no installation has a plugin. A plugin is declared in the
entry_points.txt of its installed distribution, so a glance at those files (a few ms) says
whether any distribution mentions a perflint group; only then is importlib.metadata asked.
Where that glance cannot be trusted (a zip or egg file on sys.path) it is asked anyway.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_MARK = b"[perflint."
_seen: dict[tuple[str, ...], bool] = {}


def _mentions_perflint(directory: str) -> bool:
    try:
        entries = os.scandir(directory)
    except OSError:
        return False
    with entries:
        for e in entries:
            if not e.name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(e.path, "entry_points.txt"), "rb") as f:
                    if _MARK in f.read():
                        return True
            except OSError:
                continue
    return False


def _any_declared() -> bool:
    key = tuple(sys.path)
    got = _seen.get(key)
    if got is None:
        got = False
        for p in key:
            p = p or "."
            if os.path.isfile(p):  # a zip or egg: only importlib.metadata can look inside
                got = True
                break
            if _mentions_perflint(p):
                got = True
                break
        _seen[key] = got
    return got


def entry_points(group: str) -> list[Any]:
    """The installed entry points of `group` (importlib.metadata EntryPoint objects)."""
    if not _any_declared():
        return []
    from importlib.metadata import entry_points as _entry_points

    return list(_entry_points(group=group))
