"""Which engine runs the `model` backend: the native C engine or the Python specification.

The `model` backend (golden values and the analytic cycle model) runs on the native engine
when it is available and on the Python specification otherwise, with the same results.
`native_engine()` returns (available, reason it is not). `engine_name(backend)` is what the
`simulate` and `compare` JSON report as `engine`: "native" or "python" on the `model`
backend, None on the others (the backend is its own engine); `engine_line(backend)` is the
line both commands print, None on the other backends.
"""

from systolic.sim.native.build import load_library, unavailable_reason

__all__ = ["MODEL_BACKEND", "engine_line", "engine_name", "native_engine"]

MODEL_BACKEND = "model"
"""The backend that runs on the native engine or the Python specification."""


def native_engine() -> tuple[bool, str]:
    """Return whether the native engine is available, and the reason when it is not."""
    if load_library("golden") is not None:
        return True, ""
    return False, unavailable_reason("golden") or "the native engine did not load"


def engine_name(backend: str) -> str | None:
    """Return "native" or "python" for the `model` backend, None for the others."""
    if backend != MODEL_BACKEND:
        return None
    return "native" if native_engine()[0] else "python"


def engine_line(backend: str) -> str | None:
    """Return "engine: native C engine" or "engine: Python specification (REASON)" for the
    `model` backend, None for the others."""
    if backend != MODEL_BACKEND:
        return None
    available, reason = native_engine()
    return "engine: native C engine" if available else f"engine: Python specification ({reason})"
