import pathlib

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.mapper.importer import load_model
from systolic.mapper.passes.accuracy import quantization_accuracy
from systolic.mapper.passes.calibration import RANDOM_SAMPLES, calibrate, random_calibration
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import is_quantized, quantize_float, quantize_weights
from systolic.mapper.passes.report import PassReport

from .model_builder import build, node

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"


def test_weights_are_symmetric_int8_per_output_channel():
    w = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [2.0, 1.0, -0.5]], np.float32)
    q, scale = quantize_weights(w, axis=0)
    np.testing.assert_array_equal(scale, np.float32([1.0 / 127, 1.0, 2.0 / 127]))
    np.testing.assert_array_equal(q, [[64, -127, 32], [0, 0, 0], [127, 64, -32]])
    q1, scale1 = quantize_weights(w.T, axis=1)
    np.testing.assert_array_equal(q1, q.T)
    np.testing.assert_array_equal(scale1, scale)


def test_random_calibration_is_seeded_standard_normal():
    model = load_model(MODELS / "lenet_float.onnx")
    feeds = random_calibration(model.graph, seed=3)
    assert len(feeds) == RANDOM_SAMPLES == 8
    again = random_calibration(model.graph, seed=3)
    np.testing.assert_array_equal(feeds[5]["input"], again[5]["input"])
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(feeds[0]["input"],
                                  rng.standard_normal((1, 1, 16, 16)).astype(np.float32))


def test_activations_get_uint8_ranges_including_zero():
    nodes = [node("Gemm", ["x", "w", "b"], ["g"], transB=1, name="fc"),
             node("Relu", ["g"], ["y"], name="relu")]
    w = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    model = build(nodes, [("x", np.float32, [1, 2])], [("y", np.float32, [1, 2])],
                  {"w": w, "b": np.zeros(2, np.float32)})
    feeds = [{"x": np.array([[1.0, 1.0]], np.float32)},
             {"x": np.array([[2.0, 0.5]], np.float32)}]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    quantized = quantize_float(model, report, calibration=feeds)
    assert is_quantized(quantized) and not is_quantized(model)
    consts = {t.name: t.data for t in quantized.graph.initializers}
    # x spans [0, 2] -> scale 2/255, zero point 0; relu output spans [0, 3] (3 = 1*1 + 2*1)
    np.testing.assert_array_equal(consts["x_scale"], np.float32(2.0 / 255))
    assert consts["x_zero_point"] == 0 and consts["x_zero_point"].dtype == np.uint8
    np.testing.assert_array_equal(consts["y_scale"], np.float32(3.0 / 255))
    fused, _ = run_passes(model, calibration=feeds)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMatMul",
                                                       "DequantizeLinear"]
    assert fused.graph.nodes[1].attrs["y_lo"] == 0


def test_random_calibration_keeps_a_float_model_usable():
    model = load_model(MODELS / "lenet_float.onnx")
    fused, _ = run_passes(model, seed=1)
    again, _ = run_passes(model, seed=1)
    assert fused.graph.text() == again.graph.text()
    data = np.load(MODELS / "lenet_inputs.npz")
    accuracy = quantization_accuracy(model, fused, [{"input": data[k]} for k in data.files])
    assert accuracy["cosine_similarity"] > 0.99


def test_matmul_with_bias_add_and_relu_becomes_one_qmatmul():
    r = np.random.default_rng(13)
    nodes = [node("MatMul", ["x", "w"], ["m"], name="matmul"),
             node("Add", ["m", "b"], ["a"], name="bias"),
             node("Relu", ["a"], ["h"], name="relu"),
             node("MatMul", ["h", "w2"], ["y"], name="head")]
    constants = {"w": r.standard_normal((6, 5)).astype(np.float32),
                 "b": r.standard_normal(5).astype(np.float32),
                 "w2": r.standard_normal((5, 3)).astype(np.float32)}
    model = build(nodes, [("x", np.float32, [2, 4, 6])], [("y", np.float32, [2, 4, 3])],
                  constants)
    feeds = [{"x": r.standard_normal((2, 4, 6)).astype(np.float32)} for _ in range(4)]
    fused, report = run_passes(model, calibration=feeds)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMatMul", "QMatMul",
                                                       "DequantizeLinear"]
    assert {report.fate(n).into for n in ("matmul", "bias", "relu")} == {
        "systolic.QMatMul 'matmul'"}
    accuracy = quantization_accuracy(model, fused, feeds)
    assert accuracy["cosine_similarity"] > 0.999
    assert accuracy["top1_agreement"] >= 0.75


def test_concats_share_their_outputs_parameters_and_stay_layout_ops():
    """Inception branches into a Concat, then a DenseNet-style chain Concat(previous, new):
    every Concat input ends up with its output's parameters, so no Concat (and no Q/DQ
    around one) is left for the host."""
    r = np.random.default_rng(5)

    def conv_w(cout: int, cin: int) -> np.ndarray:
        return r.standard_normal((cout, cin, 3, 3)).astype(np.float32) / 4

    nodes = [node("Conv", ["x", "wa"], ["a"], name="a", pads=[1, 1, 1, 1]),
             node("Relu", ["a"], ["ar"], name="a_relu"),
             node("Conv", ["x", "wb"], ["b"], name="b", pads=[1, 1, 1, 1]),
             node("Concat", ["ar", "b"], ["c1"], name="cat1", axis=1),
             node("Conv", ["c1", "wc"], ["c"], name="c", pads=[1, 1, 1, 1]),
             node("Concat", ["c1", "c"], ["c2"], name="cat2", axis=1),
             node("Conv", ["c2", "wd"], ["y"], name="d", pads=[1, 1, 1, 1])]
    constants = {"wa": conv_w(4, 3), "wb": conv_w(4, 3), "wc": conv_w(4, 8),
                 "wd": conv_w(2, 12)}
    model = build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 2, 6, 6])],
                  constants)
    feeds = [{"x": r.standard_normal((1, 3, 6, 6)).astype(np.float32)} for _ in range(4)]
    fused, report = run_passes(model, calibration=feeds)
    ops = [(n.domain, n.op_type) for n in fused.graph.nodes]
    assert ops.count(("systolic", "QConv")) == 4 and ops.count(("", "Concat")) == 2
    assert ops.count(("", "DequantizeLinear")) == 1  # only the final output's
    for name in ("cat1", "cat2"):
        fate = report.fate(name)
        assert fate is not None and fate.action == "layout", fate
    accuracy = quantization_accuracy(model, fused, feeds)
    assert accuracy["cosine_similarity"] > 0.999



def _shuffle_model(r: np.random.Generator):  # type: ignore[no-untyped-def]
    """Two ShuffleNet-v2-style blocks: Split the channels, a Conv + Relu on one half, Concat
    with the other half, channel shuffle (Reshape, Transpose, Reshape), then Slice halves and
    a nearest Resize before the last Conv."""
    def conv_w(cout: int, cin: int) -> np.ndarray:
        return r.standard_normal((cout, cin, 3, 3)).astype(np.float32) / 4

    def block(i: int, x: str) -> list:  # type: ignore[type-arg]
        return [node("Conv", [f"h{i}b", f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
                node("Concat", [f"h{i}a", f"r{i}"], [f"cat{i}"], name=f"cat{i}", axis=1),
                node("Reshape", [f"cat{i}", "groups"], [f"g{i}"], name=f"reshape{i}"),
                node("Transpose", [f"g{i}"], [f"t{i}"], name=f"shuffle{i}", perm=[0, 2, 1, 3, 4]),
                node("Reshape", [f"t{i}", "flat"], [f"s{i}"], name=f"flat{i}")]

    nodes = [node("Conv", ["x", "w0"], ["x0"], name="conv0", pads=[1, 1, 1, 1]),
             node("Split", ["x0", "halves"], ["h1a", "h1b"], name="split", axis=1),
             *block(1, "x0"),
             node("Slice", ["s1", "zero", "two", "one"], ["h2a"], name="slice_a"),
             node("Slice", ["s1", "two", "four", "one"], ["h2b"], name="slice_b"),
             *block(2, "s1"),
             node("Resize", ["s2", "", "twice"], ["up"], name="up", mode="nearest"),
             node("Conv", ["up", "w3"], ["y"], name="conv3", pads=[1, 1, 1, 1])]
    constants = {"w0": conv_w(4, 3), "w1": conv_w(2, 2), "w2": conv_w(2, 2), "w3": conv_w(2, 4),
                 "halves": np.array([2, 2], np.int64), "groups": np.array([1, 2, 2, 6, 6]),
                 "flat": np.array([1, 4, 6, 6]), "zero": np.array([0]), "two": np.array([2]),
                 "four": np.array([4]), "one": np.array([1]),
                 "twice": np.array([1, 1, 2, 2], np.float32)}
    return build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 2, 12, 12])],
                 constants)


def test_split_slice_and_nearest_resize_keep_parameters_so_shuffle_blocks_stay_integer():
    """Split, Slice (constant bounds) and a nearest Resize select elements: their results keep
    their input's parameters, so a ShuffleNet block's passed-on half, the Concats and the
    channel shuffle run on integers (layout) instead of in float on the host; the Concat
    chain's shared parameters cover every value sharing them, the first Concat's included."""
    r = np.random.default_rng(7)
    model = _shuffle_model(r)
    feeds = [{"x": r.standard_normal((1, 3, 6, 6)).astype(np.float32)} for _ in range(4)]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    planned = quantize_float(model, report, calibration=feeds)
    consts = {t.name: t.data for t in planned.graph.initializers}
    scale, zero = float(consts["cat2_scale"]), int(consts["cat2_zero_point"])
    for value in ("cat1", "cat2"):
        low, high = _float_range(model, feeds, value)
        assert (0 - zero) * scale <= low + scale / 2 and high <= (255 - zero) * scale + scale / 2
    fused, report = run_passes(model, calibration=feeds)
    def on_host(n) -> bool:  # type: ignore[no-untyped-def]
        fate = report.fate(n.name)
        return n.domain == "" and (fate is None or fate.action != "layout")

    host = [n.op_type for n in fused.graph.nodes if on_host(n)]
    assert host == ["QuantizeLinear", "DequantizeLinear"]  # the graph input's and output's
    for name in ("split", "slice_a", "slice_b", "cat1", "cat2", "shuffle1", "up"):
        fate = report.fate(name)
        assert fate is not None and fate.action == "layout", (name, fate)
    assert quantization_accuracy(model, fused, feeds)["cosine_similarity"] > 0.999


def test_gather_elements_of_constant_indices_keeps_its_inputs_parameters():
    """DeBERTa's relative positions: MatMul -> GatherElements(constant indices) -> Div(constant)
    -> Softmax. The selected elements keep the product's parameters, so the GatherElements runs
    on integers and the Div is a table (it stayed float on the host)."""
    r = np.random.default_rng(8)
    constants = {"w": r.standard_normal((4, 4)).astype(np.float32),
                 "idx": r.integers(0, 4, (1, 4, 4)).astype(np.int64),
                 "d": np.array(2.0, np.float32)}
    nodes = [node("MatMul", ["x", "w"], ["m"], name="mm"),
             node("GatherElements", ["m", "idx"], ["g"], name="gather_elements", axis=2),
             node("Div", ["g", "d"], ["q"], name="div"), node("Softmax", ["q"], ["y"], axis=-1)]
    model = build(nodes, [("x", np.float32, [1, 4, 4])], [("y", np.float32, [1, 4, 4])],
                  constants, opset=17)
    feeds = [{"x": r.standard_normal((1, 4, 4)).astype(np.float32)} for _ in range(4)]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    planned = quantize_float(model, report, calibration=feeds)
    consts = {t.name: t.data for t in planned.graph.initializers}
    for param in ("scale", "zero_point"):  # the selection keeps the product's parameters
        assert consts[f"g_{param}"] == consts[f"m_{param}"]
    fused, _ = run_passes(model, calibration=feeds)
    kinds = [n.op_type for n in fused.graph.nodes]
    assert "QTable" in kinds and "Div" not in kinds
    assert quantization_accuracy(model, fused, feeds)["cosine_similarity"] > 0.99


def test_a_constant_causal_mask_is_cut_at_the_softmax_floor():
    """LLaMA's exported mask: a constant [1, 1, S, S] of 0 and float32's lowest added to two
    layers' scores [1, H, S, S] before their Softmaxes. Its values are raised to the softmax
    floor before quantizing, so the sums are QAdds (a scale of ~1e36 needed a multiplier of
    ~1e37: host) and the result stays close to the float model."""
    r, heads, size = np.random.default_rng(9), 2, 6
    mask = np.where(np.tril(np.ones((size, size), bool)), 0.0, np.finfo(np.float32).min)
    constants = {"mask": mask.astype(np.float32).reshape(1, 1, size, size),
                 "v": r.standard_normal((size, 4)).astype(np.float32)}
    nodes = []
    for k in ("1", "2"):
        nodes += [node("Add", ["s" + k, "mask"], ["a" + k], name="add" + k),
                  node("Softmax", ["a" + k], ["p" + k], axis=-1),
                  node("MatMul", ["p" + k, "v"], ["y" + k], name="mm" + k)]
    nodes.append(node("Add", ["y1", "y2"], ["y"], name="sum"))
    shape = [1, heads, size, size]
    model = build(nodes, [("s1", np.float32, shape), ("s2", np.float32, shape)],
                  [("y", np.float32, [1, heads, size, 4])], constants, opset=17)
    feeds = [{"s1": r.standard_normal(shape).astype(np.float32),
              "s2": r.standard_normal(shape).astype(np.float32)} for _ in range(4)]
    fused, _ = run_passes(model, calibration=feeds)
    kinds = [n.op_type for n in fused.graph.nodes]
    assert kinds.count("QAdd") == 3 and "Add" not in kinds
    assert quantization_accuracy(model, fused, feeds)["cosine_similarity"] > 0.99


def _float_range(model, feeds, value: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(min, max) of `value` over `feeds` in the float model."""
    ranges = calibrate(model, feeds, [value])
    return ranges[value]

def _gemm_relu(w: np.ndarray):  # type: ignore[no-untyped-def]
    nodes = [node("Gemm", ["x", "w", "b"], ["g"], transB=1, name="fc"),
             node("Relu", ["g"], ["y"], name="relu")]
    return build(nodes, [("x", np.float32, [1, 2])], [("y", np.float32, [1, 2])],
                 {"w": w, "b": np.zeros(2, np.float32)})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weight_is_named_before_calibration(bad: float) -> None:
    w = np.array([[1.0, 2.0], [bad, 0.5]], np.float32)
    model = _gemm_relu(w)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    with pytest.raises(ModelError, match=r"^weight 'w' of node 'fc' holds 1 NaN or infinite "
                       r"value\(s\), which cannot be quantized: fix the float model's weights$"):
        quantize_float(model, report)


def test_value_that_overflows_during_calibration_is_named() -> None:
    model = _gemm_relu(np.full((2, 2), 3e38, np.float32))
    feeds = [{"x": np.array([[2.0, 2.0]], np.float32)}]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    message = (r"^value 'y' \(output of node 'relu'\) is NaN or infinite during calibration, "
               r"so it has no quantization range")
    with pytest.raises(ModelError, match=message), np.errstate(over="ignore"):
        quantize_float(model, report, calibration=feeds)


def test_near_zero_channels_get_guarded_scales():
    w = np.array([[1.0, -0.5], [1e-39, 3e-40], [0.0, 0.0]], np.float32)
    bias = np.array([0.1, 50.0, 0.2])
    q, scale = quantize_weights(w, axis=0, guard=(0.02, 0.05, bias))
    assert scale[0] == np.float32(1.0 / 127)  # a normal channel keeps max|w| / 127
    assert scale[2] == 1.0  # an all-zero channel keeps 1
    assert scale[1] >= 50.0 / (0.02 * 2.0**30) and 0.02 * scale[1] / 0.05 >= 2.0**-32
    np.testing.assert_array_equal(q[1:], 0)


def test_an_attention_bias_after_a_product_is_an_add_of_its_own():
    """q @ k^T + bias[1, H, S, S] (Swin's relative-position bias): not the product's bias
    (only one along the last axis is), so the product's result is quantized and both run on
    the accelerator (QMatMul, then a QAdd of a rank-4 constant B)."""
    r = np.random.default_rng(3)
    constants = {"w": r.standard_normal((8, 4)).astype(np.float32),
                 "bias": r.standard_normal((1, 2, 4, 4)).astype(np.float32)}
    nodes = [node("MatMul", ["x", "w"], ["scores"], name="mm"),
             node("Add", ["scores", "bias"], ["y"], name="add")]
    model = build(nodes, [("x", np.float32, [1, 2, 4, 8])], [("y", np.float32, [1, 2, 4, 4])],
                  constants)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMatMul", "QAdd",
                                                      "DequantizeLinear"]
    assert report.fate("mm").into == "systolic.QMatMul 'mm'"
    assert report.fate("add").into == "systolic.QAdd 'add'"
