"""softmax_axis: a quantized Softmax over an inner axis (YOLOv8's DFL: axis 1 of
[1, 16, 4, A]) runs as QSoftmax over the last axis between two integer Transposes; checked
through the passes, the compiler and the cycle model (bit-exact with the integer graph) and
within one step of the model as written; other forms are left alone."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

from .model_builder import build, node

S, Z, S_OUT = np.float32(0.05), np.uint8(128), np.float32(1 / 256)
SHAPE = [1, 16, 4, 10]


def softmax_model(axis: int, *, opset: int = 13):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> Softmax(axis) -> Q(1/256, 0) -> y."""
    constants = {"s": S, "z": Z, "so": S_OUT, "zo": np.uint8(0)}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"),
             node("Softmax", ["xd"], ["p"], name="softmax", axis=axis),
             node("QuantizeLinear", ["p", "so", "zo"], ["y"], name="q_out")]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, SHAPE)], constants,
                 opset=opset)


def _inputs(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).normal(0, 2, SHAPE).astype(np.float32)}


def test_an_inner_axis_softmax_runs_as_qsoftmax_between_transposes():
    model = softmax_model(1)
    integer, report = run_passes(model)
    assert [n.op_type for n in integer.graph.nodes] == [
        "QuantizeLinear", "Transpose", "QSoftmax", "Transpose", ]
    assert "between two Transposes" in (report.note_of("softmax") or "")
    compiled = compile_model(integer, ArrayConfig(rows=16, cols=16))
    layer = next(layer for layer in compiled.layers if layer.op == "QSoftmax")
    assert layer.unit is LayerUnit.VECTOR
    for seed in range(2):
        outputs = simulate(compiled, _inputs(seed), backend="model")
        np.testing.assert_array_equal(outputs["y"], run_model(integer, _inputs(seed))["y"])
        written = run_model(model, _inputs(seed))["y"].astype(np.int64)
        assert np.abs(outputs["y"].astype(np.int64) - written).max() <= 1


def test_a_last_axis_softmax_and_an_opset_11_one_are_left_alone():
    for model in (softmax_model(-1), softmax_model(1, opset=11)):
        integer, report = run_passes(model)
        assert "Transpose" not in {n.op_type for n in integer.graph.nodes}
        assert "between two Transposes" not in (report.note_of("softmax") or "")
