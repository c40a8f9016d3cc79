"""channel_affine: chains of per-channel affine ops become one Mul and one Add of [1, C, 1, 1]
constants, or one BatchNormalization that fold_batchnorm folds into the Conv before them."""

import numpy as np
import pytest

from systolic.mapper.passes.channel_affine import channel_affine
from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

SHAPE = [1, 4, 5, 3]
RNG = np.random.default_rng(7)
BN = {"gamma": RNG.uniform(0.5, 2, 4).astype(np.float32),
      "beta": RNG.standard_normal(4).astype(np.float32),
      "mean": RNG.standard_normal(4).astype(np.float32),
      "var": RNG.uniform(0.1, 3, 4).astype(np.float32)}
SCALE = RNG.uniform(0.5, 2, (4, 1, 1)).astype(np.float32)  # Caffe2: [C] Unsqueezed to [C, 1, 1]
SHIFT = RNG.standard_normal((4, 1, 1)).astype(np.float32)


def _bn(x, y, name="bn"):  # type: ignore[no-untyped-def]
    return node("BatchNormalization", [x, "gamma", "beta", "mean", "var"], [y], name=name)


def _model(nodes, constants, first="Relu"):  # type: ignore[no-untyped-def]
    """x -> `first` -> `nodes` (reading "a", writing "y")."""
    head = ([node("Conv", ["x", "w"], ["a"], name="conv", pads=[1, 1, 1, 1])] if first == "Conv"
            else [node("Relu", ["x"], ["a"], name="head")])
    constants = {**constants, "w": RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)}
    return build(head + nodes, [("x", np.float32, SHAPE)], [("y", np.float32, SHAPE)],
                 constants)


def _rewrite(model, *passes):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    for rewrite in passes:
        model = finalize(rewrite(model, report))
    return model, report


def _same_function(a, b):  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal(SHAPE) * 3).astype(np.float32)
    np.testing.assert_allclose(run_model(a, {"x": x})["y"], run_model(b, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


def _ops(model):  # type: ignore[no-untyped-def]
    return [n.op_type for n in model.graph.nodes]


def test_pre_activation_batch_norm_becomes_mul_and_add():
    """DenseNet's BN -> Mul(scale) -> Add(shift) -> Relu after a non-convolution."""
    model = _model([_bn("a", "b"), node("Mul", ["b", "s"], ["m"], name="mul"),
                    node("Add", ["m", "t"], ["r"], name="add"),
                    node("Relu", ["r"], ["y"], name="relu")], {**BN, "s": SCALE, "t": SHIFT})
    rewritten, report = _rewrite(model, channel_affine)
    assert _ops(rewritten) == ["Relu", "Mul", "Add", "Relu"]
    mul, add = rewritten.graph.nodes[1:3]
    assert (mul.name, add.name) == ("bn", "add")  # the chain's first and last names
    constants = constants_of(rewritten.graph)
    assert constants[mul.inputs[1]].shape == constants[add.inputs[1]].shape == (1, 4, 1, 1)
    assert report.fate("mul").action == "fused"
    _same_function(rewritten, model)


def test_a_chain_after_a_conv_folds_into_it():
    model = _model([_bn("a", "b"), node("Mul", ["b", "s"], ["m"], name="mul"),
                    node("Add", ["t", "m"], ["y"], name="add")],
                   {**BN, "s": SCALE, "t": SHIFT}, first="Conv")
    rewritten, report = _rewrite(model, channel_affine, fold_batchnorm)
    assert _ops(rewritten) == ["Conv"]
    assert all(report.fate(n).into == "Conv 'conv' (float)" for n in ("bn", "mul", "add"))
    _same_function(rewritten, model)


def test_a_lone_batch_norm_after_a_conv_is_left_to_fold_batchnorm():
    model = _model([_bn("a", "y")], BN, first="Conv")
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert channel_affine(model, report) is model


@pytest.mark.parametrize(("op", "operands", "constant"), [
    ("Sub", ["a", "c"], SHIFT), ("Sub", ["c", "a"], SHIFT), ("Div", ["a", "c"], SCALE),
    ("Mul", ["c", "a"], SCALE.reshape(1, 4, 1, 1)),
])
def test_sub_div_and_a_constant_first(op, operands, constant):  # type: ignore[no-untyped-def]
    model = _model([node(op, operands, ["d"], name="op"), _bn("d", "y")],
                   {**BN, "c": constant})
    rewritten, _ = _rewrite(model, channel_affine)
    assert _ops(rewritten) == ["Relu", "Mul", "Add"]
    _same_function(rewritten, model)


def test_neutral_steps_are_left_out():
    """A BN with gamma = sqrt(var + eps) and mean 0 only shifts: Add alone."""
    bn = {**BN, "mean": np.zeros(4, np.float32),
          "gamma": np.ones(4, np.float32), "var": np.full(4, 1 - 1e-5, np.float32)}
    model = _model([_bn("a", "y")], bn)
    rewritten, _ = _rewrite(model, channel_affine)
    assert _ops(rewritten) == ["Relu", "Add"]
    _same_function(rewritten, model)


def test_scalar_chains_and_other_ranks_are_left_alone():
    scalars = _model([node("Mul", ["a", "c"], ["m"], name="mul"),
                      node("Add", ["m", "c"], ["y"], name="add")], {"c": np.float32(0.5)})
    report = PassReport()
    assert channel_affine(scalars, report) is scalars
    rank5 = build([node("Relu", ["x"], ["a"]), _bn("a", "y")],
                  [("x", np.float32, [1, 4, 2, 3, 2])], [("y", np.float32, [1, 4, 2, 3, 2])], BN)
    assert channel_affine(rank5, report) is rank5


def test_a_rank_3_batch_norm_becomes_mul_and_add_of_per_channel_vectors():
    """[N, C, T]: a BatchNorm1d after an Add of Conv1d outputs (a 1-D U-Net's)."""
    shape = [1, 4, 6]
    model = build([node("Relu", ["x"], ["a"]), _bn("a", "y")],
                  [("x", np.float32, shape)], [("y", np.float32, shape)], BN)
    rewritten, _ = _rewrite(model, channel_affine)
    assert _ops(rewritten) == ["Relu", "Mul", "Add"]
    constants = constants_of(rewritten.graph)
    assert all(constants[n.inputs[1]].shape == (1, 4, 1) for n in rewritten.graph.nodes[1:])
    x = (RNG.standard_normal(shape) * 3).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"], run_model(model, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)
    fused, _ = run_passes(model)
    assert {"QMul", "QAdd"} <= set(_ops(fused)) and "BatchNormalization" not in _ops(fused)


def test_a_value_with_two_readers_ends_the_chain():
    model = build([node("Relu", ["x"], ["a"], name="head"), _bn("a", "b"),
                   node("Mul", ["b", "s"], ["y"], name="mul"),
                   node("Relu", ["b"], ["z"], name="side")],
                  [("x", np.float32, SHAPE)],
                  [("y", np.float32, SHAPE), ("z", np.float32, SHAPE)],
                  {**BN, "s": SCALE})
    rewritten, _ = _rewrite(model, channel_affine)
    assert _ops(rewritten) == ["Relu", "Mul", "Add", "Mul", "Relu"]
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    for name in ("y", "z"):
        np.testing.assert_allclose(run_model(rewritten, {"x": x})[name],
                                   run_model(model, {"x": x})[name], rtol=1e-5, atol=1e-5)


def test_a_chain_after_a_gemm_folds_into_it():
    """[N, F] features: the per-channel axis 1 is the Gemm's output columns."""
    r = np.random.default_rng(2)
    constants = {"w": r.standard_normal((5, 3)).astype(np.float32),
                 "s": r.uniform(0.5, 2, (1, 3)).astype(np.float32),
                 "t": r.standard_normal(3).astype(np.float32)}
    model = build([node("Gemm", ["x", "w"], ["a"], name="gemm"),
                   node("Mul", ["a", "s"], ["m"], name="mul"),
                   node("Sub", ["m", "t"], ["y"], name="sub")],
                  [("x", np.float32, [2, 5])], [("y", np.float32, [2, 3])], constants)
    rewritten, _ = _rewrite(model, channel_affine, fold_batchnorm)
    assert _ops(rewritten) == ["Gemm"]
    x = r.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_a_conv_output_with_another_reader_keeps_its_conv():
    """fold_batchnorm would refuse (the Conv's output is read twice): Mul and Add instead."""
    model = build([node("Conv", ["x", "w"], ["a"], name="conv", pads=[1, 1, 1, 1]),
                   _bn("a", "y"), node("Relu", ["a"], ["z"], name="side")],
                  [("x", np.float32, SHAPE)],
                  [("y", np.float32, SHAPE), ("z", np.float32, SHAPE)],
                  {**BN, "w": RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)})
    rewritten, _ = _rewrite(model, channel_affine, fold_batchnorm)
    assert _ops(rewritten) == ["Conv", "Mul", "Add", "Relu"]
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_one_channel_is_left_alone():
    """[1, 1, H, W]: QMul/QAdd take no B of one element (a table would), so no rewrite."""
    one = {k: v[:1] for k, v in BN.items()}
    model = build([node("Relu", ["x"], ["a"]), _bn("a", "y")],
                  [("x", np.float32, [1, 1, 4, 4])], [("y", np.float32, [1, 1, 4, 4])], one)
    assert channel_affine(model, PassReport()) is model
