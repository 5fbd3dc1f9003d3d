"""The C replay's interface (_replay.c); the module exists only where it was compiled. It takes
C-contiguous arrays: int64 indptr, pred and binding, float64 delay, release, dur, start and end,
uint8 from_start."""

import numpy as np

def longest_path(
    indptr: np.ndarray,
    pred: np.ndarray,
    delay: np.ndarray,
    from_start: np.ndarray,
    release: np.ndarray,
    dur: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    binding: np.ndarray,
    /,
) -> int: ...

def walk(
    binding: np.ndarray, pred: np.ndarray, from_start: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, v0: int, out: np.ndarray, seen: np.ndarray, /
) -> int: ...
