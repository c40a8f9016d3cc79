import numpy as np
from onnx import helper

from systolic.mapper.passes.constant_layout import filled
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def report_for(model):
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def shape_chain_model():
    # y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): [2, 3, 4] -> [2, 12]
    nodes = [
        node("Shape", ["x"], ["shape"], name="shape"),
        node("Gather", ["shape", "zero"], ["batch"], axis=0, name="gather"),
        node("Unsqueeze", ["batch", "axes"], ["batch1"], name="unsqueeze"),
        node("Concat", ["batch1", "minus_one"], ["target"], axis=0, name="concat"),
        node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    constants = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
                 "minus_one": np.array([-1], np.int64)}
    return build(nodes, [("x", np.float32, [2, 3, 4])], [("y", np.float32, [2, 12])],
                 constants)


def test_shape_chain_folds_to_a_constant_reshape_target():
    model = shape_chain_model()
    report = report_for(model)
    folded = finalize(fold_constants(model, report))
    assert [n.op_type for n in folded.graph.nodes] == ["Reshape"]
    target = folded.graph.initializer(folded.graph.nodes[0].inputs[1])
    assert target is not None
    np.testing.assert_array_equal(target.data, [2, -1])
    assert {f.node: f.action for f in report.fates} == {
        "shape": "folded", "gather": "folded", "unsqueeze": "folded", "concat": "folded"}
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_model(folded, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


def test_arithmetic_on_constants_folds_and_keeps_values():
    nodes = [
        node("Constant", [], ["c"], value_float=2.0, name="const"),
        node("Mul", ["w", "c"], ["w2"], name="mul"),
        node("Add", ["w2", "one"], ["w3"], name="add"),
        node("Cast", ["w3"], ["w4"], to=1, name="cast"),
        node("Add", ["x", "w4"], ["y"], name="use"),
    ]
    w = np.array([1.5, -2.0, 3.0], np.float32)
    model = build(nodes, [("x", np.float32, [3])], [("y", np.float32, [3])],
                  {"w": w, "one": np.array(1.0, np.float32)})
    folded = finalize(fold_constants(model, report_for(model)))
    assert [n.op_type for n in folded.graph.nodes] == ["Add"]
    x = np.array([0.25, 0.5, 0.75], np.float32)
    np.testing.assert_array_equal(run_model(folded, {"x": x})["y"], x + w * 2 + 1)


def test_quantization_markers_are_not_folded():
    nodes = [node("DequantizeLinear", ["wq", "s"], ["w"], name="dq"),
             node("Add", ["x", "w"], ["y"], name="use")]
    model = build(nodes, [("x", np.float32, [2])], [("y", np.float32, [2])],
                  {"wq": np.array([1, 2], np.int8), "s": np.array(0.5, np.float32)})
    folded = fold_constants(model, report_for(model))
    assert [n.op_type for n in folded.graph.nodes] == ["DequantizeLinear", "Add"]


def _constant_of_shape_model(shape, reader):
    """ConstantOfShape(shape) of 0.25 read by `reader` ("MatMul": x @ w, "Transpose": w.T)."""
    fill = helper.make_tensor("fill", 1, [1], [0.25])
    nodes = [node("ConstantOfShape", ["shape"], ["w"], value=fill, name="fill")]
    if reader == "MatMul":
        nodes.append(node("MatMul", ["x", "w"], ["y"], name="use"))
        out = [2, shape[1]]
    else:
        nodes += [node("Transpose", ["w"], ["wt"], perm=[1, 0], name="transpose"),
                  node("MatMul", ["x", "wt"], ["y"], name="use")]
        out = [2, shape[0]]
    k = shape[0] if reader == "MatMul" else shape[1]
    return build(nodes, [("x", np.float32, [2, k])], [("y", np.float32, out)],
                 {"shape": np.array(shape, np.int64)})


def test_a_large_constant_of_shape_folds_into_a_view_of_its_value():
    model = _constant_of_shape_model((512, 256), "MatMul")  # 131,072 > FOLD_LIMIT elements
    folded = finalize(fold_constants(model, report_for(model)))
    w = folded.graph.initializer("w").data
    assert w.shape == (512, 256) and not any(w.strides) and not w.flags.writeable
    x = np.random.default_rng(1).standard_normal((2, 512)).astype(np.float32)
    # what calibration runs: the view filled in, summed as the unfolded model sums
    np.testing.assert_array_equal(run_model(filled(folded), {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


def test_a_small_constant_of_shape_is_filled_and_a_transpose_keeps_the_view():
    small = _constant_of_shape_model((16, 8), "MatMul")
    w = finalize(fold_constants(small, report_for(small))).graph.initializer("w").data
    assert w.flags.c_contiguous and w.strides != (0, 0)
    large = _constant_of_shape_model((256, 512), "Transpose")
    folded = finalize(fold_constants(large, report_for(large)))
    wt = folded.graph.initializer("wt").data
    assert wt.shape == (512, 256) and not any(wt.strides)
    np.testing.assert_array_equal(wt, np.full((512, 256), 0.25, np.float32))
