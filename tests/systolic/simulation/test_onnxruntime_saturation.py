"""The int16 pair-sum detector, and on a CPU whose onnxruntime saturates, the detector against
onnxruntime itself: it flags exactly the products onnxruntime gets wrong."""

import itertools

import numpy as np
import pytest

from systolic.simulation.onnxruntime_saturation import (
    conv_overflows,
    onnxruntime_saturates,
    overflowing_outputs,
    pair_sums_overflow,
)

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

saturating = pytest.mark.skipif(
    not onnxruntime_saturates(), reason="this CPU's onnxruntime does not saturate pair sums"
)


def _run(op_type, feeds, constants, **attrs):
    """onnxruntime's output of one node: `feeds` are graph inputs, `constants` initializers."""
    node = helper.make_node(op_type, [*feeds, *constants], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
         for n, x in feeds.items()],
        [onnx.ValueInfoProto(name="y")],
        initializer=[numpy_helper.from_array(x, n) for n, x in constants.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def test_probe_agrees_with_a_direct_run():
    a, b = np.array([[255, 255]], np.uint8), np.array([[-128], [-128]], np.int8)
    y = _run("MatMulInteger", {"a": a, "b": b}, {})
    assert onnxruntime_saturates() == (int(y[0, 0]) == -32768)
    assert int(y[0, 0]) in (-32768, -65280)


@pytest.mark.parametrize(("pair", "overflows"), [
    ((0, 1), True), ((2, 3), True), ((1, 2), False), ((0, 2), False), ((3, 4), False),
])  # fmt: skip
def test_only_adjacent_pairs_along_k_count(pair, overflows):
    a, b = np.zeros((1, 7), np.uint8), np.zeros((7, 1), np.int8)
    a[0, list(pair)], b[list(pair), 0] = 255, -128
    assert pair_sums_overflow(a, b) is overflows


def test_limits_of_int16():
    a = np.array([[255, 255]], np.uint8)
    assert not pair_sums_overflow(a, np.array([[64], [64]], np.int8))  # 32640
    assert pair_sums_overflow(a, np.array([[127], [2]], np.int8))  # 32385 + 510 = 32895
    assert pair_sums_overflow(a, np.array([[-64], [-65]], np.int8))  # -32895
    assert not pair_sums_overflow(a, np.array([[-128], [0]], np.int8))  # one product fits


def test_outputs_batches_and_vectors():
    r = np.random.default_rng(0)
    a = r.integers(0, 256, (2, 1, 5, 9)).astype(np.uint8)
    b = r.integers(-128, 128, (3, 9, 4)).astype(np.int8)
    mask = overflowing_outputs(a, b)
    assert mask.shape == (2, 3, 5, 4)
    assert mask[1, 2, 3, 1] == overflowing_outputs(a[1, 0, 3], b[2][:, 1]).item()
    assert overflowing_outputs(a[0, 0, 0], b[0]).shape == (4,)
    assert not overflowing_outputs(a, b // 2).any()  # |w| <= 64 never overflows


@saturating
def test_matmul_integer_differs_exactly_where_flagged():
    r = np.random.default_rng(1)
    a = r.integers(150, 256, (40, 9)).astype(np.uint8)
    b = r.integers(-128, 128, (9, 12)).astype(np.int8)
    exact = a.astype(np.int64) @ b.astype(np.int64)
    mask = overflowing_outputs(a, b)
    assert 0 < mask.sum() < mask.size
    np.testing.assert_array_equal(_run("MatMulInteger", {"a": a}, {"b": b}) != exact, mask)


def _conv_pairs(channels, kernel, outputs, group=1):
    """Yield (x, w, cells) for every two cells (channel, kernel offset) of one window."""
    cells = [(c, k) for k in range(kernel) for c in range(channels // group)]
    for pair in itertools.combinations(cells, 2):
        x = np.zeros((1, channels, 1, kernel), np.uint8)
        w = np.zeros((outputs, channels // group, 1, kernel), np.int8)
        for c, k in pair:
            x[0, c::channels // group, 0, k], w[:, c, 0, k] = 255, -128
        yield x, w, pair


def _qlinear_conv(x, w, group=1, x_zp=0, pads=(0, 0, 0, 0)):
    """onnxruntime's QLinearConv with scales that show any saturation (y_scale 1000)."""
    constants = {"xs": np.float32(1), "xz": np.uint8(x_zp), "w": w, "ws": np.float32(1),
                 "wz": np.int8(0), "ys": np.float32(1000), "yz": np.uint8(128)}  # fmt: skip
    return _run("QLinearConv", {"x": x}, constants, group=group, pads=list(pads))


@saturating
@pytest.mark.parametrize(("channels", "kernel", "outputs", "group"), [
    (3, 2, 8, 1),  # an odd channel count: pairs straddle kernel offsets
    (4, 2, 4, 2),  # groups
    (2, 2, 2, 2),  # depthwise: never saturates
    (1, 2, 1, 1),  # one channel, one output: onnxruntime's depthwise kernel too
    (1, 2, 8, 1),
])  # fmt: skip
def test_qlinear_conv_differs_exactly_where_flagged(channels, kernel, outputs, group):
    for x, w, pair in _conv_pairs(channels, kernel, outputs, group):
        exact = np.clip(np.rint(-65280 / 1000) + 128, 0, 255)
        differs = bool(np.any(_qlinear_conv(x, w, group) != exact))
        assert conv_overflows(x, w, 0, group=group) == differs, pair


@saturating
def test_convolution_padding_holds_the_zero_point():
    x = np.full((1, 1, 1, 1), 255, np.uint8)
    w = np.full((8, 1, 1, 2), -128, np.int8)
    pads = (0, 1, 0, 0)  # the first window reads the padding (x's zero point 255), then x
    assert conv_overflows(x, w, 255, pads=pads)
    assert not conv_overflows(x, w, 0, pads=pads)
    assert np.all(_qlinear_conv(x, w, x_zp=255, pads=pads) != 128)  # exact: 0 -> y_zp 128


def test_conv_integer_does_not_saturate():
    # onnxruntime's ConvInteger sums exactly, on this CPU too: not a saturating layer.
    x, w = np.full((1, 4, 3, 3), 255, np.uint8), np.full((2, 4, 1, 1), -128, np.int8)
    assert conv_overflows(x, w, 0)
    np.testing.assert_array_equal(_run("ConvInteger", {"x": x}, {"w": w}), -130560)
