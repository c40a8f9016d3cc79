"""quantize_before_layout: Q(layout(a, b)) = layout(Q(a), Q(b)), so the layout moves integers."""

import numpy as np
import pytest

from systolic.mapper.passes.eliminate_dead import eliminate_dead
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.quantize_before_layout import quantize_before_layout
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

S, Z = np.float32(0.03), np.uint8(100)


def chain_model(leaf, *, dq_scale=S, extra_reader=False):
    """leaf -> Reshape [1, 2, 12, 1] -> Concat(fill, axis 3) -> Reshape [1, 2, 3, 8] -> Q -> y.

    leaf: "dq" (x -> Q -> DQ of scale `dq_scale`) or "float" (x itself)."""
    constants = {"s": S, "z": Z, "ds": dq_scale, "fill": np.full((1, 2, 12, 1), 0.25, np.float32),
                 "rows": np.array([1, 2, 12, 1]), "shape": np.array([1, 2, 3, 8])}
    nodes = []
    source = "x"
    if leaf == "dq":
        nodes += [node("QuantizeLinear", ["x", "ds", "z"], ["xq"], name="q_in"),
                  node("DequantizeLinear", ["xq", "ds", "z"], ["xd"], name="dq_in")]
        source = "xd"
    nodes += [node("Reshape", [source, "rows"], ["r"], name="rows"),
              node("Concat", ["r", "fill"], ["c"], axis=3, name="spread"),
              node("Reshape", ["c", "shape"], ["f"], name="back"),
              node("QuantizeLinear", ["f", "s", "z"], ["y"], name="q_out")]
    outputs = [("y", np.uint8, [1, 2, 3, 8])]
    if extra_reader:
        nodes.append(node("Relu", ["c"], ["other"], name="other"))
        outputs.append(("other", np.float32, [1, 2, 12, 2]))
    return build(nodes, [("x", np.float32, [1, 2, 3, 4])], outputs, constants)


def moved(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(eliminate_dead(quantize_before_layout(model, report), report)), report


def same_outputs(a, b):
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(-3, 5, (1, 2, 3, 4)).astype(np.float32)
        for name, value in run_model(b, {"x": x}).items():
            np.testing.assert_array_equal(run_model(a, {"x": x})[name], value)


@pytest.mark.parametrize(("leaf", "dq_scale", "ops"), [
    ("dq", S, ["QuantizeLinear", "Reshape", "Concat", "Reshape"]),           # Q(DQ(u)) = u
    ("dq", np.float32(0.05), ["QuantizeLinear", "DequantizeLinear", "QuantizeLinear",
                              "Reshape", "Concat", "Reshape"]),              # requantized
    ("float", S, ["QuantizeLinear", "Reshape", "Concat", "Reshape"]),         # quantized first
])
def test_the_chain_moves_integers(leaf, dq_scale, ops):
    model = chain_model(leaf, dq_scale=dq_scale)
    result, report = moved(model)
    assert [n.op_type for n in result.graph.nodes] == ops
    concat = next(n for n in result.graph.nodes if n.op_type == "Concat")
    assert result.graph.type_of(concat.outputs[0]).dtype.name == "UINT8"
    assert report.fate("q_out").action == "removed"
    same_outputs(result, model)


def test_a_chain_value_read_elsewhere_stays_float():
    model = chain_model("dq", extra_reader=True)
    result, _ = moved(model)
    assert [n.op_type for n in result.graph.nodes] == [n.op_type for n in model.graph.nodes]


def test_an_opset_9_float_model_gets_quantize_nodes_it_can_bind():
    """The moved QuantizeLinear keeps the version quantize_float gave it (13), not the
    model's opset 9, where QuantizeLinear does not exist (light_inception_v2 was refused)."""
    rng = np.random.default_rng(0)
    constants = {"w1": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                 "w2": rng.standard_normal((2, 7, 1, 1)).astype(np.float32),
                 "scale": rng.uniform(0.5, 2, (1, 4, 1, 1)).astype(np.float32)}
    nodes = [node("Conv", ["x", "w1"], ["a0"], pads=[1, 1, 1, 1], name="conv1"),
             node("Mul", ["a0", "scale"], ["a1"], name="scale"),  # a float leaf of the Concat
             node("Relu", ["a1"], ["a"], name="relu"),
             node("Concat", ["a", "x"], ["c"], axis=1, name="cat"),
             node("Conv", ["c", "w2"], ["y"], name="conv2")]
    model = build(nodes, [("x", np.float32, [1, 3, 5, 5])], [("y", np.float32, [1, 2, 5, 5])],
                  constants, opset=9)
    integer, _ = run_passes(model, seed=0)
    assert "QConv" in [n.op_type for n in integer.graph.nodes]
    assert {n.version for n in integer.graph.nodes if n.op_type == "QuantizeLinear"} == {13}


def test_a_focus_of_strided_slices_of_the_float_input_moves_integers():
    """YOLOv5/YOLOX's Focus: Concat of x[..., ::2, ::2], x[..., 1::2, ::2], ... then a Q: one
    Q of the input, then Slices and the Concat on integers."""
    constants = {"s": S, "z": Z, "two": np.array([2, 2]), "axes": np.array([2, 3]),
                 "end": np.array([1 << 30, 1 << 30])}
    nodes, parts = [], []
    for k, (row, col) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        constants[f"start{k}"] = np.array([row, col])
        nodes.append(node("Slice", ["x", f"start{k}", "end", "axes", "two"], [f"p{k}"],
                          name=f"slice{k}"))
        parts.append(f"p{k}")
    nodes += [node("Concat", parts, ["c"], axis=1, name="focus"),
              node("QuantizeLinear", ["c", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, [1, 2, 4, 6])], [("y", np.uint8, [1, 8, 2, 3])],
                  constants)
    result, _ = moved(model)
    assert [n.op_type for n in result.graph.nodes] == ["QuantizeLinear", *["Slice"] * 4,
                                                        "Concat"]
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(-3, 5, (1, 2, 4, 6)).astype(np.float32)
        np.testing.assert_array_equal(run_model(result, {"x": x})["y"],
                                      run_model(model, {"x": x})["y"])
