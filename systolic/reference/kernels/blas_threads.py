"""Run numpy's BLAS calls (matmul) on the calling thread only, for a stretch of code.

OpenBLAS (numpy's wheels bundle it) splits a large matrix product over all cores and lets its
worker threads busy-wait between calls. For the reference executor's many medium-sized float64
products this wastes CPU time: on a loaded two-core machine the mapper's calibration of the
light ResNet-50 took 4.6 to 11.9 CPU seconds with two threads and 1.8 with one.

Numerics: OpenBLAS blocks a product differently for different thread counts, so the last bits
of some float64 sums depend on the number of threads, which by default is the number of
cores: a threaded reference run is not the same on every machine. With one thread it is.
(On the light ONNX models and tests/models every float32 value of the calibration runs is the
same either way: `bench/bench_passes.py --trace`.)

`single_threaded_blas()` is a context manager. OpenBLAS's thread count is process-wide, so
BLAS calls of other Python threads during the block also run on one thread. It does nothing when numpy does not use
OpenBLAS, when the library offers no thread control, or when the user chose a thread count
(OPENBLAS_NUM_THREADS or OMP_NUM_THREADS set in the environment).
"""

import contextlib
import ctypes
import os
import re
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["single_threaded_blas"]

_USER_SETTINGS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
_GET_NAMES = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
              "openblas_get_num_threads")
_SET_NAMES = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
              "openblas_set_num_threads")
_lock = threading.Lock()
_controls: list[tuple[Any, Any] | None] = []  # empty: not looked up yet


def _loaded_openblas() -> list[str]:
    """Return the paths of the OpenBLAS libraries loaded into this process (Linux)."""
    import numpy  # noqa: F401  (numpy's BLAS must be loaded before looking)

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            text = maps.read()
    except OSError:
        return []
    return sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", text)))


def _find_controls() -> tuple[Any, Any] | None:
    """Return (get_num_threads, set_num_threads) of the loaded OpenBLAS, or None."""
    if not sys.platform.startswith("linux"):
        return None
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GET_NAMES if hasattr(lib, n)), None)
        put = next((getattr(lib, n) for n in _SET_NAMES if hasattr(lib, n)), None)
        if get is not None and put is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            put.restype, put.argtypes = None, [ctypes.c_int]
            return get, put
    return None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit OpenBLAS to one thread inside the block, restoring the previous count after."""
    if any(os.environ.get(name) for name in _USER_SETTINGS):
        yield
        return
    with _lock:
        if not _controls:
            _controls.append(_find_controls())
        controls = _controls[0]
    if controls is None:
        yield
        return
    get, put = controls
    previous = int(get())
    if previous <= 1:
        yield
        return
    put(1)
    try:
        yield
    finally:
        put(previous)
