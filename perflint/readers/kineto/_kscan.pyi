"""The C scanner's interface (_kscan.c); the module exists only where it was compiled."""

from _typeshed import ReadableBuffer

# n, then the f64, i64, i32 and u8 columns and the n + 1 offsets as raw bytes, the strings, the
# raw args, the (key, value) pairs, the collective records (their events as int64, their i64 and
# i32 values, one record after the other), and where the event after a refused one begins.
_Scan = tuple[
    int, bytes, bytes, bytes, bytes, bytes, list[str], list[bytes], list[tuple[int | str | None, int | str | None]],
    bytes, bytes, bytes, int,
]  # fmt: skip

# None: a string was not valid UTF-8 after unescaping; msgspec is to decode the range.
def scan(buf: ReadableBuffer, lo: int, hi: int, /) -> _Scan | None: ...

# The rows scan() fills per type (f64, i64, i32, u8), in order: columns.SCANNER_ROWS.
ROWS: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]
# The args keys it reads.
ARG_KEYS: tuple[str, ...]
# The values of a collective record per type (i64, i32), in order: columns.SCANNER_COMM_ROWS.
COMM_ROWS: tuple[tuple[str, ...], tuple[str, ...]]
