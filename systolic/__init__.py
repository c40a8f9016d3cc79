"""systolic: ONNX models on a configurable systolic-array accelerator in Amaranth HDL.

This package's own modules are the ground floor (configuration, errors, file helpers, the graph
IR); the public API lives in `systolic.api` and is re-exported here on first use, so that
`import systolic` stays cheap and the ground imports nothing above it (docs/layers.md).
"""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("systolic")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

_API_NAMES = (
    "ArrayConfig", "Compiled", "Dataflow", "OptionalUnit", "Simulation", "Sweep", "Table",
    "bind", "compile", "configurations", "load", "load_bytes", "simulate", "sweep",
)  # fmt: skip

__all__ = [
    "ArrayConfig", "Compiled", "Dataflow", "OptionalUnit", "Simulation", "Sweep", "Table",
    "__version__",
    "bind", "compile", "configurations", "load", "load_bytes", "simulate", "sweep",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    """Resolve `systolic.load`, `systolic.simulate` and friends from `systolic.api` when first asked for."""
    if name in _API_NAMES:
        return getattr(importlib.import_module("systolic.api"), name)
    raise AttributeError(f"module 'systolic' has no attribute {name!r}")
