"""Write a model's weight-less twin: every float initializer declared with its type and dims
but no data (empty raw_data), as exporters write models for shape studies."""

from pathlib import Path

import onnx


def strip_weights(source: Path, target: Path) -> int:
    """Write `source` to `target` with its float initializers' data removed; return how many."""
    model = onnx.load(source)
    stripped = 0
    for tensor in model.graph.initializer:
        if tensor.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            tensor.ClearField("float_data")
            tensor.ClearField("int32_data")
            tensor.raw_data = b""
            stripped += 1
    onnx.save(model, target)
    return stripped
