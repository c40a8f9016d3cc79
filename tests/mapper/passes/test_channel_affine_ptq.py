"""Pre-activation batch norm of a float model: channel_affine's Mul and Add of [1, C, 1, 1]
constants are quantized (channel_affine_ptq) into a QMul and a QAdd with a per-channel B,
the Relu after the Add absorbed, and run on the vector unit bit-exact."""

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

RNG = np.random.default_rng(3)
C = 6


def _pre_activation_model():  # type: ignore[no-untyped-def]
    """x -> Conv -> Relu -> Concat(., x) -> BN -> Relu -> Conv -> y (DenseNet's pattern)."""
    constants = {
        "w1": RNG.standard_normal((C - 3, 3, 3, 3)).astype(np.float32),
        "w2": RNG.standard_normal((4, C, 1, 1)).astype(np.float32),
        "gamma": RNG.uniform(0.5, 2, C).astype(np.float32),
        "beta": RNG.standard_normal(C).astype(np.float32),
        "mean": RNG.standard_normal(C).astype(np.float32),
        "var": RNG.uniform(0.2, 2, C).astype(np.float32),
    }
    nodes = [node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["a"], ["r"], name="relu1"),
             node("Concat", ["r", "x"], ["c"], name="concat", axis=1),
             node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["b"],
                  name="bn"),
             node("Relu", ["b"], ["p"], name="relu2"),
             node("Conv", ["p", "w2"], ["y"], name="conv2")]
    return build(nodes, [("x", np.float32, [1, 3, 5, 5])], [("y", np.float32, [1, 4, 5, 5])],
                 constants)


def _feeds(count):  # type: ignore[no-untyped-def]
    return [{"x": RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)} for _ in range(count)]


def test_pre_activation_batch_norm_runs_on_the_vector_unit():
    model = _pre_activation_model()
    integer, report = run_passes(model, calibration=_feeds(8))
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QConv") == 2 and ops.count("QMul") == 1 and ops.count("QAdd") == 1
    assert "BatchNormalization" not in ops and "Relu" not in ops
    qmul, qadd = (next(n for n in integer.graph.nodes if n.op_type == t) for t in ("QMul", "QAdd"))
    constants = constants_of(integer.graph)
    for op in (qmul, qadd):
        b = constants.get(op.inputs[1])
        assert b is not None and b.shape == (1, C, 1, 1) and b.dtype == np.int8
    assert qadd.attrs["y_lo"] == qadd.attrs["y_zero_point"]  # the Relu, absorbed
    assert report.fate("relu2").into.startswith("systolic.QAdd")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    units = {layer.op: layer.unit for layer in compiled.layers}
    assert units["QMul"] == units["QAdd"] == LayerUnit.VECTOR
    feed = _feeds(1)[0]
    assert check_layers(compiled, feed, backend="model") is None
    y_int = run_model(integer, feed)["y"]
    y_float = run_model(model, feed)["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99


def test_the_channel_vector_index():
    model = build([node("Relu", ["x"], ["a"]), node("Mul", ["c", "a"], ["y"]),
                   node("Add", ["a", "d"], ["z"])],
                  [("x", np.float32, [1, 4, 2, 2])],
                  [("y", np.float32, [1, 4, 2, 2]), ("z", np.float32, [1, 4, 2, 2])],
                  {"c": np.ones((1, 4, 1, 1), np.float32), "d": np.ones((4, 1, 1), np.float32)})
    graph = model.graph
    constants = constants_of(graph)
    relu, mul, add = graph.nodes
    assert channel_vector_index(mul, graph, constants) == 0
    assert channel_vector_index(add, graph, constants) is None  # [C, 1, 1]: not canonical
    assert channel_vector_index(relu, graph, constants) is None
    assert keeps_shape(np.zeros((1, 4, 1, 1))) and not keeps_shape(np.zeros((1, 1, 1, 8)))


def test_a_quantized_models_float_batch_norm_runs_on_the_vector_unit():
    """QDQ: DQ -> BatchNormalization -> Relu -> Q (a quantizer that leaves the BN float): the
    product between the QMul and the QAdd is calibrated, the QAdd takes the model's Q."""
    bn = {"gamma": RNG.uniform(0.5, 2, 4).astype(np.float32),
          "beta": RNG.standard_normal(4).astype(np.float32),
          "mean": RNG.standard_normal(4).astype(np.float32),
          "var": RNG.uniform(0.2, 2, 4).astype(np.float32),
          "s": np.float32(0.02), "z": np.uint8(128), "ys": np.float32(0.03), "yz": np.uint8(0)}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
             node("BatchNormalization", ["xd", "gamma", "beta", "mean", "var"], ["b"],
                  name="bn"),
             node("Relu", ["b"], ["r"], name="relu"),
             node("QuantizeLinear", ["r", "ys", "yz"], ["yq"], name="q_out"),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out")]
    model = build(nodes, [("x", np.float32, [1, 4, 3, 5])], [("y", np.float32, [1, 4, 3, 5])],
                  bn)
    integer, report = run_passes(model)
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops == ["QuantizeLinear", "QMul", "QAdd", "DequantizeLinear"]
    qadd = integer.graph.nodes[2]
    assert qadd.attrs["y_zero_point"] == 0 and qadd.attrs["y_lo"] == 0
    assert report.fate("relu").into.startswith("systolic.QAdd")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers if layer.op in ("QMul", "QAdd")] == [
        LayerUnit.VECTOR, LayerUnit.VECTOR]
    feed = {"x": RNG.standard_normal((1, 4, 3, 5)).astype(np.float32)}
    assert check_layers(compiled, feed, backend="model") is None


def _bn_params(c: int, dequantized: bool) -> tuple[dict, list]:  # type: ignore[type-arg]
    """BatchNormalization parameters of `c` channels, float or (`dequantized`) read through
    DequantizeLinear nodes of int8 values (onnxruntime's QDQ of a BatchNorm1d): (constants,
    the DequantizeLinear nodes)."""
    values = {"gamma": RNG.uniform(0.5, 2, c), "beta": RNG.standard_normal(c),
              "mean": RNG.standard_normal(c), "var": RNG.uniform(0.2, 2, c)}
    if not dequantized:
        return {k: v.astype(np.float32) for k, v in values.items()}, []
    constants: dict = {}  # type: ignore[type-arg]
    nodes = []
    for name, v in values.items():
        scale = np.float32(np.abs(v).max() / 127)
        constants |= {f"{name}_q": np.rint(v / scale).astype(np.int8), f"{name}_s": scale,
                      f"{name}_z": np.int8(0)}
        nodes.append(node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name]))
    return constants, nodes


@pytest.mark.parametrize("dequantized", [False, True])
def test_a_batchnorm1d_of_a_matrix_runs_on_the_vector_unit(dequantized):
    """x [M, C] -> BatchNormalization (BatchNorm1d after a pooled or flattened Linear, LeViT):
    QMul and QAdd of [C] vectors along the last axis, in a float model and in a QDQ one whose
    BN parameters are read through DequantizeLinear nodes."""
    constants, dq_nodes = _bn_params(6, dequantized)
    constants |= {"w": RNG.standard_normal((6, 6)).astype(np.float32),
                  "s": np.float32(0.02), "z": np.uint8(128), "ys": np.float32(0.05),
                  "yz": np.uint8(128)}
    bn = [node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["y"], name="bn")]
    if dequantized:
        nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
                 node("DequantizeLinear", ["xq", "s", "z"], ["h"]), *dq_nodes,
                 node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["b"],
                      name="bn"),
                 node("QuantizeLinear", ["b", "ys", "yz"], ["bq"]),
                 node("DequantizeLinear", ["bq", "ys", "yz"], ["y"])]
    else:
        nodes = [node("Relu", ["x"], ["h"]), *bn]
    model = build(nodes, [("x", np.float32, [3, 6])], [("y", np.float32, [3, 6])], constants)
    feed = {"x": RNG.standard_normal((3, 6)).astype(np.float32)}
    integer, _ = run_passes(model, calibration=[feed])
    ops = [n.op_type for n in integer.graph.nodes]
    assert "BatchNormalization" not in ops and ops.count("QMul") == ops.count("QAdd") == 1
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers if layer.op in ("QMul", "QAdd")] == [
        LayerUnit.VECTOR, LayerUnit.VECTOR]
    assert check_layers(compiled, feed, backend="model") is None
    y_int, y_float = run_model(integer, feed)["y"], run_model(model, feed)["y"]
    assert np.abs(y_int - y_float).max() < 0.2


def test_a_head_norms_gamma_over_a_rank_four_tensor_runs_on_the_vector_unit():
    """Qwen3's and Gemma3's q_norm/k_norm: an RMS norm over head_dim of [1, S, H, D], its
    per-row 1/rms expanded and its gamma [D] along the last axis: with the mean a MatMul
    (rms_mean), the per-row factor copied (expand_as_concat after expand_computed_operand)
    and the gamma a vector along the last axis, every step runs on the accelerator (the
    Expand and the gamma Mul were on the host), bit-exact with the reference."""
    rng = np.random.default_rng(8)
    constants = {"w": (rng.standard_normal((8, 16)) / 3).astype(np.float32),
                 "heads": np.array([1, 4, 2, 8], np.int64), "two": np.float32(2.0),
                 "eps": np.float32(1e-6), "one": np.float32(1.0),
                 "gamma": (0.8 + 0.4 * rng.random(8)).astype(np.float32),
                 "w2": (rng.standard_normal((8, 4)) / 3).astype(np.float32)}
    nodes = [node("MatMul", ["x", "w"], ["h"]), node("Reshape", ["h", "heads"], ["q"]),
             node("Pow", ["q", "two"], ["sq"]),
             node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
             node("Add", ["ms", "eps"], ["v"]), node("Sqrt", ["v"], ["r"]),
             node("Div", ["one", "r"], ["inv"]), node("Mul", ["q", "inv"], ["n"], name="scale"),
             node("Mul", ["n", "gamma"], ["g"], name="gamma_mul"),
             node("MatMul", ["g", "w2"], ["y"])]
    model = build(nodes, [("x", np.float32, [1, 4, 8])], [("y", np.float32, [1, 4, 2, 4])],
                  constants)
    feeds = [{"x": rng.standard_normal((1, 4, 8)).astype(np.float32)} for _ in range(4)]
    integer, report = run_passes(model, calibration=feeds)
    kinds = [n.op_type for n in integer.graph.nodes]
    assert "Expand" not in kinds and "Mul" not in kinds and "Pow" not in kinds
    assert report.fate("gamma_mul").into.startswith("systolic.QMul")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    assert check_layers(compiled, feeds[0], backend="model") is None
