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
