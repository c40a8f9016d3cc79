"""fold_bias_add: a per-channel constant added after a Conv becomes the Conv's bias."""

import numpy as np
import pytest

from systolic.mapper.passes.fold_bias_add import fold_bias_add
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def fold(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(fold_bias_add(model, report)), report


def conv_then(op, constant, *, conv_bias=True, conv_first=True, extra_reader=False, seed=0):
    """x [1, 3, 6, 6] -> Conv (4 channels) -> op with `constant` -> y."""
    r = np.random.default_rng(seed)
    constants = {"w": r.standard_normal((4, 3, 3, 3)).astype(np.float32), "c": constant}
    conv_inputs = ["x", "w"]
    if conv_bias:
        constants["b"] = r.standard_normal(4).astype(np.float32)
        conv_inputs.append("b")
    operands = ["z", "c"] if conv_first else ["c", "z"]
    nodes = [node("Conv", conv_inputs, ["z"], pads=[1, 1, 1, 1], name="conv"),
             node(op, operands, ["y"], name="add")]
    outputs = [("y", np.float32, [1, 4, 6, 6])]
    if extra_reader:
        nodes.append(node("Relu", ["z"], ["r"], name="relu"))
        outputs.append(("r", np.float32, [1, 4, 6, 6]))
    return build(nodes, [("x", np.float32, [1, 3, 6, 6])], outputs, constants)


def same_outputs(a, b, seed=5):
    x = np.random.default_rng(seed).standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(run_model(a, {"x": x})["y"], run_model(b, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


PER_CHANNEL = np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1) - 1.5


@pytest.mark.parametrize(("op", "constant", "conv_bias", "conv_first"), [
    ("Add", PER_CHANNEL, True, True),
    ("Add", PER_CHANNEL, False, False),           # the constant first, no bias before
    ("Add", PER_CHANNEL.reshape(4, 1, 1), True, True),   # rank below the output's
    ("Add", np.float32(0.25).reshape(()), True, True),   # a scalar
    ("Sub", PER_CHANNEL, True, True),
])
def test_per_channel_constants_fold_exactly(op, constant, conv_bias, conv_first):
    model = conv_then(op, constant, conv_bias=conv_bias, conv_first=conv_first)
    folded, report = fold(model)
    assert [n.op_type for n in folded.graph.nodes] == ["Conv"]
    assert report.fate("add").action == "fused"
    same_outputs(folded, model)


@pytest.mark.parametrize(("op", "constant", "kwargs"), [
    ("Add", np.ones((1, 4, 6, 6), np.float32), {}),          # varies along space
    ("Add", np.ones((1, 1, 1, 6), np.float32), {}),          # along the last axis
    ("Sub", PER_CHANNEL, {"conv_first": False}),             # c - conv is not a bias
    ("Add", PER_CHANNEL, {"extra_reader": True}),            # the Conv's output is read again
])
def test_other_adds_stay(op, constant, kwargs):
    model = conv_then(op, constant, **kwargs)
    folded, _ = fold(model)
    assert [n.op_type for n in folded.graph.nodes][:2] == ["Conv", op]
    same_outputs(folded, model)
