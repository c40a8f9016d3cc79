"""Example models shipped inside the package, so every command can run with no model given.

`lenet_qdq.onnx` (the default) is a small LeNet exported from PyTorch and quantized by
onnxruntime in QDQ form; `lenet_float.onnx` is the same network in float. Both are made by
`tests/models/make_models.py`.
"""

from importlib import resources
from pathlib import Path

__all__ = ["DEFAULT_EXAMPLE", "example_names", "example_path"]

DEFAULT_EXAMPLE = "lenet_qdq"


def example_names() -> list[str]:
    """Return the names of the bundled example models, sorted."""
    folder = resources.files(__name__)
    return sorted(p.name[: -len(".onnx")] for p in folder.iterdir() if p.name.endswith(".onnx"))


def example_path(name: str = DEFAULT_EXAMPLE) -> Path:
    """Return the path of the bundled example model `name`."""
    path = Path(str(resources.files(__name__).joinpath(f"{name}.onnx")))
    if not path.is_file():
        raise FileNotFoundError(f"no bundled example {name!r}; have {example_names()}")
    return path
