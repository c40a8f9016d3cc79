"""conv_transpose: a ConvTranspose becomes a Conv over its zero-inserted input (float and QDQ)."""

import numpy as np
import pytest

from systolic.mapper.passes.conv_transpose import conv_transpose_to_conv, transposed_kernel
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.quantize_float import quantize_float
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

X_SCALE, X_ZP = np.float32(0.02), np.uint8(120)
Y_SCALE, Y_ZP = np.float32(0.05), np.uint8(130)


def rewrite(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(conv_transpose_to_conv(model, report)), report


def out_shape(model):
    return model.graph.type_of("y").shape


def float_model(spatial, c, m, group, attrs, *, bias=True, seed=0):
    """x [1, c, *spatial] -> ConvTranspose(W [c, m/group, 3 or 2 per axis], B) -> y."""
    r = np.random.default_rng(seed)
    kernel = attrs.pop("kernel", (3,) * len(spatial))
    constants = {"w": r.standard_normal((c, m // group, *kernel)).astype(np.float32)}
    inputs = ["x", "w"]
    if bias:
        constants["b"] = r.standard_normal(m).astype(np.float32)
        inputs.append("b")
    nodes = [node("ConvTranspose", inputs, ["y"], group=group, name="ct", **attrs)]
    return build(nodes, [("x", np.float32, [1, c, *spatial])], [("y", np.float32, [None] * (len(spatial) + 2))],
                 constants)


FLOAT_CASES = [
    ((5, 6), 4, 6, 1, {"strides": [2, 2]}),
    ((5, 6), 4, 6, 1, {"strides": [2, 3], "pads": [1, 0, 2, 1]}),           # asymmetric
    ((4, 4), 4, 4, 2, {"strides": [2, 2], "output_padding": [1, 1], "pads": [1, 1, 1, 1]}),
    ((4, 5), 6, 6, 3, {"strides": [3, 1], "dilations": [2, 1], "output_padding": [2, 0]}),
    ((4, 4), 4, 4, 4, {"strides": [2, 2], "kernel": (2, 2)}),               # depthwise, k = s
    ((3, 3), 2, 3, 1, {"strides": [1, 1], "pads": [1, 2, 0, 1]}),            # stride 1
    ((4, 4), 2, 4, 1, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((4, 4), 2, 4, 1, {"strides": [2, 2], "auto_pad": "SAME_LOWER", "kernel": (4, 4)}),
    ((4, 4), 2, 4, 1, {"strides": [3, 2], "output_shape": [11, 9]}),
    ((4, 4), 2, 2, 1, {"strides": [2, 2], "pads": [3, 2, 3, 2]}),            # crops: a Slice
    ((4, 4), 2, 2, 1, {"strides": [3, 3], "kernel": (1, 1)}),               # s - 1 > reach
    ((7,), 4, 6, 2, {"strides": [2], "pads": [1, 0], "output_padding": [1]}),  # 1-D
    ((6,), 3, 3, 1, {"strides": [3], "dilations": [2], "kernel": (2,)}),
]


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs"), FLOAT_CASES)
def test_float_conv_transpose_becomes_an_equal_conv(spatial, c, m, group, attrs):
    model = float_model(spatial, c, m, group, dict(attrs))
    rewritten, _ = rewrite(model)
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert "ConvTranspose" not in ops and ops.count("Conv") == 1
    assert out_shape(rewritten) == out_shape(model)
    x = np.random.default_rng(1).standard_normal((1, c, *spatial)).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_zero_insertion_uses_layout_ops_only_when_borders_fit():
    ops = [n.op_type for n in rewrite(float_model((5, 6), 4, 6, 1, {"strides": [2, 2]}))[0]
           .graph.nodes]
    assert ops == ["Reshape", "Concat", "Reshape", "Concat", "Reshape", "Conv"]
    cropped = rewrite(float_model((4, 4), 2, 2, 1, {"strides": [2, 2], "pads": [3, 2, 3, 2]}))
    assert "Slice" in [n.op_type for n in cropped[0].graph.nodes]


def test_transposed_kernel_swaps_channels_per_group_and_flips():
    w = np.arange(4 * 3 * 2 * 2).reshape(4, 3, 2, 2)  # C = 4, M/group = 3, group 2
    got = transposed_kernel(w, 2)
    assert got.shape == (6, 2, 2, 2)
    assert got[4, 1, 0, 1] == w[2 + 1, 1, 1, 0]  # group 1, m 1, c 1, taps flipped


def qdq_model(spatial, c, m, group, attrs, *, per_channel=True, seed=0):
    """x -> Q -> DQ -> ConvTranspose(DQ(W_q) int8, B) -> Q -> yq (uint8, the model output)."""
    r = np.random.default_rng(seed)
    kernel = attrs.pop("kernel", (3,) * len(spatial))
    w_scale = (r.uniform(0.005, 0.02, m // group) if per_channel else np.array(0.01))
    constants = {"xs": X_SCALE, "xz": X_ZP, "ys": Y_SCALE, "yz": Y_ZP,
                 "wq": r.integers(-127, 128, (c, m // group, *kernel)).astype(np.int8),
                 "ws": w_scale.astype(np.float32), "b": r.uniform(-1, 1, m).astype(np.float32)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
             node("DequantizeLinear", ["wq", "ws"], ["w"], axis=1, name="dq_w"),
             node("ConvTranspose", ["xd", "w", "b"], ["t"], group=group, name="ct", **attrs),
             node("QuantizeLinear", ["t", "ys", "yz"], ["y"], name="q_out")]
    return build(nodes, [("x", np.float32, [1, c, *spatial])], [("y", np.uint8, [None] * (len(spatial) + 2))],
                 constants)


QDQ_CASES = [
    ((6, 6), 4, 8, 1, {"strides": [2, 2], "kernel": (2, 2)}, True),   # the PP-OCR upsampling
    ((5, 4), 4, 6, 2, {"strides": [2, 3], "pads": [1, 0, 0, 1], "output_padding": [1, 0]}, True),
    ((4, 4), 3, 3, 1, {"strides": [2, 2], "dilations": [2, 1]}, False),
    ((7,), 4, 4, 4, {"strides": [2], "pads": [1, 1], "output_padding": [1]}, True),
]


def _inputs(c, spatial, seed):
    return {"x": np.random.default_rng(seed).uniform(-2, 2.5, (1, c, *spatial))
            .astype(np.float32)}


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs", "per_channel"), QDQ_CASES)
def test_qdq_zeros_go_into_the_quantized_input(spatial, c, m, group, attrs, per_channel):
    model = qdq_model(spatial, c, m, group, dict(attrs), per_channel=per_channel)
    rewritten, _ = rewrite(model)
    concat = next(n for n in rewritten.graph.nodes if n.op_type == "Concat")
    assert rewritten.graph.type_of(concat.outputs[0]).dtype.name == "UINT8"
    for seed in range(3):
        feeds = _inputs(c, spatial, seed)
        np.testing.assert_array_equal(run_model(rewritten, feeds)["y"],
                                      run_model(model, feeds)["y"])


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs", "per_channel"), QDQ_CASES)
def test_qdq_conv_transpose_fuses_into_a_qconv(spatial, c, m, group, attrs, per_channel):
    model = qdq_model(spatial, c, m, group, dict(attrs), per_channel=per_channel)
    integer, report = run_passes(rewrite(model)[0])
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QConv") == 1 and "ConvTranspose" not in ops
    assert report.fate("ct").action == "fused"
    assert {op for op in ops if op not in ("QConv",)} <= {"QuantizeLinear", "Reshape", "Concat"}
    for seed in range(3):
        feeds = _inputs(c, spatial, seed)
        got = run_model(integer, feeds)["y"].astype(np.int64)
        want = run_model(model, feeds)["y"].astype(np.int64)
        assert np.abs(got - want).max() <= 1  # the integer output stage rounds once
        assert np.mean(got == want) >= 0.95


def ptq_then_rewrite(model, feeds):
    """The pipeline's order for a float model: quantize_float, then this pass, then the
    fusions (run_passes of a quantized model skips quantize_float)."""
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    quantized = finalize(quantize_float(name_nodes(model), report, calibration=feeds))
    return quantized, run_passes(rewrite(quantized)[0])[0]


def conv_sandwich(group=2):
    """x -> Conv 1x1 -> ConvTranspose(float W, B; stride 2) -> Conv 1x1 -> y (float)."""
    r = np.random.default_rng(3)
    constants = {"w1": r.standard_normal((4, 2, 1, 1)).astype(np.float32),
                 "wt": r.standard_normal((4, 6 // group, 3, 3)).astype(np.float32),
                 "bt": r.standard_normal(6).astype(np.float32),
                 "w2": r.standard_normal((2, 6, 1, 1)).astype(np.float32)}
    nodes = [node("Conv", ["x", "w1"], ["a"], name="conv1"),
             node("ConvTranspose", ["a", "wt", "bt"], ["t"], strides=[2, 2], pads=[1, 1, 0, 0],
                  output_padding=[1, 1], group=group, name="ct"),
             node("Conv", ["t", "w2"], ["y"], name="conv2")]
    return build(nodes, [("x", np.float32, [1, 2, 4, 4])], [("y", np.float32, [1, 2, 9, 9])],
                 constants)


def test_float_weights_after_ptq_are_quantized_per_output_channel():
    feeds = [{"x": np.random.default_rng(s).standard_normal((1, 2, 4, 4)).astype(np.float32)}
             for s in range(4)]
    quantized, integer = ptq_then_rewrite(conv_sandwich(), feeds)
    assert "ConvTranspose" in [n.op_type for n in quantized.graph.nodes]
    assert [n.op_type for n in integer.graph.nodes].count("QConv") == 3
    y_scale = next(t.data for t in quantized.graph.initializers if t.name == "y_scale")
    for f in feeds:
        steps = np.rint((run_model(integer, f)["y"] - run_model(quantized, f)["y"]) / y_scale)
        assert np.abs(steps).max() <= 3  # measured 3: W int8 per channel, then 2 more rounds
        assert np.mean(steps == 0) >= 0.75


def test_a_conv_transpose_of_computed_weights_stays():
    model = build([node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], name="ct")],
                  [("x", np.float32, [1, 2, 3, 3]), ("w", np.float32, [2, 2, 2, 2])],
                  [("y", np.float32, [None] * 4)])
    rewritten, report = rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == ["ConvTranspose"]
    assert "not rewritten" in report.note_of("ct")
