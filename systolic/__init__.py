"""systolic: ONNX models on a configurable systolic-array accelerator in Amaranth HDL."""

from importlib.metadata import PackageNotFoundError, version

from .api import bind, load, load_bytes  # cheap: the importer itself loads on first call

try:
    __version__ = version("systolic")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "bind", "load", "load_bytes"]
