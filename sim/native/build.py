"""Loading the native engine, built at install time, with ctypes.

The engine is one shared library, the extension module `systolic.sim.native._engine` that
setup.py compiles from this folder's C files (`sources.SOURCES`, with the one generated header
`isa.h`) when the package is installed; no C code is compiled at run time. Its parts are
`golden_run` (golden.c), `timing_pass` (timing.c) and `external_facts` (facts.c).

`native_status()` returns (available, reason). The engine is unavailable, and the model
backend runs the Python specification instead (same results, slower), when:
- `SYSTOLIC_NATIVE=0` is set;
- it was not built (no C compiler at install time: setup.py's extension is optional);
- its file does not load, lacks one of the parts' entry points, or was built from other
  sources than those installed next to it (an editable install whose C files changed since:
  `pip install -e .` rebuilds it).

`load_library(part)` returns the library for one part (`PARTS`) or None, and
`unavailable_reason(part)` why it is None; both keep the consumers' per-part calls.
"""

import ctypes
import functools
import importlib.util
import os
from importlib import resources
from pathlib import Path

from systolic.sim.native.sources import source_digest

__all__ = ["ENGINE_MODULE", "PARTS", "load_library", "native_status", "unavailable_reason"]

ENGINE_MODULE = "systolic.sim.native._engine"
"""The extension module setup.py builds."""

PARTS = {"golden": "golden_run", "timing": "timing_pass", "facts": "external_facts"}
"""The engine's parts and the entry point of each."""

_REBUILD = "reinstall the package with a C compiler (pip install -e . in a clone)"


def native_status() -> tuple[bool, str]:
    """Return whether the native engine is used, and why (or why not), in one line."""
    if os.environ.get("SYSTOLIC_NATIVE", "1") == "0":
        return False, ("native engine disabled by SYSTOLIC_NATIVE=0: running the Python "
                       "specification")
    library, reason = _engine()
    return library is not None, reason


def load_library(part: str) -> ctypes.CDLL | None:
    """Return the native engine for `part` (a key of `PARTS`), or None when it is unavailable
    (`native_status()`)."""
    if part not in PARTS:
        raise ValueError(f"unknown native engine part {part!r}; the parts are {sorted(PARTS)}")
    return _engine()[0] if native_status()[0] else None


def unavailable_reason(part: str) -> str | None:
    """Return why `load_library(part)` returns None, or None when it returns the engine."""
    available, reason = native_status()
    return None if available and load_library(part) is not None else reason


@functools.cache
def _engine() -> tuple[ctypes.CDLL | None, str]:
    """Return (the loaded and checked engine or None, the reason), once per process."""
    spec = importlib.util.find_spec(ENGINE_MODULE)
    if spec is None or spec.origin is None:
        return None, ("native engine not built (no C compiler at install time): running the "
                      f"Python specification; {_REBUILD} for the fast model backend")
    try:
        library = ctypes.CDLL(spec.origin)
        missing = [entry for entry in (*PARTS.values(), "engine_sources")
                   if not hasattr(library, entry)]
    except OSError as error:
        return None, f"native engine {spec.origin} does not load ({error}); {_REBUILD}"
    if missing:
        return None, f"native engine {spec.origin} lacks {', '.join(missing)}; {_REBUILD}"
    built = _built_from(library)
    try:
        installed = source_digest(Path(str(resources.files(__package__))))
    except OSError as error:
        return None, f"native engine sources are missing ({error}); {_REBUILD}"
    if built != installed:
        return None, (f"native engine {spec.origin} is out of date with its C sources: "
                      f"{_REBUILD}")
    return library, f"native engine {spec.origin}"


def _built_from(library: ctypes.CDLL) -> str:
    """Return the source digest compiled into `library` (engine.c `engine_sources`)."""
    function = library.engine_sources
    function.argtypes = []
    function.restype = ctypes.c_char_p
    value = function()
    return value.decode("ascii", errors="replace") if value else ""
