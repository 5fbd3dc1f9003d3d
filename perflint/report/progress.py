"""A progress line on stderr for long loads: only on a terminal, never in CI logs.

It appears once the work has taken a second (short runs print nothing), redraws a few times a
second from a daemon thread (so a single big file still shows elapsed time), and erases itself
when done. Disabled when stderr is not a TTY, when CI / GITHUB_ACTIONS is set, or with
PERFLINT_NO_PROGRESS=1.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

DELAY_S = 1.0
TICK_S = 0.2
BAR = 24


def enabled(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    if os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS") or os.environ.get("PERFLINT_NO_PROGRESS"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """`with Progress(total, "reading") as p: ... p.advance(name)`; a no-op when not enabled."""

    def __init__(self, total: int, label: str = "reading traces", stream: TextIO | None = None, force: bool | None = None) -> None:
        self.total, self.label = total, label
        self.stream = stream or sys.stderr
        self.on = enabled(self.stream) if force is None else force
        self.done = 0
        self.current = ""
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.on:
            self._thread = threading.Thread(target=self._loop, name="perflint-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()

    def advance(self, current: str = "") -> None:
        with self._lock:
            self.done += 1
            self.current = current

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        filled = BAR * self.done // self.total if self.total else BAR
        bar = "#" * filled + "-" * (BAR - filled)
        name = os.path.basename(self.current)[-40:]
        return f"perflint: {self.label} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s {name}"

    def _loop(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while True:
            with self._lock:
                self.stream.write("\r\x1b[2K" + self.line())
                self.stream.flush()
                self.shown = True
            if self._stop.wait(TICK_S):
                return
