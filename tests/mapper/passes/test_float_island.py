"""Float results read twice between DequantizeLinear and QuantizeLinear in a statically
quantized model: quantized after training (mbv3_block_qop's HardSwish and GlobalAveragePool)."""

from pathlib import Path

import numpy as np

from systolic.mapper.importer import load_model
from systolic.mapper.passes.float_island import float_remnants, quantizes_float_remnants
from systolic.mapper.passes.pipeline import run_passes

from .table_models import make, node

REALISTIC = Path(__file__).resolve().parents[2] / "models" / "realistic"


def test_mbv3_qop_hardswish_and_its_pool_are_the_island():
    model = load_model(REALISTIC / "mbv3_block_qop.onnx")
    assert float_remnants(model.graph) == {"hswish_2_HardSwish", "GlobalAveragePool"}
    assert quantizes_float_remnants(model)
    integer, _ = run_passes(model)
    ops = [n.op_type for n in integer.graph.nodes]
    assert "HardSwish" not in ops and "GlobalAveragePool" not in ops
    assert "QAveragePool" in ops


def test_models_without_such_a_result_have_none():
    for name in ("mbv3_block_qdq", "yolo_block_qop", "bert_tiny_qop"):
        model = load_model(REALISTIC / f"{name}.onnx")
        assert not float_remnants(model.graph) and not quantizes_float_remnants(model), name


def test_a_result_read_once_is_left_to_the_fusions():
    constants = {"s": np.float32(0.05), "z": np.uint8(128)}
    nodes = [node("DequantizeLinear", ["xq", "s", "z"], ["x"], name="dq"),
             node("Sigmoid", ["x"], ["y"], name="sigmoid"),
             node("QuantizeLinear", ["y", "s", "z"], ["yq"], name="q")]
    _, model = make(nodes, [("xq", np.uint8, [1, 4, 3, 3])], [("yq", np.uint8, [1, 4, 3, 3])],
                    constants, opset=13)
    assert not float_remnants(model.graph)


def test_a_qdq_rms_norm_with_its_mean_as_a_matmul_is_quantized():
    """onnxruntime's QDQ decoders leave the RMS norm float between DQ(x) and Q(1 / rms): with
    the mean of squares a MatMul (rms_mean) the component is taken, and the pipeline makes the
    squares and 1 / sqrt(. + eps) tables and the mean a QMatMul (all on the host before)."""
    h = 16
    nodes = [node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             node("Pow", ["x", "two"], ["sq"], name="pow"),
             node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1, name="mean"),
             node("Add", ["ms", "eps"], ["v"]), node("Sqrt", ["v"], ["r"]),
             node("Div", ["one", "r"], ["inv"], name="div"),
             node("QuantizeLinear", ["inv", "ys", "z"], ["y"])]
    constants = {"s": np.float32(0.05), "z": np.uint8(128), "ys": np.float32(0.01),
                 "two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32),
                 "one": np.array(1.0, np.float32)}
    _, model = make(nodes, [("xq", np.uint8, (1, 4, h))], [("y", np.uint8, (1, 4, 1))],
                    constants, opset=13)
    integer, report = run_passes(model)
    kinds = [n.op_type for n in integer.graph.nodes]
    assert "QMatMul" in kinds and "QTable" in kinds
    assert not {"Pow", "ReduceMean", "Sqrt", "Div", "MatMul"} & set(kinds)
    assert all(report.fate(name).action != "host" for name in ("pow", "mean", "div"))
