"""Where a model comes from: a path, or nothing for the bundled example (`systolic.examples`)."""

import os
from pathlib import Path

__all__ = ["ModelSource", "model_source"]

ModelSource = str | os.PathLike[str] | None
"""An ONNX file, or None for the bundled quantized LeNet."""


def model_source(model: ModelSource) -> tuple[Path, str]:
    """Return the model's path and the label reports give it ("bundled:NAME" or the path)."""
    from systolic.examples import DEFAULT_EXAMPLE, example_path

    if model is None:
        return example_path(), f"bundled:{DEFAULT_EXAMPLE}"
    return Path(model), os.fspath(model)
