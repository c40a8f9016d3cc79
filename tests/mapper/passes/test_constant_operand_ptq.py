import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.constant_operand_ptq import constant_operand_index
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(21)


def _position_embedding_model(pos_shape):  # type: ignore[no-untyped-def]
    """ViT's token path: x [1, 5, 8] -> MatMul -> Add(position embedding) -> Relu -> MatMul."""
    constants = {"w1": RNG.standard_normal((8, 8)).astype(np.float32) / 3,
                 "pos": RNG.standard_normal(pos_shape).astype(np.float32),
                 "w2": RNG.standard_normal((8, 4)).astype(np.float32) / 3}
    nodes = [node("MatMul", ["x", "w1"], ["m"], name="embed"),
             node("Add", ["m", "pos"], ["p"], name="pos_add"),
             node("Relu", ["p"], ["r"], name="relu"),
             node("MatMul", ["r", "w2"], ["y"], name="head")]
    return build(nodes, [("x", np.float32, [1, 5, 8])], [("y", np.float32, [1, 5, 4])],
                 constants)


@pytest.mark.parametrize("pos_shape", [(1, 5, 8), (5, 8)])
def test_position_embedding_add_is_a_qadd_of_a_constant_in_memory(pos_shape):
    model = _position_embedding_model(pos_shape)
    feeds = [{"x": RNG.standard_normal((1, 5, 8)).astype(np.float32)} for _ in range(4)]
    integer, report = run_passes(model, calibration=feeds)
    qadd = next(n for n in integer.graph.nodes if n.op_type == "QAdd")
    b = integer.graph.initializer(qadd.inputs[1])
    assert b is not None and b.data.shape == (1, 5, 8) and b.data.dtype == np.int8
    assert report.fate("relu").into.startswith("systolic.QAdd")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers if layer.op == "QAdd"] == [LayerUnit.VECTOR]
    assert check_layers(compiled, feeds[0], backend="model") is None
    y_int, y_float = run_model(integer, feeds[0])["y"], run_model(model, feeds[0])["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99


def test_constant_operand_index_takes_only_whole_tensors_of_rank_four_or_less():
    model = build([node("Relu", ["x"], ["a"]), node("Add", ["pos", "a"], ["y"]),
                   node("Add", ["a", "s"], ["z"]), node("Relu", ["x4"], ["b"]),
                   node("Add", ["b", "bias4"], ["w"]), node("Relu", ["x5"], ["c"]),
                   node("Add", ["c", "bias5"], ["v"])],
                  [("x", np.float32, [1, 5, 8]), ("x4", np.float32, [1, 2, 3, 3]),
                   ("x5", np.float32, [1, 2, 2, 3, 3])],
                  [("y", np.float32, [1, 5, 8]), ("z", np.float32, [1, 5, 8]),
                   ("w", np.float32, [1, 2, 3, 3]), ("v", np.float32, [1, 2, 2, 3, 3])],
                  {"pos": np.ones((5, 8), np.float32), "s": np.ones((1, 1, 8), np.float32),
                   "bias4": np.ones((1, 2, 3, 3), np.float32),
                   "bias5": np.ones((1, 2, 2, 3, 3), np.float32)})
    graph = model.graph
    constants = constants_of(graph)
    _, pos_add, vector_add, _, rank4_add, _, rank5_add = graph.nodes
    assert constant_operand_index(pos_add, graph, constants) == 0
    assert constant_operand_index(vector_add, graph, constants) is None  # a last-axis vector
    assert constant_operand_index(rank4_add, graph, constants) == 1  # LeViT's, Swin's bias
    assert constant_operand_index(rank5_add, graph, constants) is None  # fuse_qdq's limit


def test_rotary_table_mul_is_a_qmul_of_a_constant_in_memory():
    """A rotary embedding: q [1, 2, 5, 8] times a cos table of its shape (the table
    [1, 1, 5, 8] expanded over the heads by expand_float_constant): the constant is int8 of
    q's shape, the product a QMul on the vector unit, bit-exact with the reference."""
    constants = {"w": RNG.standard_normal((8, 8)).astype(np.float32) / 3,
                 "cos": np.cos(RNG.standard_normal((1, 1, 5, 8))).astype(np.float32),
                 "w2": RNG.standard_normal((8, 4)).astype(np.float32) / 3}
    model = build([node("MatMul", ["x", "w"], ["q"], name="proj"),
                   node("Mul", ["q", "cos"], ["r"], name="rotary"),
                   node("MatMul", ["r", "w2"], ["y"], name="head")],
                  [("x", np.float32, [1, 2, 5, 8])], [("y", np.float32, [1, 2, 5, 4])],
                  constants)
    feeds = [{"x": RNG.standard_normal((1, 2, 5, 8)).astype(np.float32)} for _ in range(4)]
    integer, report = run_passes(model, calibration=feeds)
    qmul = next(n for n in integer.graph.nodes if n.op_type == "QMul")
    b = integer.graph.initializer(qmul.inputs[1])
    assert b is not None and b.data.shape == (1, 2, 5, 8) and b.data.dtype == np.int8
    assert report.fate("rotary").into.startswith("systolic.QMul")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers if layer.op == "QMul"] == [LayerUnit.VECTOR]
    assert check_layers(compiled, feeds[0], backend="model") is None
    y_int, y_float = run_model(integer, feeds[0])["y"], run_model(model, feeds[0])["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99
