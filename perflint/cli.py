"""Command line: `main(argv) -> int` so tests call it directly."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

# numpy's OpenBLAS starts a thread per core at import that spins for a while waiting for work,
# and perflint does no linear algebra: on a 2-core runner that is 0.1 CPU-s taken from the
# reader. Set before numpy is imported (below); a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from perflint._version import __version__  # noqa: E402
from perflint.commands import COMMANDS  # noqa: E402
from perflint.errors import PerflintError  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse exits 2 with usage on stderr; keep that, but one clear line.
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _reader() -> str:
    """Which Kineto reader runs: users on big traces want to know whether they have the fast one."""
    from perflint.readers.kineto import native_scan

    if native_scan.available():
        return "Kineto reader: C scanner"
    if native_scan.built():
        return "Kineto reader: Python, PERFLINT_NATIVE=0"
    return "Kineto reader: Python, C scanner not built"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perflint", description="Performance linter and CI gate for GPU profiler traces.")
    parser.add_argument(
        "-V", "--version", action="version", version=f"perflint {__version__} ({_reader()})", help="print the version and exit"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, help="run 'perflint COMMAND --help'")
    for name, module in COMMANDS.items():
        module.add_parser(sub, name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(COMMANDS[args.command].run(args))
    except PerflintError as exc:
        if args.debug:
            raise
        print(f"perflint: error: {exc.line()}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # a file the command could not read or write: one line, never a traceback
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"perflint: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR


_M_ARENA_MAX = -8  # glibc malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MAPPED_FROM = 16 << 20


def _tune_malloc() -> bool:
    """glibc gives each thread that allocates its own arena, and memory freed in one is reused
    only by it. A big .gz is merged by a reader thread (readers/kineto.py): the analysis that
    follows in the main thread then faults in fresh pages instead of reusing that memory (12k
    more page faults, +0.05 s on a 200 MB trace). One arena for the whole process.

    Blocks of 16 MiB and more are mapped on their own and unmapped when freed. glibc's default
    threshold slides up to the size of any mapped block freed (up to 32 MiB), after which a big
    trace's column-sized temporaries come from the heap and stay resident in its holes once freed
    (a 1 GB Nsight Systems export peaked 53 MB higher). False where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        import ctypes

        libc = ctypes.CDLL(None)
        # A fixed mapping threshold also fixes the heap's trim threshold: kept at twice it, as glibc's
        # sliding rule keeps it, so the heap's top is not handed back and faulted in again.
        return all(libc.mallopt(opt, v) for opt, v in ((_M_ARENA_MAX, 1), (_M_MMAP_THRESHOLD, _MAPPED_FROM), (_M_TRIM_THRESHOLD, 2 * _MAPPED_FROM)))
    except (AttributeError, OSError, ValueError):
        return False


def entry_point() -> None:
    """The console script. After the output is flushed it leaves with os._exit: tearing down the
    interpreter (freeing every column, string and cached row one by one) costs more than the
    parse on big traces. `main()` itself never does this, so tests and embedders
    keep a normal interpreter (and its C library's default allocator settings)."""
    _tune_malloc()
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (the workers stop with the pools)
        print("perflint: interrupted", file=sys.stderr)
        code = 130
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    except Exception:  # a closed or broken stream: let the normal exit path report it
        sys.exit(code)
    os._exit(code)
