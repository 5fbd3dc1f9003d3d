"""What the benchmark's steps share: the repository root, units, logging and paths in the report."""
from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parent.parent
# The real traces, where the tests look for them too (PERFLINT_SHARED, else beside the repo).
SHARED = Path(os.environ.get("PERFLINT_SHARED", REPO.parent / "shared"))


MB = 1_000_000  # sizes are in MB = 1e6 bytes, as scale_trace.py's --target-mb


GZ_LEVEL = 6


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fmt_cmd(cmd: Sequence[str]) -> str:
    """Shell form of a command; long inline scripts are shown in a readable way."""
    parts = []
    for a in cmd:
        parts.append(shlex.quote(a))
    return " ".join(parts)


def short(p: Path | str) -> str:
    """Path relative to the repository where possible (for the report)."""
    try:
        return os.path.relpath(p, REPO)
    except ValueError:
        return str(p)


def tail(path: Path, n: int = 800) -> str:
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def write_section(path: Path, section: str, text: str) -> None:
    """`text` as the section of `path` headed `section` (a "## ..." line): the old section is
    replaced up to the next "## " heading, or `text` is appended."""
    doc = path.read_text()
    if section in doc:
        head, rest = doc.split(section, 1)
        nxt = re.search(r"^## ", rest, re.M)
        doc = head + text + ("\n" + rest[nxt.start() :] if nxt else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)
