import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.decompose_prelu import decompose_prelu
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(31)


def _prelu_model(slope: np.ndarray):  # type: ignore[no-untyped-def]
    """Conv -> PRelu(slope) -> Conv, float (MTCNN's P-Net pattern)."""
    constants = {"w1": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32) / 3,
                 "w2": RNG.standard_normal((2, 4, 1, 1)).astype(np.float32) / 2,
                 "slope": slope.astype(np.float32)}
    nodes = [node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
             node("PRelu", ["c", "slope"], ["p"], name="prelu"),
             node("Conv", ["p", "w2"], ["y"], name="conv2")]
    return build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 2, 6, 6])],
                 constants)


def test_a_per_channel_prelu_is_relu_plus_a_scaled_min_exactly():
    model = _prelu_model(RNG.uniform(0.05, 0.5, (4, 1, 1)))
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    rewritten = finalize(decompose_prelu(model, report))
    assert [n.op_type for n in rewritten.graph.nodes] == ["Conv", "Relu", "Min", "Mul", "Add",
                                                          "Conv"]
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(run_model(rewritten, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


def test_a_per_channel_prelu_runs_on_the_accelerator_bit_exact():
    model = _prelu_model(RNG.uniform(0.05, 0.5, (4, 1, 1)))
    feeds = [{"x": RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)} for _ in range(4)]
    integer, _ = run_passes(model, calibration=feeds)
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops[0] == "QuantizeLinear" and ops[-1] == "DequantizeLinear"
    assert all(n.domain == "systolic" for n in integer.graph.nodes[1:-1]), ops
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert check_layers(compiled, feeds[0], backend="model") is None
    y_int, y_float = run_model(integer, feeds[0])["y"], run_model(model, feeds[0])["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99


@pytest.mark.parametrize("slope", [np.array([0.25]), np.full((4, 6, 6), 0.1)])
def test_a_scalar_or_per_element_slope_is_left_alone(slope):
    model = _prelu_model(slope)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert decompose_prelu(model, report) is model
