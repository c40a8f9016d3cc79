"""scalar_dequantize: onnxruntime's QDQ of a scalar constant (BERT's 1/sqrt(d), GELU's 0.5,
LayerNorm's epsilon) read by element-wise ops becomes the float value it dequantizes to."""

import numpy as np

from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.scalar_dequantize import fold_scalar_dequantize
from systolic.reference.executor import run_model

from .table_models import make, node

SCALE = np.array(0.0013865, np.float32)


def _model(*, quantized_constant=False, reader="Mul", value_shape=()):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> reader(., DQ(c)) with c an int8 scalar (or Q of a float scalar)."""
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"])]
    constants = {"s": np.array(0.05, np.float32), "z": np.array(128, np.uint8),
                 "cs": SCALE, "cz": np.array(0, np.uint8)}
    if quantized_constant:
        nodes.append(node("QuantizeLinear", ["cf", "cs", "cz"], ["cq"]))
        constants["cf"] = np.full(value_shape, 0.35355338, np.float32)
    else:
        constants["cq"] = np.full(value_shape, 255, np.uint8)
    nodes += [node("DequantizeLinear", ["cq", "cs", "cz"], ["c"]),
              node(reader, ["xd", "c"], ["y"])]
    inputs = [("x", np.float32, (2, 4))]
    out_shape = (4, 4) if reader == "MatMul" else (2, 4)
    return make(nodes, inputs, [("y", np.float32, out_shape)], constants)


def _fold(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(fold_scalar_dequantize(model, report))


def _check_same(model, folded):  # type: ignore[no-untyped-def]
    feed = {"x": np.random.default_rng(4).normal(0, 2, (2, 4)).astype(np.float32)}
    np.testing.assert_array_equal(run_model(folded, feed)["y"], run_model(model, feed)["y"])


def test_a_dequantized_scalar_becomes_its_float_value():  # type: ignore[no-untyped-def]
    _, model = _model()
    folded = _fold(model)
    mul = next(n for n in folded.graph.nodes if n.op_type == "Mul")  # (the DQ is dead now)
    value = next(t.data for t in folded.graph.initializers if t.name == mul.inputs[1])
    assert value == np.float32(255 * SCALE)
    _check_same(model, folded)


def test_the_quantize_of_a_constant_node_folds_too():  # type: ignore[no-untyped-def]
    _, model = _model(quantized_constant=True)
    folded = _fold(model)
    mul = next(n for n in folded.graph.nodes if n.op_type == "Mul")
    assert mul.inputs[1] in {t.name for t in folded.graph.initializers}
    _check_same(model, folded)


def test_weights_and_larger_constants_stay():  # type: ignore[no-untyped-def]
    _, vector = _model(value_shape=(4,))
    assert fold_scalar_dequantize(vector, PassReport()) is vector


def test_a_quantized_scalar_operand_of_a_qlinear_mul_becomes_a_table():  # type: ignore[no-untyped-def]
    """onnxruntime's QOperator form: QLinearMul(x, Q(0.354)) -> an integer constant, then
    normalize_qoperator's table of x * c (computed by the QLinearMul itself)."""
    from systolic.mapper.passes.pipeline import run_passes
    from systolic.mapper.passes.scalar_dequantize import fold_scalar_quantize

    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             node("QuantizeLinear", ["cf", "cs", "cz"], ["cq"]),
             node("QLinearMul", ["xq", "s", "z", "cq", "cs", "cz", "ys", "yz"], ["yq"],
                  domain="com.microsoft"),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    constants = {"s": np.array(0.05, np.float32), "z": np.array(128, np.uint8),
                 "cf": np.array(0.35355338, np.float32), "cs": SCALE,
                 "cz": np.array(0, np.uint8), "ys": np.array(0.02, np.float32),
                 "yz": np.array(128, np.uint8)}
    _, model = make(nodes, [("x", np.float32, (2, 4))], [("y", np.float32, (2, 4))],
                    constants, ms=True)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    folded = finalize(fold_scalar_quantize(model, report))
    mul = next(n for n in folded.graph.nodes if n.op_type == "QLinearMul")
    assert mul.inputs[3] in {t.name for t in folded.graph.initializers}
    _check_same(model, folded)
    fused, _ = run_passes(model)
    assert "QTable" in [n.op_type for n in fused.graph.nodes]
    _check_same(model, fused)
