import numpy as np
import pytest
from onnx import NodeProto

from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.spatial_mean import spatial_mean_to_pool
from systolic.reference.executor import run_model

from .model_builder import build, node

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)


def _mean_model(axes, keepdims, *, opset=13, shape=(2, 3, 5, 4)):  # type: ignore[no-untyped-def]
    constants = {}
    if opset >= 18:
        constants["axes"] = np.array(axes, np.int64)
        mean = node("ReduceMean", ["x", "axes"], ["y"], name="mean", keepdims=keepdims)
    else:
        mean = node("ReduceMean", ["x"], ["y"], name="mean", axes=axes, keepdims=keepdims)
    kept = tuple(1 if i in [a % len(shape) for a in axes] else d for i, d in enumerate(shape))
    out = kept if keepdims else tuple(d for d, k in zip(shape, kept) if k != 1 or d == 1)
    return build([mean], [("x", np.float32, list(shape))], [("y", np.float32, list(out))],
                 constants, opset=opset)  # fmt: skip


def _rewrite(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(spatial_mean_to_pool(model, report))


@pytest.mark.parametrize(("axes", "keepdims", "opset"), [
    ([2, 3], 1, 13), ([2, 3], 0, 13), ([-1, -2], 0, 13), ([3, 2], 1, 18), ([2, 3], 0, 18)])
def test_a_spatial_mean_becomes_a_global_average_pool(axes, keepdims, opset):  # type: ignore[no-untyped-def]
    model = _mean_model(axes, keepdims, opset=opset)
    rewritten = _rewrite(model)
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert ops == (["GlobalAveragePool"] if keepdims else ["GlobalAveragePool", "Reshape"])
    expected = run_model(model, {"x": X})["y"]
    got = run_model(rewritten, {"x": X})["y"]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("axes", "shape"), [
    ([1, 2], (2, 3, 5, 4)), ([2], (2, 3, 5, 4)), ([1], (2, 3)), ([1, 2, 3], (2, 3, 5, 4))])
def test_other_means_stay(axes, shape):  # type: ignore[no-untyped-def]
    model = _mean_model(axes, 1, shape=shape)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert spatial_mean_to_pool(model, report) is model


def test_in_a_qdq_model_the_quantize_moves_before_the_reshape_and_all_fuses():
    scale, zp = np.float32(0.05), np.uint8(128)
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
             node("ReduceMean", ["xd"], ["m"], name="mean", axes=[2, 3], keepdims=0),
             node("QuantizeLinear", ["m", "s2", "z"], ["mq"], name="q1"),
             node("DequantizeLinear", ["mq", "s2", "z"], ["y"], name="dq1")]
    model = build(nodes, [("x", np.float32, [2, 3, 5, 4])], [("y", np.float32, [2, 3])],
                  {"s": scale, "z": zp, "s2": np.float32(0.01)})  # fmt: skip
    rewritten = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == [
        "QuantizeLinear", "DequantizeLinear", "GlobalAveragePool", "QuantizeLinear", "Reshape",
        "DequantizeLinear"]  # fmt: skip
    np.testing.assert_array_equal(run_model(rewritten, {"x": X})["y"],
                                  run_model(model, {"x": X})["y"])  # fmt: skip
    integer, _ = run_passes(model)
    ops = [(n.domain, n.op_type) for n in integer.graph.nodes]
    assert ("systolic", "QAveragePool") in ops and ("", "ReduceMean") not in ops


def test_a_float_model_mean_is_quantized_onto_the_vector_unit():
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("ReduceMean", ["c"], ["y"], name="mean", axes=[2, 3], keepdims=0)]
    model = build(nodes, [("x", np.float32, [2, 3, 5, 4])], [("y", np.float32, [2, 4])],
                  {"w": w})  # fmt: skip
    integer, report = run_passes(model)
    ops = [(n.domain, n.op_type) for n in integer.graph.nodes]
    assert ("systolic", "QAveragePool") in ops and ("", "ReduceMean") not in ops
    fate = report.fate("mean")
    assert fate is not None and fate.action != "host"


SEQ = RNG.standard_normal((1, 6, 8)).astype(np.float32)  # [B, S, H]


def _layer_norm_nodes(x: str) -> list[NodeProto]:
    """The decomposed LayerNorm PyTorch exports, normalizing `x` over its last axis."""
    return [node("ReduceMean", [x], ["mu"], name="mean", axes=[-1], keepdims=1),
            node("Sub", [x, "mu"], ["xc"], name="sub"),
            node("Pow", ["xc", "two"], ["sq"], name="pow"),
            node("ReduceMean", ["sq"], ["var"], name="var", axes=[-1], keepdims=1),
            node("Add", ["var", "eps"], ["ve"], name="add_eps"),
            node("Sqrt", ["ve"], ["sd"], name="sqrt"),
            node("Div", ["xc", "sd"], ["y"], name="div")]


def test_a_layer_norm_over_the_last_axis_of_a_sequence_keeps_its_means():
    model = build(_layer_norm_nodes("x"), [("x", np.float32, [1, 6, 8])],
                  [("y", np.float32, [1, 6, 8])],
                  {"two": np.float32(2.0), "eps": np.float32(1e-5)})  # fmt: skip
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert spatial_mean_to_pool(model, report) is model
    integer, _ = run_passes(model)
    ops = [n.op_type for n in integer.graph.nodes]
    assert "QAveragePool" not in ops and ops.count("QLayerNorm") == 1  # fuse_layernorm's


def test_a_conv1d_mean_over_the_length_is_still_a_pool():
    w = RNG.standard_normal((4, 6, 3)).astype(np.float32)
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1]),
             node("ReduceMean", ["c"], ["m"], name="mean", axes=[2], keepdims=1),
             node("Flatten", ["m"], ["y"], name="flat")]
    model = build(nodes, [("x", np.float32, [1, 6, 8])], [("y", np.float32, [1, 4])],
                  {"w": w})  # fmt: skip
    rewritten = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == ["Conv", "GlobalAveragePool", "Flatten"]
    np.testing.assert_allclose(run_model(rewritten, {"x": SEQ})["y"],
                               run_model(model, {"x": SEQ})["y"], rtol=1e-6, atol=1e-6)  # fmt: skip


def test_a_conv1d_squeeze_excitation_mean_is_still_a_pool():
    """The SE scale is broadcast back over L too, but only through a Conv: not a statistic."""
    w = RNG.standard_normal((6, 6, 1)).astype(np.float32)
    nodes = [node("ReduceMean", ["x"], ["m"], name="mean", axes=[2], keepdims=1),
             node("Conv", ["m", "w"], ["c"], name="conv"),
             node("Sigmoid", ["c"], ["s"], name="gate"),
             node("Mul", ["x", "s"], ["y"], name="scale")]
    model = build(nodes, [("x", np.float32, [1, 6, 8])], [("y", np.float32, [1, 6, 8])],
                  {"w": w})  # fmt: skip
    rewritten = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == ["GlobalAveragePool", "Conv", "Sigmoid", "Mul"]


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 9)])
def test_a_global_max_pool_becomes_a_max_pool_over_the_whole_extent(shape):  # type: ignore[no-untyped-def]
    pooled = (*shape[:2], *(1 for _ in shape[2:]))
    model = build([node("GlobalMaxPool", ["x"], ["y"], name="gmp")],
                  [("x", np.float32, list(shape))], [("y", np.float32, list(pooled))], {})
    rewritten = _rewrite(model)
    assert [(n.op_type, n.attrs["kernel_shape"]) for n in rewritten.graph.nodes] == [
        ("MaxPool", shape[2:])]
    x = RNG.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(run_model(rewritten, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


def test_a_global_max_pool_of_unknown_shape_stays():  # type: ignore[no-untyped-def]
    model = build([node("GlobalMaxPool", ["x"], ["y"], name="gmp")],
                  [("x", np.float32, ["n", 3, "h", "w"])], [("y", np.float32, ["n", 3, 1, 1])], {})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert spatial_mean_to_pool(model, report) is model


TOKENS = RNG.standard_normal((2, 6, 8)).astype(np.float32)  # [N, S, C]


@pytest.mark.parametrize("axes", [[1], [-2]])
def test_a_token_mean_becomes_a_pool_of_its_transpose(axes):  # type: ignore[no-untyped-def]
    """x.mean(1) of [N, S, C] (a vision transformer's pooling head) = the global average pool
    of [N, C, S] and a Reshape to [N, C]; the same values."""
    model = _mean_model(axes, 0, shape=(2, 6, 8))
    rewritten = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == [
        "Transpose", "GlobalAveragePool", "Reshape"]
    got, want = (run_model(m, {"x": TOKENS})["y"] for m in (rewritten, model))
    assert got.shape == want.shape == (2, 8)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_token_mean_with_kept_dims_stays():  # type: ignore[no-untyped-def]
    model = _mean_model([1], 1, shape=(2, 6, 8))
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert spatial_mean_to_pool(model, report) is model


def test_a_qdq_token_mean_transposes_the_integers_and_fuses():
    """DQ(u) -> ReduceMean(axis 1) -> Q: the Transpose moves before a new DQ, so the pool
    fuses into a QAveragePool; equal to the model as written."""
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
             node("ReduceMean", ["xd"], ["m"], name="mean", axes=[1], keepdims=0),
             node("QuantizeLinear", ["m", "s2", "z"], ["mq"], name="q1"),
             node("DequantizeLinear", ["mq", "s2", "z"], ["y"], name="dq1")]
    model = build(nodes, [("x", np.float32, [2, 6, 8])], [("y", np.float32, [2, 8])],
                  {"s": np.float32(0.05), "z": np.uint8(128), "s2": np.float32(0.01)})
    rewritten = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == [  # dq0 unread now (removed later)
        "QuantizeLinear", "DequantizeLinear", "Transpose", "DequantizeLinear",
        "GlobalAveragePool", "QuantizeLinear", "Reshape", "DequantizeLinear"]
    np.testing.assert_array_equal(run_model(rewritten, {"x": TOKENS})["y"],
                                  run_model(model, {"x": TOKENS})["y"])
    integer, report = run_passes(model)
    ops = [(n.domain, n.op_type) for n in integer.graph.nodes]
    assert ("systolic", "QAveragePool") in ops and ("", "ReduceMean") not in ops
    assert report.fate("mean").into.startswith("systolic.QAveragePool")
