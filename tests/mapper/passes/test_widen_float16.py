import numpy as np
from onnx import TensorProto, helper, numpy_helper

from systolic.ir import DataType
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.widen_float16 import CAST_REASON, widen_float16
from systolic.reference.executor import run_model

from .model_builder import build, node

_F16 = TensorProto.FLOAT16


def _half_mlp():
    """x f16[2,8] -> MatMul(W) -> Add(Constant b) -> Relu -> y f16[2,4], all in float16."""
    rng = np.random.default_rng(3)
    bias = helper.make_node("Constant", [], ["b"], name="bias", value=numpy_helper.from_array(
        rng.standard_normal(4).astype(np.float16)))
    nodes = [bias, node("MatMul", ["x", "W"], ["m"], name="mm"),
             node("Add", ["m", "b"], ["a"], name="add"), node("Relu", ["a"], ["y"], name="relu")]
    return build(nodes, [("x", np.float16, [2, 8])], [("y", np.float16, [2, 4])],
                 {"W": rng.standard_normal((8, 4)).astype(np.float16)})


def _report(model):
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def test_a_half_model_computes_in_float32_behind_its_half_interface():
    model = _half_mlp()
    report = _report(model)
    wide = finalize(widen_float16(model, report))
    graph = wide.graph
    assert [n.op_type for n in graph.nodes] == ["Cast", "Constant", "MatMul", "Add", "Relu",
                                                "Cast"]
    assert graph.initializer("W").dtype == DataType.FLOAT
    assert graph.nodes[1].attrs["value"].dtype == DataType.FLOAT
    assert graph.type_of("m").dtype == DataType.FLOAT
    assert [info.type.dtype for info in (*graph.inputs, *graph.outputs)] == [DataType.FLOAT16] * 2
    assert {report.created_reason(graph.nodes[i].name) for i in (0, -1)} == {CAST_REASON}
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(np.float16)
    half, widened = run_model(model, {"x": x})["y"], run_model(wide, {"x": x})["y"]
    assert widened.dtype == np.float16
    exact = np.maximum(x.astype(np.float64) @ model.graph.initializer("W").data.astype(np.float64)
                       + graph.nodes[1].attrs["value"].data, 0)
    # float32 inside: no farther from the exact result than the float16 computation
    assert np.abs(widened - exact).max() <= np.abs(half - exact).max() + 1e-3


def test_a_cast_to_half_inside_a_float_model_casts_to_float32():
    nodes = [node("Cast", ["x"], ["h"], name="half", to=10), node("Relu", ["h"], ["r"]),
             node("Cast", ["r"], ["y"], name="back", to=1)]
    model = build(nodes, [("x", np.float32, [4])], [("y", np.float32, [4])])
    wide = widen_float16(model, _report(model))
    assert [n.attrs["to"] for n in wide.graph.nodes if n.op_type == "Cast"] == [1, 1]


def test_a_model_without_half_values_or_with_a_subgraph_is_left_alone():
    plain = build([node("Relu", ["x"], ["y"])], [("x", np.float32, [4])],
                  [("y", np.float32, [4])])
    assert widen_float16(plain, _report(plain)) is plain
    branch = helper.make_graph([node("Neg", ["x"], ["t"])], "b", [],
                               [helper.make_tensor_value_info("t", _F16, None)])
    with_if = build([node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)],
                    [("x", np.float16, [4]), ("c", np.bool_, [])], [("y", np.float16, [4])])
    assert widen_float16(with_if, _report(with_if)) is with_if


def test_the_pipeline_maps_a_half_model_to_the_array():
    integer, _ = run_passes(_half_mlp(), seed=0)
    ops = [n.op_type for n in integer.graph.nodes]
    assert "QMatMul" in ops and "MatMul" not in ops
