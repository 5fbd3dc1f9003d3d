"""Where a finding's recorded source file is in the repository, for the reports that point at it.

Stacks record the path the profiled process saw: a bare name (`train.py`), a path relative to
wherever it ran, or an absolute path on the machine that recorded the trace. Code hosts place a
location only on a path relative to the repository root, and a path that names no file there is
a broken link, so each recorded path is placed against the source root:

- a relative path that exists under the root (or from the working directory, below the root) is kept;
- an absolute path under the root becomes relative to it;
- otherwise the source tree is searched for the file by name, and the longest tail of the
  recorded path that some file ends with decides: one such file places it, two or more leave it
  unplaced (ambiguous), as does none.

Installed packages (site-packages, dist-packages) are never looked for in the tree. The tree is
indexed once per run and report root, skipping hidden directories (.git, .venv, caches),
virtualenvs, node_modules, the root's build outputs and symlinked directories, and at most `MAX_ENTRIES`
directory entries: past that the index is incomplete, so no search can prove a match unique and
only the direct rules above place a path. Trace paths are not searched: they name files on this
machine (`_common.repo_path` places them).
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from perflint.findings import Finding, RunResult
from perflint.report._common import repo_path, trace_context

MAX_ENTRIES = 100_000  # about a second of walking on a busy 2-core machine
# Directories that hold installed packages or no sources at all (names starting with "." are
# skipped besides these, and virtualenvs and conda environments by their marker files)...
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "dist-packages"})
# ...and, at the root, build outputs: copies of the sources that would make every name ambiguous.
SKIP_AT_ROOT = frozenset({"build", "dist", "htmlcov", "target"})
_ENV_MARKERS = frozenset({"pyvenv.cfg", "conda-meta"})
_INSTALLED = frozenset({"site-packages", "dist-packages"})
_DRIVE = re.compile(r"^[A-Za-z]:/")


@dataclass(frozen=True)
class Where:
    """A finding's place in the repository: `path` and `line` (None: the file as a whole, the
    trace's), and `unplaced`, the recorded `file:line` that could not be placed (None when placed
    or when the trace recorded no source)."""

    path: str
    line: int | None
    unplaced: str | None = None


class SourceLocator:
    """Places recorded source paths under `root`; the tree is indexed on the first search."""

    def __init__(self, root: str, cwd: str | None = None, max_entries: int = MAX_ENTRIES) -> None:
        self.root = Path(root).resolve()
        self.cwd = Path(cwd or os.getcwd())
        self.max_entries = max_entries
        self._index: dict[str, list[tuple[str, ...]]] | None = None
        self.complete = True
        self._placed: dict[str, str | None] = {}

    def place(self, recorded: str) -> str | None:
        """`recorded` as a POSIX path relative to the root, or None when no single file matches."""
        if recorded not in self._placed:
            self._placed[recorded] = self._place(recorded)
        return self._placed[recorded]

    def _place(self, recorded: str) -> str | None:
        p = recorded.replace("\\", "/")
        drive = _DRIVE.match(p) is not None
        if not p or p.endswith("/"):
            return None
        if not drive and not p.startswith("/"):
            for base in (self.root, self.cwd):
                here = base / p
                if here.is_file():
                    rel = _under(here.resolve(), self.root)
                    if rel is not None:
                        return rel
        elif not drive:
            rel = _under(Path(os.path.normpath(p)), self.root) or _under(Path(p).resolve(), self.root)
            if rel is not None:
                return rel
        parts = tuple(s for s in PurePosixPath(p[2:] if drive else p).parts if s not in ("/", ".", ".."))
        if not parts or _INSTALLED.intersection(parts):
            return None
        return self._search(parts)

    def _search(self, parts: tuple[str, ...]) -> str | None:
        index = self._tree()
        if not self.complete:
            return None
        candidates = index.get(parts[-1], [])
        for k in range(len(parts), 0, -1):
            tail = parts[-k:]
            matches = [c for c in candidates if c[-k:] == tail]
            if matches:  # a shorter tail matches these and maybe more: the longest decides
                return "/".join(matches[0]) if len(matches) == 1 else None
        return None

    def _tree(self) -> dict[str, list[tuple[str, ...]]]:
        if self._index is not None:
            return self._index
        index: dict[str, list[tuple[str, ...]]] = {}
        seen = 0
        stack: list[tuple[str, tuple[str, ...]]] = [(str(self.root), ())]
        while stack:
            directory, rel = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            seen += len(entries)
            if seen > self.max_entries:
                self.complete = False
                break
            if rel and any(e.name in _ENV_MARKERS for e in entries):
                continue  # a virtualenv or conda environment, whatever its name
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        skip = e.name.startswith(".") or e.name in SKIP_DIRS or (not rel and e.name in SKIP_AT_ROOT)
                        if not skip:
                            stack.append((e.path, (*rel, e.name)))
                    elif e.is_file():
                        index.setdefault(e.name, []).append((*rel, e.name))
                except OSError:
                    continue
        self._index = index
        return index


def _under(path: Path, root: Path) -> str | None:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        return None
    return None if rel == "." else rel


# One locator per run and root, so the several reports of one run index the tree once, and a
# later run (the tree may have changed) starts afresh.
_LOCATORS: dict[tuple[int, str, str], SourceLocator] = {}


def locator(result: RunResult, root: str) -> SourceLocator:
    cwd = os.getcwd()
    key = (id(result), root, cwd)
    got = _LOCATORS.get(key)
    if got is None:
        got = _LOCATORS[key] = SourceLocator(root, cwd)
        weakref.finalize(result, _LOCATORS.pop, key, None)
    return got


def where(f: Finding, root: str, places: SourceLocator) -> Where:
    """The user's source `(file, line)` when the trace recorded it and it is placed; else the trace
    (no line), with the recorded source kept in `unplaced` for the message."""
    src = f.source_file_line
    if src is not None:
        placed = places.place(src[0])
        if placed is not None:
            return Where(placed, max(src[1], 1))
    trace = repo_path(f.trace, root)
    return Where(trace if trace is not None else f.trace, None, f"{src[0]}:{src[1]}" if src is not None else None)


def source_note(w: Where) -> str:
    """Names the recorded source line in the message when the location could not point at it."""
    return f"[source: {w.unplaced}]" if w.unplaced else ""


def context(f: Finding, w: Where) -> str:
    """What a one-line message adds after its location: the trace (and rank) when it points at the
    source line, else the unplaced source line and the rank ("" when neither)."""
    if w.line is not None:
        return f" {trace_context(f)}"
    return "".join(f" {note}" for note in (source_note(w), "" if f.rank is None else f"[rank {f.rank}]") if note)
