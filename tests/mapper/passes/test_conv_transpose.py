"""conv_transpose: a ConvTranspose becomes a Conv over its zero-inserted input (float and QDQ)."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.macs import node_macs
from systolic.mapper.passes.conv_transpose import conv_transpose_to_conv, swap_channels
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.quantize_float import quantize_float
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

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


FLOAT_CASES = [  # (x spatial, C, M, group, attributes, Convs written: 1 = zero insertion)
    ((5, 6), 4, 6, 1, {"strides": [2, 2]}, 1),
    ((5, 6), 4, 6, 1, {"strides": [2, 3], "pads": [1, 0, 2, 1]}, 1),             # asymmetric
    ((4, 4), 4, 4, 2, {"strides": [2, 2], "output_padding": [1, 1], "pads": [1, 1, 1, 1]}, 4),
    ((4, 5), 6, 6, 3, {"strides": [3, 1], "dilations": [2, 1], "output_padding": [2, 0]}, 1),
    ((4, 4), 4, 4, 4, {"strides": [2, 2], "kernel": (2, 2)}, 4),                 # depthwise
    ((3, 3), 2, 3, 1, {"strides": [1, 1], "pads": [1, 2, 0, 1]}, 1),              # stride 1
    ((4, 4), 2, 4, 1, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, 4),
    ((4, 4), 2, 4, 1, {"strides": [2, 2], "auto_pad": "SAME_LOWER", "kernel": (4, 4)}, 4),
    ((4, 4), 2, 4, 1, {"strides": [3, 2], "output_shape": [11, 9]}, 1),
    ((4, 4), 2, 2, 1, {"strides": [2, 2], "pads": [3, 2, 3, 2]}, 1),              # a Slice
    ((4, 4), 2, 2, 1, {"strides": [3, 3], "kernel": (1, 1)}, 1),      # phases without taps
    ((4, 4), 2, 2, 1, {"strides": [2, 2], "dilations": [2, 2], "kernel": (2, 2),
                       "output_padding": [1, 1]}, 1),
    ((4, 3), 2, 2, 1, {"strides": [2, 3], "pads": [1, 1, 1, 2], "kernel": (4, 6)}, 6),
    ((7,), 4, 6, 2, {"strides": [2], "pads": [1, 0], "output_padding": [1]}, 1),  # 1-D
    ((7,), 4, 6, 2, {"strides": [2], "pads": [1, 1], "output_padding": [1]}, 2),
    ((6,), 3, 3, 1, {"strides": [3], "dilations": [2], "kernel": (2,)}, 1),
]


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs", "convs"), FLOAT_CASES)
def test_float_conv_transpose_becomes_equal_convs(spatial, c, m, group, attrs, convs):
    model = float_model(spatial, c, m, group, dict(attrs))
    rewritten, _ = rewrite(model)
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert "ConvTranspose" not in ops and ops.count("Conv") == convs
    assert out_shape(rewritten) == out_shape(model)
    if convs > 1:  # polyphase: exactly the transposed convolution's MACs
        assert macs(rewritten) == macs(model)
    x = np.random.default_rng(1).standard_normal((1, c, *spatial)).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def macs(model):
    return sum(node_macs(n, model.graph.type_of) for n in model.graph.nodes)


def test_layout_is_reshape_and_concat_only_when_borders_fit():
    ops = [n.op_type for n in rewrite(float_model((5, 6), 4, 6, 1, {"strides": [2, 2]}))[0]
           .graph.nodes]
    assert ops == ["Reshape", "Concat", "Reshape", "Concat", "Reshape", "Conv"]
    phases = rewrite(float_model((4, 4), 2, 2, 1, {"strides": [2, 2], "kernel": (2, 2)}))[0]
    assert [n.op_type for n in phases.graph.nodes] == ["Conv"] * 4 + [
        "Reshape", "Reshape", "Concat", "Reshape", "Reshape", "Concat", "Reshape", "Reshape",
        "Concat", "Reshape"]
    cropped = rewrite(float_model((4, 4), 2, 2, 1, {"strides": [2, 2], "pads": [3, 2, 3, 2]}))
    assert "Slice" in [n.op_type for n in cropped[0].graph.nodes]


def test_swap_channels_swaps_per_group():
    w = np.arange(4 * 3 * 2 * 2).reshape(4, 3, 2, 2)  # C = 4, M/group = 3, group 2
    got = swap_channels(w, 2)
    assert got.shape == (6, 2, 2, 2)
    assert got[4, 1, 0, 1] == w[2 + 1, 1, 0, 1]  # group 1, m 1, c 1


def qdq_model(spatial, c, m, group, attrs, *, per_channel=True, int_bias=False, seed=0):
    """x -> Q -> DQ -> ConvTranspose(DQ(W_q) int8, B) -> Q -> yq (uint8, the model output);
    B float, or (`int_bias`, as onnxruntime's quantizer writes it) DQ of int32 with scale
    x_scale * w_scale."""
    r = np.random.default_rng(seed)
    kernel = attrs.pop("kernel", (3,) * len(spatial))
    w_scale = (r.uniform(0.005, 0.02, m // group) if per_channel else np.array(0.01))
    constants = {"xs": X_SCALE, "xz": X_ZP, "ys": Y_SCALE, "yz": Y_ZP,
                 "wq": r.integers(-127, 128, (c, m // group, *kernel)).astype(np.int8),
                 "ws": w_scale.astype(np.float32), "b": r.uniform(-1, 1, m).astype(np.float32)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
             node("DequantizeLinear", ["wq", "ws"], ["w"], axis=1, name="dq_w"),
             node("ConvTranspose", ["xd", "w", "bd" if int_bias else "b"], ["t"], group=group,
                  name="ct", **attrs),
             node("QuantizeLinear", ["t", "ys", "yz"], ["y"], name="q_out")]
    if int_bias:
        b_scale = (X_SCALE * np.tile(constants["ws"].reshape(-1), m // constants["ws"].size))
        constants["bq"] = np.rint(constants["b"] / b_scale).astype(np.int32)
        constants["bs"] = b_scale.astype(np.float32)
        nodes.insert(3, node("DequantizeLinear", ["bq", "bs"], ["bd"], axis=0, name="dq_b"))
    return build(nodes, [("x", np.float32, [1, c, *spatial])],
                 [("y", np.uint8, [None] * (len(spatial) + 2))], constants)


QDQ_CASES = [  # (x spatial, C, M, group, attributes, W per channel, QConvs written)
    ((6, 6), 4, 8, 1, {"strides": [2, 2], "kernel": (2, 2)}, True, 4),   # PP-OCR's upsampling
    ((5, 4), 4, 6, 2, {"strides": [2, 3], "pads": [1, 0, 0, 1], "output_padding": [1, 0]},
     True, 1),
    ((4, 4), 3, 3, 1, {"strides": [2, 2], "dilations": [2, 1]}, False, 1),
    ((4, 4), 2, 4, 1, {"strides": [2, 2], "pads": [1, 1, 1, 1], "kernel": (4, 4)}, False, 4),
    ((7,), 4, 4, 4, {"strides": [2], "pads": [1, 1], "output_padding": [1]}, True, 2),
]


def _inputs(c, spatial, seed):
    return {"x": np.random.default_rng(seed).uniform(-2, 2.5, (1, c, *spatial))
            .astype(np.float32)}


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs", "per_channel", "convs"),
                         QDQ_CASES)
def test_qdq_layout_moves_the_quantized_values(spatial, c, m, group, attrs, per_channel,
                                               convs):
    model = qdq_model(spatial, c, m, group, dict(attrs), per_channel=per_channel)
    rewritten, _ = rewrite(model)
    for concat in (n for n in rewritten.graph.nodes if n.op_type == "Concat"):
        assert rewritten.graph.type_of(concat.outputs[0]).dtype.name == "UINT8"
    for seed in range(3):
        feeds = _inputs(c, spatial, seed)
        np.testing.assert_array_equal(run_model(rewritten, feeds)["y"],
                                      run_model(model, feeds)["y"])


@pytest.mark.parametrize(("spatial", "c", "m", "group", "attrs", "per_channel", "convs"),
                         QDQ_CASES)
@pytest.mark.parametrize("int_bias", [False, True])
def test_qdq_conv_transpose_fuses_into_qconvs(spatial, c, m, group, attrs, per_channel, convs,
                                              int_bias):
    model = qdq_model(spatial, c, m, group, dict(attrs), per_channel=per_channel,
                      int_bias=int_bias and group == 1)
    integer, report = run_passes(rewrite(model)[0])
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QConv") == convs and "ConvTranspose" not in ops
    assert report.fate("q_out").action == "fused"
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


def tail_model(kernel, pads):
    """x -> ConvTranspose (no B, stride 2) -> Add [1, 4, 1, 1] -> BatchNormalization -> Relu."""
    r = np.random.default_rng(7)
    constants = {"w": r.standard_normal((3, 4, *kernel)).astype(np.float32),
                 "c": r.standard_normal((1, 4, 1, 1)).astype(np.float32),
                 "g": r.uniform(0.5, 2, 4).astype(np.float32),
                 "beta": r.standard_normal(4).astype(np.float32),
                 "mean": r.standard_normal(4).astype(np.float32),
                 "var": r.uniform(0.5, 2, 4).astype(np.float32)}
    nodes = [node("ConvTranspose", ["x", "w"], ["t"], strides=[2, 2], pads=pads, name="ct"),
             node("Add", ["t", "c"], ["a"], name="bias"),
             node("BatchNormalization", ["a", "g", "beta", "mean", "var"], ["n"], name="bn"),
             node("Relu", ["n"], ["y"], name="relu")]
    return build(nodes, [("x", np.float32, [1, 3, 4, 5])], [("y", np.float32, [None] * 4)],
                 constants)


@pytest.mark.parametrize(("kernel", "pads", "convs"), [((2, 2), [0, 0, 0, 0], 4),
                                                       ((3, 3), [1, 1, 1, 1], 1)])
def test_bias_add_batchnorm_and_relu_join_the_convs(kernel, pads, convs):
    model = tail_model(kernel, pads)
    rewritten, report = rewrite(model)
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert ops.count("Conv") == convs and ops.count("Relu") == convs
    assert "Add" not in ops and "BatchNormalization" not in ops
    assert {report.fate(n).into for n in ("bias", "bn", "relu")} == {"ConvTranspose 'ct'"}
    x = np.random.default_rng(2).standard_normal((1, 3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("config", [ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS),
                                    ArrayConfig(rows=8, cols=8, dataflow=Dataflow.WS)],
                         ids=["4x4os", "8x8ws"])
@pytest.mark.parametrize("case", [QDQ_CASES[0], QDQ_CASES[2]], ids=["polyphase", "zeros"])
def test_the_array_runs_it_bit_exact(config, case):
    spatial, c, m, group, attrs, per_channel, convs = case
    model = qdq_model(spatial, c, m, group, dict(attrs), per_channel=per_channel)
    compiled = compile_model(run_passes(rewrite(model)[0])[0], config)
    units = {layer.op: layer.unit for layer in compiled.layers}
    assert units["QConv"] == LayerUnit.ARRAY and units["Concat"] == LayerUnit.LAYOUT
    assert sum(layer.macs for layer in compiled.layers) == (
        macs(model) if convs > 1 else macs(rewrite(model)[0]))
    assert check_layers(compiled, _inputs(c, spatial, 4), backend="model") is None


def test_a_float_polyphase_is_quantized_with_its_interleave_on_integers():
    """Wired before quantize_float: the phase Convs become QConvs and quantize_float gives
    the interleave's Concats one set of parameters, so they move integers."""
    model = tail_model((2, 2), [0, 0, 0, 0])
    feeds = [{"x": np.random.default_rng(s).standard_normal((1, 3, 4, 5)).astype(np.float32)}
             for s in range(4)]
    integer, _ = run_passes(rewrite(model)[0], calibration=feeds)
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QConv") == 4 and ops.count("Concat") == 3
    for concat in (n for n in integer.graph.nodes if n.op_type == "Concat"):
        assert integer.graph.type_of(concat.outputs[0]).dtype.name == "UINT8"
    for f in feeds:
        want, got = run_model(model, f)["y"], run_model(integer, f)["y"]
        step = np.abs(want).max() / 255  # about the output's quantization step (min 0)
        assert np.abs(got - want).max() <= 3 * step  # measured up to 1.9 steps
