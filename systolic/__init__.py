"""systolic: ONNX models on a configurable systolic-array accelerator in Amaranth HDL."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("systolic")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
