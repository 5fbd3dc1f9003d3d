"""Headless Chromium for the HTML report's browser tests (CI installs it: apt-get install chromium)."""

from __future__ import annotations

import shutil


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None
