"""Load an ONNX model into the IR: `load`, `load_bytes` and `bind`.

>>> import systolic
>>> from systolic.examples import example_path
>>> model = systolic.load(example_path())
>>> [info.name for info in model.graph.inputs]
['input']
"""

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from systolic.ir import Model

__all__ = ["bind", "load", "load_bytes"]


def load(path: str | os.PathLike[str], *, max_tensor_bytes: int | None = None) -> "Model":
    """Read, check, bind and shape-infer the ONNX model at `path` (see
    `systolic.mapper.importer.load_model`); raises a SystolicError subclass on any problem."""
    from systolic.mapper import importer

    if max_tensor_bytes is None:
        return importer.load_model(path)
    return importer.load_model(path, max_tensor_bytes=max_tensor_bytes)


def load_bytes(
    data: bytes,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    max_tensor_bytes: int | None = None,
) -> "Model":
    """Read a serialized ONNX model; `base_dir` is where its external data files are."""
    from systolic.mapper import importer

    if max_tensor_bytes is None:
        return importer.load_model_bytes(data, base_dir=base_dir)
    return importer.load_model_bytes(data, base_dir=base_dir, max_tensor_bytes=max_tensor_bytes)


def bind(model: "Model", input_shapes: Mapping[str, tuple[int, ...]]) -> "Model":
    """Return `model` with symbolic input dimensions fixed by `input_shapes`, shapes re-inferred."""
    from systolic.mapper import importer

    return importer.bind_inputs(model, input_shapes)
