"""Options and helpers shared by the commands that read traces."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perflint.errors import UsageError
from perflint.options import BY_NAME, INPUT_OPTIONS, OPTIONS, CheckOptions, read_count, read_size
from perflint.pipeline import Outcome
from perflint.report import REPORTERS, ReportOptions
from perflint.report.output import write_file
from perflint.run import skipped_notice


def add_options(p: argparse.ArgumentParser, names: Sequence[str]) -> None:
    """The named options of a check run (perflint.options), as their specs spell them."""
    for name in names:
        o = BY_NAME[name]
        s = o.spec
        flags = list(s.flags or (f"--{o.dashed}",))
        kw: dict[str, Any] = {"dest": o.name, "help": s.help}
        if o.default is False:
            kw["action"] = "store_true"
        else:
            kw["default"] = [] if s.repeat else o.default
            if s.repeat:
                kw["action"] = "append"
            if s.metavar:
                kw["metavar"] = s.metavar
            if s.choices:
                kw["choices"] = s.choices
            if s.read is not None:
                kw["type"] = text_reader(s.read)
        p.add_argument(*flags, **kw)


def text_reader(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """`read` as an argparse type: its ValueError, a usage error (exit 2) that says what is wrong."""

    def parse(text: str) -> Any:
        try:
            return read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


positive_int = text_reader(read_count)


def _add_paths(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace files (PyTorch/Kineto .json, .json.gz; Nsight Systems .sqlite, .sqlite3, .sql; nvprof .nvvp), "
        "directories of them (one per rank), MindSpore profiler output directories, and .tar, .tar.gz, .tgz or .zip archives "
        "of trace files (read member by member like a directory, never extracted; one member: ARCHIVE!/MEMBER)")


def add_input_options(p: argparse.ArgumentParser) -> None:
    """The traces and how they are read: the options of every command that reads traces."""
    _add_paths(p)
    add_options(p, INPUT_OPTIONS)


def options_of(args: argparse.Namespace) -> CheckOptions:
    """The check run's options the command line gave (those its command takes); the memory
    budget from PERFLINT_MEMORY_BUDGET when not given."""
    given = {o.name: getattr(args, o.name) for o in OPTIONS if hasattr(args, o.name)}
    given["memory_budget"] = budget_of(args)
    return CheckOptions(**given)


BUDGET_ENV = "PERFLINT_MEMORY_BUDGET"


def budget_of(args: argparse.Namespace) -> int | None:
    """--memory-budget, else PERFLINT_MEMORY_BUDGET; a malformed variable is a usage error here,
    where a user reads the answer, rather than a budget silently ignored."""
    given: int | None = getattr(args, "memory_budget", None)
    if given is not None:
        return given
    raw = os.environ.get(BUDGET_ENV)
    if not raw:
        return None
    try:
        return read_size(raw)
    except ValueError as exc:
        raise UsageError(BUDGET_ENV, str(exc)) from None


def report_skipped(skipped: list[tuple[str, str]]) -> None:
    """One notice line per file a directory scan passed over, on stderr."""
    for path, why in skipped:
        print(f"perflint: notice: {skipped_notice(path, why)}", file=sys.stderr)


def write_all(writes: Sequence[Callable[[], object]], debug: bool) -> bool:
    """Run every write (a report, the HTML page, the output file): one that fails prints its own
    line and loses no other. True when any failed (the command then exits 2)."""
    failed = False
    for write in writes:
        try:
            write()
        except UsageError as exc:
            if debug:
                raise
            print(f"perflint: error: {exc.line()}", file=sys.stderr)
            failed = True
    return failed


def write_json(path: str, doc: Any, what: str) -> None:
    """A snapshot or accepted-findings document into `path`, or onto stdout for "-"."""
    from perflint.baseline.files import json_bytes

    write_file(path, json_bytes(doc).decode(), what)


def report_errors(outcomes: list[Outcome], debug: bool) -> bool:
    """Print one line per failed trace on stderr; True when any failed."""
    failed = False
    for o in outcomes:
        if o.error:
            failed = True
            print(f"perflint: error: {o.error}", file=sys.stderr)
            if debug and o.debug:
                print(o.debug, file=sys.stderr)
    return failed


# --- `check`: the run's options, and the reports it writes --------------------------------------

REPORT_FILES = ("json", "junit", "markdown", "sarif", "gitlab")  # --json FILE etc.: reports written besides stdout's
_REPORT_HELP = {
    "json": "also write the JSON report to FILE",
    "junit": "also write a JUnit XML report to FILE (Jenkins, GitLab, Buildkite)",
    "markdown": "also write the Markdown report to FILE (a job summary, a PR comment)",
    "sarif": "also write a SARIF 2.1.0 report to FILE (GitHub code scanning)",
    "gitlab": "also write a GitLab Code Quality report to FILE",
}
MIN_MARKDOWN_BYTES = 256  # the verdict and the counts line always fit


def add_check_options(p: argparse.ArgumentParser, omit: Sequence[str] = ()) -> None:
    """The traces and every option of a check run but those in `omit`."""
    _add_paths(p)
    add_options(p, [o.name for o in OPTIONS if o.name not in omit])


def add_report_options(p: argparse.ArgumentParser) -> None:
    """Where `check` writes its reports, and how they look."""
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when the gate fails (errors still exit 2)")
    p.add_argument(
        "--format",
        choices=sorted(REPORTERS),
        default=None,
        help="report on stdout (default: text; github under GitHub Actions); concise: one 'path:line: CODE message' line per finding",
    )
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write the --format report to FILE")
    for fmt in REPORT_FILES:
        p.add_argument(f"--{fmt}", default=None, metavar="FILE", help=_REPORT_HELP[fmt])
    p.add_argument(
        "--max-bytes",
        type=_markdown_budget,
        default=None,
        metavar="N",
        help=f"size budget of the Markdown report in bytes (default 1 MiB; at least {MIN_MARKDOWN_BYTES})",
    )
    p.add_argument(
        "--source-root",
        default=None,
        metavar="DIR",
        help="SARIF, annotation and Code Quality paths are written relative to DIR "
        "(default: the git repository's root, else the working directory)",
    )


def _markdown_budget(text: str) -> int:
    n = positive_int(text)
    if n < MIN_MARKDOWN_BYTES:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_MARKDOWN_BYTES} (room for the verdict and counts)")
    return int(n)


def use_color(args: argparse.Namespace) -> bool:
    """ANSI colour on a terminal; never into a file, nor with a non-empty NO_COLOR (an empty one
    does not count, https://no-color.org); FORCE_COLOR forces it."""
    if getattr(args, "output", None) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return _stdout_is_tty()


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def text_width(args: argparse.Namespace) -> int | None:
    """Wrap the text report to the terminal (COLUMNS wins); None, unwrapped, into a pipe, a file or a
    CI log, where wrapping breaks grep and the log viewer wraps anyway."""
    columns = None if getattr(args, "output", None) else terminal_columns()
    return None if columns is None else max(40, columns)


def terminal_columns() -> int | None:
    """The terminal's width (COLUMNS wins) when standard output is one; None into a pipe or file."""
    return shutil.get_terminal_size().columns if _stdout_is_tty() else None


def source_root(args: argparse.Namespace) -> str:
    """--source-root, else the git repository around the working directory, else the working
    directory: code scanning places a result only on a path relative to the repository root."""
    given: str | None = getattr(args, "source_root", None)
    if given:
        return os.path.abspath(given)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return str(d)
    return str(here)


def report_options(args: argparse.Namespace, color: bool | None = None) -> ReportOptions:
    """The options every report of a `check` run is rendered with (stdout's: colour, width, and
    whether stderr's error lines already reach the same place)."""
    on = use_color(args) if color is None else color
    return ReportOptions(
        max_bytes=getattr(args, "max_bytes", None),
        color=on,
        root=source_root(args),
        width=text_width(args) if color is None else None,
        errors_shown=color is None and getattr(args, "output", None) in (None, "-") and stdout_is_stderr(),
    )


def stdout_is_stderr() -> bool:
    """Whether stdout and stderr are one terminal or file (a console, `2>&1`)."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # a captured stream: not a file
    return (out.st_dev, out.st_ino, out.st_rdev) == (err.st_dev, err.st_ino, err.st_rdev)
