"""resize_matrix: the interpolation matrix of each resized axis reproduces the reference
kernel's linear Resize (every coordinate mode, scales and sizes, enlarging and shrinking), and
its int8 form is exact for dyadic weights with columns summing to their scale's reciprocal."""

import numpy as np
import pytest

from systolic.mapper.passes.quant_params import NotFusable
from systolic.mapper.passes.resize_matrix import linear_resize_axes, quantized_weights
from systolic.reference.executor import run_model

from .model_builder import build, node

MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
SHAPE = [1, 2, 5, 6]


def _resize(mode: str, *, scales=None, sizes=None, roi=(), opset=13):  # type: ignore[no-untyped-def]
    constants = {"roi": np.array(roi, np.float32),
                 "scales": np.array(scales if scales is not None else [], np.float32)}
    inputs = ["x", "roi", "scales"]
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    out = list(sizes) if sizes is not None else [int(d * f) for d, f in zip(SHAPE, scales)]
    nodes = [node("Resize", inputs, ["y"], name="resize", mode="linear",
                  coordinate_transformation_mode=mode)]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, out)], constants,
                 opset=opset)


def _apply(x: np.ndarray, axes) -> np.ndarray:  # type: ignore[no-untyped-def]
    for step in axes:
        x = np.moveaxis(np.moveaxis(x, step.axis, -1) @ step.weights, -1, step.axis)
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("resize", [{"scales": [1, 1, 2, 2]}, {"scales": [1, 1, 1.5, 2.5]},
                                    {"scales": [1, 1, 0.6, 0.5]}, {"sizes": [1, 2, 7, 13]}])
def test_the_matrices_reproduce_the_reference(mode, resize):  # type: ignore[no-untyped-def]
    model = _resize(mode, **resize)
    graph = model.graph
    axes = linear_resize_axes(graph.nodes[0], graph, {t.name: t.data for t in graph.initializers})
    assert sorted(a.axis for a in axes) == [2, 3]
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    expected = run_model(model, {"x": x})["y"]
    np.testing.assert_allclose(_apply(x.astype(np.float64), axes), expected, rtol=0, atol=1e-5)


def _order(**resize) -> list[int]:  # type: ignore[no-untyped-def]
    graph = _resize("half_pixel", **resize).graph
    axes = linear_resize_axes(graph.nodes[0], graph, {t.name: t.data for t in graph.initializers})
    return [a.axis for a in axes]


def test_the_order_transposes_the_fewest_elements():
    assert _order(scales=[1, 1, 2, 2]) == [2, 3]  # enlarging: the inner axis on the small map
    assert _order(scales=[1, 1, 0.4, 0.5]) == [3, 2]  # shrinking: the last axis first
    assert _order(scales=[1, 1, 0.4, 2]) == [2, 3]


@pytest.mark.parametrize("mode", MODES)
def test_a_resize_of_no_axis_is_refused_with_its_reason(mode):  # type: ignore[no-untyped-def]
    """Scales of 1 (SegFormer's decode head resizes its first stage to its own size): no
    matrix to apply, so the Resize stays as it is (on the host), not an empty rewrite."""
    graph = _resize(mode, scales=[1, 1, 1, 1]).graph
    constants = {t.name: t.data for t in graph.initializers}
    with pytest.raises(NotFusable, match="resizes no axis"):
        linear_resize_axes(graph.nodes[0], graph, constants)


def test_crop_and_resize_is_not_an_interpolation_matrix():
    graph = _resize("tf_crop_and_resize", scales=[1, 1, 2, 2],
                    roi=[0, 0, 0, 0, 1, 1, 0.5, 0.5]).graph
    constants = {t.name: t.data for t in graph.initializers}
    with pytest.raises(NotFusable, match="tf_crop_and_resize"):
        linear_resize_axes(graph.nodes[0], graph, constants)


@pytest.mark.parametrize("mode", ["half_pixel", "pytorch_half_pixel", "asymmetric"])
def test_dyadic_weights_are_exact_in_int8(mode):  # type: ignore[no-untyped-def]
    graph = _resize(mode, scales=[1, 1, 4, 2]).graph
    for step in linear_resize_axes(graph.nodes[0], graph,
                                   {t.name: t.data for t in graph.initializers}):
        q, scale = quantized_weights(step.weights)
        np.testing.assert_array_equal(q.astype(np.float64) * scale, step.weights)


def test_int8_columns_sum_to_the_reciprocal_of_their_power_of_two_scale():
    graph = _resize("align_corners", scales=[1, 1, 2.5, 1.5]).graph
    for step in linear_resize_axes(graph.nodes[0], graph,
                                   {t.name: t.data for t in graph.initializers}):
        q, scale = quantized_weights(step.weights)
        assert q.dtype == np.int8 and np.abs(q.astype(int)).max() <= 127
        np.testing.assert_array_equal(q.astype(np.int64).sum(axis=0), 1 / scale)
        assert np.all(np.log2(scale) == np.round(np.log2(scale)))
        assert np.abs(q * scale - step.weights).max() <= 2.0 ** -8


def test_an_opset_9_bilinear_upsample_has_its_asymmetric_matrices():
    constants = {"scales": np.array([1, 1, 2, 3], np.float32)}
    nodes = [node("Upsample", ["x", "scales"], ["y"], name="up", mode="linear")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, [1, 2, 10, 18])],
                  constants, opset=9)
    graph = model.graph
    axes = linear_resize_axes(graph.nodes[0], graph, {t.name: t.data for t in graph.initializers})
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_allclose(_apply(x.astype(np.float64), axes), run_model(model, {"x": x})["y"],
                               rtol=0, atol=1e-5)
