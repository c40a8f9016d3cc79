"""pad_as_concat: a constant Pad of a float tensor along one axis (EfficientViT's F.pad(v, (0, 1),
value=1)) becomes a Concat with constant blocks, the same tensor, and runs on the accelerator
as an integer layout op between two matrix products."""

import numpy as np
import pytest

from systolic.mapper.passes.pad_as_concat import pad_as_concat
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

SHAPE = (1, 6, 8)


def _model(pads, value=1.0, opset=17):  # type: ignore[no-untyped-def]
    """MatMul -> Pad(pads, value) -> MatMul (float)."""
    rng = np.random.default_rng(2)
    padded = [d + pads[i] + pads[i + 3] for i, d in enumerate(SHAPE)]
    constants = {"w1": rng.normal(0, 0.3, (8, 8)).astype(np.float32),
                 "w2": rng.normal(0, 0.3, (padded[2], 4)).astype(np.float32),
                 "pads": np.array(pads, np.int64), "value": np.float32(value)}
    nodes = [node("MatMul", ["x", "w1"], ["a"]), node("Pad", ["a", "pads", "value"], ["p"]),
             node("MatMul", ["p", "w2"], ["y"])]
    return make(nodes, [("x", np.float32, SHAPE)],
                [("y", np.float32, (1, padded[1], 4))], constants, opset=opset)[1]


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(3).normal(0, 1, SHAPE).astype(np.float32)}


@pytest.mark.parametrize("pads", [(0, 0, 0, 0, 0, 1), (0, 0, 2, 0, 0, 1), (0, 1, 0, 0, 2, 0)],
                         ids=["after", "both-ends", "inner-axis"])
def test_the_same_tensor_as_a_concat(pads):  # type: ignore[no-untyped-def]
    model = _model(pads, value=0.5)
    rewritten = finalize(pad_as_concat(model, PassReport()))
    assert "Pad" not in op_types(rewritten) and "Concat" in op_types(rewritten)
    np.testing.assert_array_equal(run_model(rewritten, _feed())["y"], run_model(model, _feed())["y"])


def test_it_runs_as_an_integer_concat():  # type: ignore[no-untyped-def]
    fused, _ = run_passes(_model((0, 0, 0, 0, 0, 1)))
    assert op_types(fused) == ["QuantizeLinear", "QMatMul", "Concat", "QMatMul",
                               "DequantizeLinear"]


@pytest.mark.parametrize("pads", [(0, 1, 0, 0, 0, 1), (0, 0, -1, 0, 0, 0)],
                         ids=["two-axes", "negative"])
def test_other_pads_stay(pads):  # type: ignore[no-untyped-def]
    model = _model(pads)
    assert pad_as_concat(model, PassReport()) is model


def test_a_qdq_pad_of_a_dequantized_value():  # type: ignore[no-untyped-def]
    """onnxruntime's QDQ form: DQ(x) -> Pad(pads, DQ(value)) -> Q."""
    nodes = [node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             node("DequantizeLinear", ["vq", "s", "z"], ["v"]),
             node("Pad", ["xf", "pads", "v"], ["p"]),
             node("QuantizeLinear", ["p", "s", "z"], ["y"])]
    constants = {"s": np.float32(0.02), "z": np.uint8(100), "vq": np.uint8(150),
                 "pads": np.array([0, 0, 0, 0, 0, 1], np.int64)}
    _, model = make(nodes, [("x", np.uint8, SHAPE)], [("y", np.uint8, (1, 6, 9))], constants)
    rewritten = finalize(pad_as_concat(model, PassReport()))
    assert "Pad" not in op_types(rewritten)
    x = {"x": np.random.default_rng(4).integers(0, 256, SHAPE).astype(np.uint8)}
    np.testing.assert_array_equal(run_model(rewritten, x)["y"], run_model(model, x)["y"])
    fused, _ = run_passes(model)
    assert op_types(fused) == ["Concat"]
