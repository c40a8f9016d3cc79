"""rms_mean: T5's RMS normalization's mean of squares over the last axis becomes a MatMul by
1/H in a float model (the array computes it once quantized); a layer normalization's variance
(its Pow reads a Sub) and quantized models are left alone."""

import numpy as np

from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.rms_mean import rms_mean_to_matmul
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

H = 16


def _rms(*, centred=False, readers=False):  # type: ignore[no-untyped-def]
    """x -> [x - mean(x)] -> Pow 2 -> ReduceMean(-1) -> + eps -> Sqrt -> 1 / . -> x * . * w"""
    nodes = []
    base = "x"
    if centred:
        nodes += [node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
                  node("Sub", ["x", "m"], ["d"])]
        base = "d"
    nodes += [node("Pow", [base, "two"], ["sq"]),
              node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1, name="mean"),
              node("Add", ["ms", "eps"], ["v"]), node("Sqrt", ["v"], ["r"]),
              node("Div", ["one", "r"], ["inv"]), node("Mul", [base, "inv"], ["n"]),
              node("Mul", ["n", "w"], ["y"], name="gamma")]
    outputs = [("y", np.float32, (1, 4, H))]
    if readers:  # the query and key projections read the normalized value
        nodes += [node("MatMul", ["y", "wq"], ["q"]), node("MatMul", ["y", "wk"], ["k"])]
        outputs = [("q", np.float32, (1, 4, 8)), ("k", np.float32, (1, 4, 8))]
    rng = np.random.default_rng(7)
    constants = {"wq": rng.normal(0, 0.3, (H, 8)).astype(np.float32),
                 "wk": rng.normal(0, 0.3, (H, 8)).astype(np.float32),"two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32),
                 "one": np.array(1.0, np.float32),
                 "w": np.random.default_rng(5).normal(1, 0.1, H).astype(np.float32)}
    return make(nodes, [("x", np.float32, (1, 4, H))], outputs, constants, opset=13)


def _rewrite(model):  # type: ignore[no-untyped-def]
    return finalize(rms_mean_to_matmul(model, PassReport()))


def test_the_mean_of_squares_becomes_a_matmul_by_one_over_h():  # type: ignore[no-untyped-def]
    _, model = _rms()
    rewritten = _rewrite(model)
    kinds = op_types(rewritten)
    assert "ReduceMean" not in kinds and "MatMul" in kinds
    matmul = next(n for n in rewritten.graph.nodes if n.op_type == "MatMul")
    weights = next(t.data for t in rewritten.graph.initializers if t.name == matmul.inputs[1])
    assert weights.shape == (H, 1) and np.all(weights == np.float32(1 / H))
    feed = {"x": np.random.default_rng(6).normal(0, 2, (1, 4, H)).astype(np.float32)}
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-6)


def test_the_row_scaling_stays_a_product_by_rows():  # type: ignore[no-untyped-def]
    """x * r with r [1, S, 1] is left as it is (no Transposes: the vector unit reads r one
    value per row of x), and once quantized it is a QMul of x and r."""
    _, model = _rms()
    rewritten = _rewrite(model)
    assert "Transpose" not in op_types(rewritten)
    assert any(n.op_type == "Mul" and n.inputs == ("x", "inv") for n in rewritten.graph.nodes)
    fused, _ = run_passes(model)
    assert "Transpose" not in op_types(fused) and "QMul" in op_types(fused)


def test_the_gamma_folds_into_the_matmuls_reading_it():  # type: ignore[no-untyped-def]
    """T5: the RMS norm's gamma Mul read only by MatMuls of constant weights is folded into
    them (diag(gamma) W); the values stay within float rounding."""
    _, model = _rms(readers=True)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    rewritten = finalize(rms_mean_to_matmul(model, report))
    assert not any(n.op_type == "Mul" and "w" in n.inputs for n in rewritten.graph.nodes)
    assert report.fate("gamma") is not None and report.fate("gamma").action == "folded"
    feed = {"x": np.random.default_rng(6).normal(0, 2, (1, 4, H)).astype(np.float32)}
    for out in ("q", "k"):
        np.testing.assert_allclose(run_model(rewritten, feed)[out], run_model(model, feed)[out],
                                   rtol=1e-5, atol=1e-5)


def test_a_layer_norm_variance_stays():  # type: ignore[no-untyped-def]
    _, model = _rms(centred=True)
    assert rms_mean_to_matmul(model, PassReport()) is model


def test_the_quantized_rms_norm_runs_its_mean_on_the_array():  # type: ignore[no-untyped-def]
    _, model = _rms()
    fused, _ = run_passes(model)
    assert "QMatMul" in op_types(fused) and "ReduceMean" not in op_types(fused)


def test_a_dynamically_quantized_models_rms_norm_is_rewritten_too():  # type: ignore[no-untyped-def]
    """onnxruntime's quantize_dynamic leaves a decoder's RMS norms float (its float part is
    quantized after training, dynamic_island): its mean of squares becomes the MatMul."""
    nodes = [node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             node("MatMulInteger", ["xq", "wq", "xz"], ["acc"]),
             node("Cast", ["acc"], ["accf"], to=1), node("Mul", ["accf", "xs"], ["h"]),
             node("Pow", ["h", "two"], ["sq"]),
             node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1, name="mean"),
             node("Add", ["ms", "eps"], ["v"]), node("Sqrt", ["v"], ["r"]),
             node("Div", ["one", "r"], ["inv"]), node("Mul", ["h", "inv"], ["y"])]
    constants = {"wq": np.random.default_rng(3).integers(-100, 100, (H, H)).astype(np.int8),
                 "two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32),
                 "one": np.array(1.0, np.float32)}
    _, model = make(nodes, [("x", np.float32, (1, 4, H))], [("y", np.float32, (1, 4, H))],
                    constants, opset=13)
    rewritten = _rewrite(model)
    assert "ReduceMean" not in op_types(rewritten)
    feed = {"x": np.random.default_rng(2).normal(0, 1, (1, 4, H)).astype(np.float32)}
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-5)


def _static(through_relu=False):  # type: ignore[no-untyped-def]
    """A QDQ model's float RMS norm: DQ(x) -> [Relu] -> Pow -> ReduceMean -> Add -> Sqrt ->
    Div(1, .) -> Q (onnxruntime quantizes none of these steps)."""
    nodes = [node("DequantizeLinear", ["xq", "s", "z"], ["x"])]
    base = "x"
    if through_relu:
        nodes.append(node("Relu", ["x"], ["xr"]))
        base = "xr"
    nodes += [node("Pow", [base, "two"], ["sq"], name="pow"),
              node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1, name="mean"),
              node("Add", ["ms", "eps"], ["v"]), node("Sqrt", ["v"], ["r"]),
              node("Div", ["one", "r"], ["inv"]),
              node("QuantizeLinear", ["inv", "ys", "z"], ["y"])]
    constants = {"s": np.float32(0.05), "z": np.uint8(128), "ys": np.float32(0.01),
                 "two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32),
                 "one": np.array(1.0, np.float32)}
    return make(nodes, [("xq", np.uint8, (1, 4, H))], [("y", np.uint8, (1, 4, 1))],
                constants, opset=13)[1]


def test_a_static_models_rms_norm_of_a_dequantized_value_is_rewritten():  # type: ignore[no-untyped-def]
    """The mean of squares of DQ(x) becomes the MatMul; one of another float value (here a
    Relu's) is left alone in a statically quantized model."""
    assert "ReduceMean" not in op_types(_rewrite(_static()))
    model = _static(through_relu=True)
    assert rms_mean_to_matmul(model, PassReport()) is model
