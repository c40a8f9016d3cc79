"""Errors the tool reports to users.

Every error a user can cause (a malformed model, an unsupported operator, an impossible
configuration) is a `SystolicError` subclass whose message names the problem and the way out.
The command line prints that message on one line and exits with status 2; it never shows a
traceback for these.
"""


class SystolicError(Exception):
    """Base class of every user-facing error; `str(err)` is the one-line message."""


class ModelError(SystolicError):
    """The ONNX model is malformed or violates the ONNX IR specification."""


class UnsupportedError(SystolicError):
    """The model is valid ONNX but uses something this tool does not support."""


class ResourceError(SystolicError):
    """A tensor or program would exceed a configured memory limit."""


class SimulationError(SystolicError):
    """A simulation failed: a hang hit the watchdog, or outputs disagree with the reference."""


class ConfigError(SystolicError, ValueError):
    """An impossible accelerator or command-line configuration."""
