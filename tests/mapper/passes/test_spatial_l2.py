"""spatial_l2: ConvNeXtV2's GRN, Gx = ReduceL2(x, H, W), Nx = Gx / (mean_C(Gx) + eps),
y = gamma * (x * Nx) + beta + x, with the norm as a pool of squares and the channel mean as
a MatMul; the whole block then runs on the accelerator (with divide_computed and the rank-4
last-axis gamma and beta of channel_affine_ptq)."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.spatial_l2 import spatial_l2_to_pool
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(21)
H, W, C = 4, 5, 8


def grn_model(layout="nhwc", mean_output=False):
    """x -> MatMul (nhwc) or Conv 1x1 (nchw) -> GRN -> y; `mean_output` also returns the
    channel mean (then it cannot take the norm's shape)."""
    nhwc = layout == "nhwc"
    axes, channel = ([1, 2], [-1]) if nhwc else ([2, 3], [1])
    vector = (1, 1, 1, C) if nhwc else (1, C, 1, 1)
    constants = {"eps": np.float32(1e-6),
                 "gamma": RNG.uniform(0.5, 1.5, vector).astype(np.float32),
                 "beta": RNG.uniform(-0.2, 0.2, vector).astype(np.float32)}
    if nhwc:
        constants["w"] = RNG.standard_normal((C, C)).astype(np.float32) / 3
        first = node("MatMul", ["x", "w"], ["h"], name="mm")
    else:
        constants["w"] = RNG.standard_normal((C, C, 1, 1)).astype(np.float32) / 3
        first = node("Conv", ["x", "w"], ["h"], name="conv")
    nodes = [first, node("Relu", ["h"], ["r"]),
             node("ReduceL2", ["r"], ["gx"], name="l2", axes=axes, keepdims=1),
             node("ReduceMean", ["gx"], ["m"], name="mean", axes=channel, keepdims=1),
             node("Add", ["m", "eps"], ["den"]), node("Div", ["gx", "den"], ["nx"], name="div"),
             node("Mul", ["r", "nx"], ["rn"], name="scale"),
             node("Mul", ["gamma", "rn"], ["g"], name="gamma"),
             node("Add", ["g", "beta"], ["gb"], name="beta"),
             node("Add", ["gb", "r"], ["y"], name="residual")]
    shape = [1, H, W, C] if nhwc else [1, C, H, W]
    outputs = [("y", np.float32, shape)]
    if mean_output:
        outputs.append(("m", np.float32, [1, 1, 1, 1]))
    return build(nodes, [("x", np.float32, shape)], outputs, constants)


def feed(layout="nhwc"):
    shape = (1, H, W, C) if layout == "nhwc" else (1, C, H, W)
    return {"x": RNG.standard_normal(shape).astype(np.float32)}


def rewrite(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(spatial_l2_to_pool(model, report))


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_the_norm_is_a_pool_of_squares_and_the_mean_a_matmul(layout):
    model = grn_model(layout)
    rewritten = rewrite(model)
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert "ReduceL2" not in ops and "ReduceMean" not in ops
    assert "GlobalAveragePool" in ops and ops.count("MatMul") == (3 if layout == "nhwc" else 2)
    x = feed(layout)
    np.testing.assert_allclose(run_model(rewritten, x)["y"], run_model(model, x)["y"],
                               rtol=1e-5, atol=1e-6)


def test_a_mean_read_elsewhere_keeps_its_shape_and_stays():
    """The channel mean is also a graph output: it cannot become [N, 1, 1, C]."""
    rewritten = rewrite(grn_model(mean_output=True))
    ops = [n.op_type for n in rewritten.graph.nodes]
    assert "ReduceL2" not in ops and "ReduceMean" in ops


def test_a_norm_over_other_axes_or_without_kept_dims_stays():
    nodes = [node("ReduceL2", ["x"], ["a"], axes=[1, 3], keepdims=1),
             node("ReduceL2", ["x"], ["b"], axes=[1, 2], keepdims=0)]
    model = build(nodes, [("x", np.float32, [1, H, W, C])],
                  [("a", np.float32, [1, 1, W, 1]), ("b", np.float32, [1, C])])
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert spatial_l2_to_pool(model, report) is model


def test_the_whole_grn_runs_on_the_accelerator_bit_exact():
    """Float model -> PTQ: no host layer but the input Q and output DQ; the compiled model
    equals the reference layer by layer; cosine against float above 0.99."""
    model = grn_model()
    integer, report = run_passes(model, calibration=[feed() for _ in range(8)])
    ops = [n.op_type for n in integer.graph.nodes]
    assert not {"ReduceL2", "ReduceMean", "Div", "Mul", "Add"} & set(ops)
    assert report.fate("gamma").into.startswith("systolic.QMul")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    x = feed()
    assert check_layers(compiled, x, backend="model") is None
    got, want = run_model(integer, x)["y"].ravel(), run_model(model, x)["y"].ravel()
    assert got @ want / np.linalg.norm(got) / np.linalg.norm(want) > 0.99
