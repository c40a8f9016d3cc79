"""Which engine runs the `model` backend: the native C engine or the Python specification.

The `model` backend (golden values and the analytic cycle model) runs on the native engine
when it is available and on the Python specification otherwise, with the same results
(`systolic.sim.native.build.native_status()` says which, and why). `engine_name(backend)` is
what the `simulate` and `compare` JSON report as `engine`: "native" or "python" on the
`model` backend, None on the others (the backend is its own engine); `engine_line(backend)`
is the line both commands print, None on the other backends.
"""

from systolic.sim.native.build import native_status

__all__ = ["MODEL_BACKEND", "engine_line", "engine_name"]

MODEL_BACKEND = "model"
"""The backend that runs on the native engine or the Python specification."""


def engine_name(backend: str) -> str | None:
    """Return "native" or "python" for the `model` backend, None for the others."""
    if backend != MODEL_BACKEND:
        return None
    return "native" if native_status()[0] else "python"


def engine_line(backend: str) -> str | None:
    """Return "engine: native C engine" or "engine: Python specification (REASON)" for the
    `model` backend, None for the others."""
    if backend != MODEL_BACKEND:
        return None
    available, reason = native_status()
    return "engine: native C engine" if available else f"engine: Python specification ({reason})"
