"""Float Mul/Add of a per-channel constant [1, C, 1] over a rank-3 activation [N, C, T] (a 1-D
convolution's group norm scale and shift: wav2vec2's feature encoder) are quantized by
channel_affine_ptq into a QMul and a QAdd of a per-channel B and run on the vector unit
bit-exact."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.channel_affine_ptq import channel_vector_index, keeps_shape
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(13)
C, T = 6, 10


def _conv1d_scale_shift_model():  # type: ignore[no-untyped-def]
    """x [1, 3, T] -> Conv1d -> Relu -> Mul(scale [1, C, 1]) -> Add(shift [1, C, 1]) -> Relu
    -> Conv1d -> y (the Relus keep the scale and shift from folding into a convolution)."""
    constants = {"w1": RNG.standard_normal((C, 3, 3)).astype(np.float32) / 2,
                 "w2": RNG.standard_normal((4, C, 1)).astype(np.float32) / 2,
                 "scale": RNG.uniform(0.5, 2, (1, C, 1)).astype(np.float32),
                 "shift": RNG.standard_normal((1, C, 1)).astype(np.float32)}
    nodes = [node("Conv", ["x", "w1"], ["h"], name="conv1", pads=[1, 1]),
             node("Relu", ["h"], ["r"]),
             node("Mul", ["r", "scale"], ["s"], name="scale_mul"),
             node("Add", ["s", "shift"], ["b"], name="shift_add"),
             node("Relu", ["b"], ["p"]),
             node("Conv", ["p", "w2"], ["y"], name="conv2")]
    return build(nodes, [("x", np.float32, [1, 3, T])], [("y", np.float32, [1, 4, T])],
                 constants)


def _feed():  # type: ignore[no-untyped-def]
    return {"x": RNG.standard_normal((1, 3, T)).astype(np.float32)}


def test_a_rank_3_per_channel_scale_and_shift_run_on_the_vector_unit():
    model = _conv1d_scale_shift_model()
    integer, report = run_passes(model, calibration=[_feed() for _ in range(8)])
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QMul") == 1 and ops.count("QAdd") == 1
    assert "Mul" not in ops and "Add" not in ops
    constants = constants_of(integer.graph)
    qmul = next(n for n in integer.graph.nodes if n.op_type == "QMul")
    b = constants.get(qmul.inputs[1])
    assert b is not None and b.shape == (1, C, 1) and b.dtype == np.int8
    assert report.fate("scale_mul").into.startswith("systolic.QMul")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    units = [layer.unit for layer in compiled.layers if layer.op in ("QMul", "QAdd")]
    assert units == [LayerUnit.VECTOR] * 2
    feed = _feed()
    assert check_layers(compiled, feed, backend="model") is None
    y_int, y_float = run_model(integer, feed)["y"], run_model(model, feed)["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99


@pytest.mark.parametrize(("shape", "kept"), [((1, C, 1), True), ((1, C, 1, 1), True),
                                             ((1, 1, C), False), ((C,), False),
                                             ((1, C, T), False)])
def test_which_constants_keep_their_per_channel_shape(shape, kept):
    assert keeps_shape(np.ones(shape, np.float32)) is kept


def test_a_rank_3_per_channel_constant_is_found_and_a_whole_one_is_not():
    c = RNG.uniform(0.5, 2, (1, C, 1)).astype(np.float32)
    whole = RNG.uniform(0.5, 2, (1, C, T)).astype(np.float32)
    model = build([node("Relu", ["x"], ["a"]), node("Mul", ["a", "c"], ["m"]),
                   node("Mul", ["m", "whole"], ["y"])],
                  [("x", np.float32, [1, C, T])], [("y", np.float32, [1, C, T])],
                  {"c": c, "whole": whole})
    graph = model.graph
    constants = constants_of(graph)
    assert channel_vector_index(graph.nodes[1], graph, constants) == 1
    assert channel_vector_index(graph.nodes[2], graph, constants) is None
