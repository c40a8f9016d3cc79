"""Float models whose middle operators exist only in the host reference (Resize,
ConvTranspose, LayerNormalization, Gelu) simulate end to end with `systolic simulate`: the
convolutions and matrix products run on the 4x4 array bit-exact to the reference, the new
operators on the host, and the result is compared with onnxruntime on the float model."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main


def _weights(r: np.random.Generator, name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return numpy_helper.from_array((r.standard_normal(shape) * 0.3).astype(np.float32), name)


def _model(nodes: list[onnx.NodeProto], x_shape: list[int], y_shape: list[int],
           initializers: list[onnx.TensorProto], opset: int) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        nodes, "host_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=9)
    onnx.checker.check_model(model, full_check=True)
    return model


def conv_resize_conv(r: np.random.Generator) -> tuple[onnx.ModelProto, list[int]]:
    """Conv -> Relu -> Resize (nearest, scale 2) -> Conv, opset 13: the Resize selects the
    8-bit integers (dequantize_after_layout) and runs as a layout layer on the accelerator
    (LOAD once, one COPY per repeat: lowering/layout_repeat.py)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Resize", ["r1", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Conv", ["up", "w2", "b2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_weights(r, "w1", (4, 3, 3, 3)), _weights(r, "b1", (4,)),
             _weights(r, "w2", (4, 4, 3, 3)), _weights(r, "b2", (4,)),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    return _model(nodes, [1, 3, 6, 6], [1, 4, 12, 12], inits, 13), []


def conv_conv_transpose(r: np.random.Generator, opset: int = 13
                        ) -> tuple[onnx.ModelProto, list[str]]:
    """Conv -> Relu -> ConvTranspose (stride 2, pads 1, output_padding 1). From opset 10 the
    passes rewrite the ConvTranspose into Convs on the array (conv_transpose.py); a
    ConvTranspose-1 (opset 9) stays a host layer with its MACs."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("ConvTranspose", ["r1", "w2", "b2"], ["y"], strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1]),
    ]
    inits = [_weights(r, "w1", (4, 3, 3, 3)), _weights(r, "b1", (4,)),
             _weights(r, "w2", (4, 2, 3, 3)), _weights(r, "b2", (2,))]
    host = ["ConvTranspose"] if opset < 10 else []
    return _model(nodes, [1, 3, 6, 6], [1, 2, 12, 12], inits, opset), host


def conv_host_conv(r: np.random.Generator) -> onnx.ModelProto:
    """Conv -> Relu -> ConvTranspose-1 (opset 9: a host layer) -> Conv: two accelerator runs
    with a host step between them (the runner's and the trace's tests)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("ConvTranspose", ["r1", "w2", "b2"], ["t"], strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("Conv", ["t", "w3", "b3"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_weights(r, "w1", (4, 3, 3, 3)), _weights(r, "b1", (4,)),
             _weights(r, "w2", (4, 4, 3, 3)), _weights(r, "b2", (4,)),
             _weights(r, "w3", (2, 4, 3, 3)), _weights(r, "b3", (2,))]
    return _model(nodes, [1, 3, 6, 6], [1, 2, 12, 12], inits, opset=9)


def matmul_layernorm_gelu(r: np.random.Generator) -> tuple[onnx.ModelProto, list[int]]:
    """MatMul -> LayerNormalization -> Gelu -> MatMul, opset 20."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("LayerNormalization", ["m1", "gamma", "beta"], ["n1"]),
        helper.make_node("Gelu", ["n1"], ["g1"]),
        helper.make_node("MatMul", ["g1", "w2"], ["y"]),
    ]
    inits = [_weights(r, "w1", (16, 8)), _weights(r, "w2", (8, 4)),
             numpy_helper.from_array((1 + 0.1 * r.standard_normal(8)).astype(np.float32),
                                     "gamma"),
             _weights(r, "beta", (8,))]
    # LayerNormalization: QLayerNorm + QMul + QAdd on the vector unit (fuse_layernorm), Gelu:
    # a table; the float model still goes through the host's reference for calibration
    return _model(nodes, [4, 16], [4, 4], inits, 20), []


MODELS = {"conv_resize_conv": conv_resize_conv, "conv_conv_transpose": conv_conv_transpose,
          "conv_conv_transpose_1": lambda r: conv_conv_transpose(r, opset=9),
          "matmul_layernorm_gelu": matmul_layernorm_gelu}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_host_operators_simulate_end_to_end(name: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    r = np.random.default_rng(101)
    model, host_ops = MODELS[name](r)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    x_info = model.graph.input[0].type.tensor_type.shape
    x = r.standard_normal([d.dim_value for d in x_info.dim]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    report_path = tmp_path / "report.json"
    status = main(["simulate", str(path), "--backend", "model", "--array", "4x4",
                   "--input", str(tmp_path / "x.npy"), "--json", str(report_path)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "reference: bit-exact" in printed
    assert "onnxruntime: max |diff|" in printed  # the comparison with onnxruntime is printed
    report = json.loads(report_path.read_text())
    checks = report["checks"]
    assert checks["reference_bit_exact"] and checks["onnxruntime_ran"]
    units = {layer["op"]: layer["unit"] for layer in report["layers"]}
    for op in host_ops:
        assert units[op] == "host", units
    if name == "conv_resize_conv":
        assert units["Resize"] == "vector", units  # a layout layer (LOAD + COPY)
    if name == "conv_conv_transpose":  # rewritten into Convs: every MAC on the array
        assert "ConvTranspose" not in units and report["coverage"]["host_macs"] == 0
    assert "array" in units.values() and any(
        op in units for op in ("QConv", "QMatMul")), units
    # 8-bit activations around float host operators: close to the float model
    assert checks["quantization"]["cosine_similarity"] > 0.99
