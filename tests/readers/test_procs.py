"""Process-level settings of the console script and the slice pool (readers/procs.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from perflint.readers.kineto.procs import RESULT_PIPE_BYTES, slice_pool, widen_result_pipe


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):  # musl, or no confstr
        return False


GLIBC = _glibc()

# A thread allocates, then glibc prints one block per arena in use ("Arena N:") to stderr.
_ARENAS = """
import ctypes, sys, threading
from perflint.cli import _tune_malloc
if sys.argv[1] == "one":
    assert _tune_malloc()
keep = []
t = threading.Thread(target=lambda: keep.extend(bytearray(4096 + i) for i in range(2000)))
t.start(); t.join()
ctypes.CDLL(None).malloc_stats()
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator")
@pytest.mark.parametrize("mode", ["one", "default"])
def test_console_script_keeps_one_malloc_arena(mode: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    err = subprocess.run([sys.executable, "-c", _ARENAS, mode], env=env, capture_output=True, text=True, check=True).stderr
    arenas = [line for line in err.splitlines() if line.startswith("Arena ")]
    if mode == "one":
        assert arenas == ["Arena 0:"], err
    else:  # the control: without the setting the thread gets an arena of its own
        assert len(arenas) >= 2, err


# A mapped block freed raises glibc's sliding threshold to its size; then count the mapped blocks
# after a 20 MiB allocation.
_MAPPED = """
import ctypes, sys
from perflint.cli import _tune_malloc
if sys.argv[1] == "tuned":
    assert _tune_malloc()
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
libc.free(libc.malloc(24 << 20))
before = libc.mallinfo2().hblks
block = libc.malloc(20 << 20)
print(libc.mallinfo2().hblks - before)
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator")
@pytest.mark.parametrize("mode", ["tuned", "default"])
def test_console_script_maps_big_blocks_on_their_own(mode: str) -> None:
    """Freed column-sized temporaries go back to the system instead of staying in the heap."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", _MAPPED, mode], env=env, capture_output=True, text=True, check=True).stdout
    # The control: glibc's own threshold has slid to 24 MiB, and the 20 MiB block is a heap block.
    assert int(out) == (1 if mode == "tuned" else 0), out


def test_entry_point_sets_one_arena_before_main(monkeypatch: pytest.MonkeyPatch) -> None:
    import perflint.cli as cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "_tune_malloc", lambda: calls.append("arena") or True)
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 0)
    monkeypatch.setattr(os, "_exit", lambda code: calls.append(f"exit {code}"))
    cli.entry_point()
    assert calls == ["arena", "main", "exit 0"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_slice_pool_result_pipe_is_widened() -> None:
    import fcntl

    pool = slice_pool(1)
    try:
        size = fcntl.fcntl(pool._result_queue._reader.fileno(), fcntl.F_GETPIPE_SZ)
        with open("/proc/sys/fs/pipe-max-size") as fh:
            limit = int(fh.read())
        assert size >= min(RESULT_PIPE_BYTES, limit)
        assert size > 65536 or limit <= 65536
        assert pool.submit(sum, [1, 2, 3]).result(timeout=60) == 6  # the pool still works
    finally:
        pool.shutdown(wait=True)


def test_widen_result_pipe_declines_what_it_does_not_know() -> None:
    class NotAnExecutor:
        pass

    assert widen_result_pipe(NotAnExecutor()) is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_widen_result_pipe_takes_what_the_system_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    import perflint.readers.kineto.procs as procs

    real = fcntl.fcntl
    limit = 256 << 10

    def capped(fd: int, cmd: int, arg: int = 0) -> int:  # a system whose pipe-max-size is 256 KiB
        if cmd == fcntl.F_SETPIPE_SZ and arg > limit:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, cmd, arg)

    monkeypatch.setattr(fcntl, "fcntl", capped)
    monkeypatch.setattr(procs, "_pipe_max", lambda: limit)
    pool = procs.slice_pool(1)
    try:
        assert real(pool._result_queue._reader.fileno(), fcntl.F_GETPIPE_SZ) == limit
    finally:
        pool.shutdown(wait=True)
