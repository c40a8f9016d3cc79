"""linear_resize: a linear Resize as QMatMuls with constant interpolation matrices. Hand-made
QDQ graphs (2x half_pixel, 1.5x align_corners, sizes with asymmetric) through the passes, the
compiler and the cycle model: bit-exact with the integer graph's reference, within the stated
steps of the model as written; a float model's Resize quantized that way; the Resizes that do
not qualify stay."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

from .model_builder import build, node

S, Z, S_OUT = np.float32(0.02), np.uint8(120), np.float32(0.015)
SHAPE = [1, 3, 6, 5]


def _resize_node(out: str, attrs: dict[str, object], constants: dict[str, np.ndarray],
                 scales=None, sizes=None):  # type: ignore[no-untyped-def]
    constants.update({"roi": np.zeros(0, np.float32),
                      "scales": np.array(scales if scales is not None else [], np.float32)})
    inputs = ["xd", "roi", "scales"]
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    return node("Resize", inputs, [out], name="resize", mode="linear", **attrs)


def qdq_model(mode: str, *, out_scale=S, scales=None, sizes=None, opset=13):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> Resize(linear) -> Q(out_scale) -> y."""
    constants: dict[str, np.ndarray] = {"s": S, "z": Z, "so": out_scale}
    resize = _resize_node("f", {"coordinate_transformation_mode": mode}, constants, scales, sizes)
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"), resize,
             node("QuantizeLinear", ["f", "so", "z"], ["y"], name="q_out")]
    out = list(sizes) if sizes is not None else [int(d * f) for d, f in zip(SHAPE, scales)]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, out)], constants,
                 opset=opset)


def _inputs(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).uniform(-2.4, 2.6, SHAPE).astype(np.float32)}


def _mapped(model):  # type: ignore[no-untyped-def]
    """The integer graph and its compiled program at 16x16; the program is checked bit-exact
    with the integer graph's reference on the cycle model."""
    integer, report = run_passes(model)
    compiled = compile_model(integer, ArrayConfig(rows=16, cols=16))
    for seed in range(2):
        outputs = simulate(compiled, _inputs(seed), backend="model")
        for name, value in run_model(integer, _inputs(seed)).items():
            np.testing.assert_array_equal(outputs[name], value)
    return integer, compiled, report


def _steps_apart(a, b, seed: int) -> int:  # type: ignore[no-untyped-def]
    ours, theirs = run_model(a, _inputs(seed))["y"], run_model(b, _inputs(seed))["y"]
    return int(np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max())


@pytest.mark.parametrize(("mode", "resize", "steps"), [
    ("half_pixel", {"scales": [1, 1, 2, 2]}, 1),
    ("pytorch_half_pixel", {"scales": [1, 1, 2, 2]}, 1),
    ("asymmetric", {"sizes": [1, 3, 12, 7]}, 1),
    ("align_corners", {"scales": [1, 1, 1.5, 2]}, 1),
])
def test_a_quantized_linear_resize_runs_on_the_array(mode, resize, steps):  # type: ignore[no-untyped-def]
    model = qdq_model(mode, **resize)
    integer, compiled, report = _mapped(model)
    assert "Resize" not in {n.op_type for n in integer.graph.nodes}
    products = [layer for layer in compiled.layers if layer.op == "QMatMul"]
    assert len(products) == 2 and all(p.unit is LayerUnit.ARRAY for p in products)
    assert "interpolation matrix" in (report.note_of("resize") or "")
    for seed in range(2):
        assert _steps_apart(integer, model, seed) <= steps


def test_a_narrower_output_range_adds_the_intermediate_rounding():
    """Intermediates keep the input's parameters (all values stay in its range): their
    half-step rounding is 0.5 * S / S_OUT output steps, plus the final rounding."""
    model = qdq_model("half_pixel", scales=[1, 1, 2, 2], out_scale=S_OUT)
    integer, _, _ = _mapped(model)
    bound = int(np.ceil(0.5 + 0.5 * S / S_OUT))
    assert max(_steps_apart(integer, model, seed) for seed in range(3)) <= bound


def test_a_float_models_linear_resize_becomes_quantized_products():
    constants: dict[str, np.ndarray] = {}
    nodes = [node("Relu", ["x"], ["xd"], name="relu"),
             _resize_node("f", {}, constants, scales=[1, 1, 2, 2]),
             node("Relu", ["f"], ["y"], name="relu_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, [1, 3, 12, 10])],
                  constants)
    integer, compiled, _ = _mapped(model)
    products = [layer for layer in compiled.layers if layer.op == "QMatMul"]
    assert len(products) == 2 and all(p.unit is LayerUnit.ARRAY for p in products)
    ours, theirs = (run_model(m, _inputs(5))["y"].ravel() for m in (integer, model))
    assert ours @ theirs / np.linalg.norm(ours) / np.linalg.norm(theirs) > 0.999


@pytest.mark.parametrize("quantized", [False, True])
def test_a_resize_to_its_own_size_keeps_its_output(quantized):  # type: ignore[no-untyped-def]
    """A linear Resize with scales of 1 (its output equals its input) is left as it is in
    float and QDQ models, and the model still runs bit-exact (it once lost its output)."""
    if quantized:
        model = qdq_model("half_pixel", scales=[1, 1, 1, 1])
    else:
        constants: dict[str, np.ndarray] = {}
        nodes = [node("Relu", ["x"], ["xd"], name="relu"),
                 _resize_node("f", {}, constants, scales=[1, 1, 1, 1]),
                 node("Relu", ["f"], ["y"], name="relu_out")]
        model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, SHAPE)],
                      constants)
    integer, _, report = _mapped(model)
    assert "Resize" in {n.op_type for n in integer.graph.nodes}
    if quantized:
        assert "resizes no axis" in (report.note_of("resize") or "")


def test_a_resize_whose_output_is_a_graph_output_stays():
    constants: dict[str, np.ndarray] = {"s": S, "z": Z}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"),
             _resize_node("y", {}, constants, scales=[1, 1, 2, 2])]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, [1, 3, 12, 10])],
                  constants)
    integer, report = run_passes(model)
    assert "Resize" in {n.op_type for n in integer.graph.nodes}
    assert report.note_of("resize") == "its output is not read by one QuantizeLinear only"


def test_a_resize_read_by_a_convolution_ends_with_a_transpose():
    """A convolution stores its input channel-last, which a QMatMul cannot write (contiguous
    rows): the last step is a transposed one, whose Transpose (a layout copy) writes it."""
    constants: dict[str, np.ndarray] = {
        "s": S, "z": Z, "w": np.full((4, 3, 1, 1), 7, np.int8), "ws": np.float32(0.01),
        "wz": np.int8(0)}
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"),
             _resize_node("f", {}, constants, scales=[1, 1, 2, 2]),
             node("QuantizeLinear", ["f", "s", "z"], ["fq"], name="q_up"),
             node("DequantizeLinear", ["fq", "s", "z"], ["fd"], name="dq_up"),
             node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dq_w"),
             node("Conv", ["fd", "wd"], ["c"], name="conv"),
             node("QuantizeLinear", ["c", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 4, 12, 10])],
                  constants)
    integer, compiled, _ = _mapped(model)
    kinds = [n.op_type for n in integer.graph.nodes]
    assert kinds[kinds.index("QConv") - 1] == "Transpose"
    products = [layer for layer in compiled.layers if layer.op == "QMatMul"]
    assert len(products) == 2 and all(p.unit is LayerUnit.ARRAY for p in products)


def test_an_opset_11_export_gets_per_column_weight_scales_it_can_bind():
    """DequantizeLinear-10 has no axis: the weights' DequantizeLinear is version 13 (an opset-11
    model quantized by onnxruntime was refused: 'x_scale must be a scalar')."""
    model = qdq_model("half_pixel", sizes=[1, 3, 11, 9], opset=11)
    integer, compiled, _ = _mapped(model)
    products = [layer for layer in compiled.layers if layer.op == "QMatMul"]
    assert len(products) == 2 and all(p.unit is LayerUnit.ARRAY for p in products)
    assert max(_steps_apart(integer, model, seed) for seed in range(2)) <= 1


def test_a_nearest_resize_gets_no_note_from_this_pass():
    constants: dict[str, np.ndarray] = {"s": S, "z": Z}
    resize = _resize_node("f", {}, constants, scales=[1, 1, 2, 2])
    resize = node("Resize", list(resize.input), ["f"], name="resize", mode="nearest")
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"), resize,
             node("QuantizeLinear", ["f", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 3, 12, 10])],
                  constants)
    _, report = run_passes(model)
    note = report.note_of("resize") or ""
    assert "not a linear Resize" not in note and "through a DequantizeLinear" not in note
