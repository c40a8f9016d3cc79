import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.widen_conv_integer import widen_conv_integer
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(41)


def _conv_integer(w_zp: np.ndarray):  # type: ignore[no-untyped-def]
    """ConvInteger of uint8 x (zero point 7) and uint8 weights of zero point `w_zp`, padded
    (an older onnxruntime quantize_dynamic's weights)."""
    constants = {"w": RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8),
                 "x_zp": np.uint8(7), "w_zp": w_zp.astype(np.uint8)}
    nodes = [node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], pads=[1, 1, 1, 1],
                  name="conv")]
    return build(nodes, [("x", np.uint8, [1, 3, 5, 5])], [("y", np.int32, [1, 4, 5, 5])],
                 constants, opset=13)


@pytest.mark.parametrize("w_zp", [np.array(120), np.array([120, 3, 250, 128])])
def test_uint8_weights_beyond_int8_become_a_wider_int8_conv_exactly(w_zp):
    model = _conv_integer(w_zp)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    wide = finalize(widen_conv_integer(model, report))
    assert [n.op_type for n in wide.graph.nodes] == ["ConvInteger", "Slice", "Slice", "Mul",
                                                     "Add"]
    x = RNG.integers(0, 256, (1, 3, 5, 5)).astype(np.uint8)
    np.testing.assert_array_equal(run_model(wide, {"x": x})["y"], run_model(model, {"x": x})["y"])


def test_the_wide_conv_runs_on_the_array_bit_exact():
    model = _conv_integer(np.array(120))
    integer, _ = run_passes(model)
    assert "QConvInt" in [n.op_type for n in integer.graph.nodes]
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    x = RNG.integers(0, 256, (1, 3, 5, 5)).astype(np.uint8)
    assert check_layers(compiled, {"x": x}, backend="model") is None
    np.testing.assert_array_equal(run_model(integer, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


def test_weights_that_fit_int8_are_left_alone():
    model = _conv_integer(np.array(128))
    model = build([node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], name="conv")],
                  [("x", np.uint8, [1, 3, 5, 5])], [("y", np.int32, [1, 4, 3, 3])],
                  {"w": RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8),
                   "x_zp": np.uint8(7), "w_zp": np.uint8(128)}, opset=13)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert widen_conv_integer(model, report) is model


@pytest.mark.parametrize("w_zp", [np.array(120), np.array([120, 3, 250])])
def test_a_matmul_integer_of_uint8_weights_is_widened_too(w_zp):
    model = build([node("MatMulInteger", ["x", "w", "x_zp", "w_zp"], ["y"], name="fc")],
                  [("x", np.uint8, [2, 5])], [("y", np.int32, [2, 3])],
                  {"w": RNG.integers(0, 256, (5, 3)).astype(np.uint8), "x_zp": np.uint8(9),
                   "w_zp": w_zp.astype(np.uint8)}, opset=13)
    integer, _ = run_passes(model)
    assert "QMatMulInt" in [n.op_type for n in integer.graph.nodes]
    x = RNG.integers(0, 256, (2, 5)).astype(np.uint8)
    np.testing.assert_array_equal(run_model(integer, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])
