"""fuse_gather: DQ -> Gather(constant indices) -> Q of the same parameters becomes the Gather
of the integers, with the same result; other parameters or computed indices stay."""

import numpy as np
import pytest

from systolic.mapper.passes.fuse_gather import fuse_gather
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

SHAPE = [4, 1, 6]
STEP = np.array(2, np.int64)


def dq_gather_q(q_scale=0.05, q_zero=120, indices=STEP):
    """x (uint8) -> DQ -> Gather(axis 0) -> Q -> y (uint8); `indices` None: a graph input."""
    constants = {"s": np.float32(0.05), "z": np.uint8(120), "qs": np.float32(q_scale),
                 "qz": np.uint8(q_zero)}
    inputs = [("x", np.uint8, SHAPE)]
    if indices is None:
        inputs.append(("i", np.int64, []))
    else:
        constants["i"] = indices
    nodes = [node("DequantizeLinear", ["x", "s", "z"], ["d"], name="dq"),
             node("Gather", ["d", "i"], ["g"], axis=0, name="gather"),
             node("QuantizeLinear", ["g", "qs", "qz"], ["y"], name="q")]
    out_shape = [*np.shape(indices if indices is not None else 0), 1, 6]
    return build(nodes, inputs, [("y", np.uint8, out_shape)], constants)


def fused(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(fuse_gather(model, report)), report


@pytest.mark.parametrize("indices", [STEP, np.array([3, 0], np.int64)])
def test_gather_of_the_integers(indices):
    model = dq_gather_q(indices=indices)
    result, report = fused(model)
    gathers = [n for n in result.graph.nodes if n.op_type == "Gather"]
    assert [n.op_type for n in result.graph.nodes] == ["DequantizeLinear", "Gather"]
    assert gathers[0].inputs[0] == "x" and gathers[0].outputs == ("y",)
    assert report.fate("q").into == "gather"
    x = np.random.default_rng(0).integers(0, 256, SHAPE, dtype=np.uint8)
    np.testing.assert_array_equal(run_model(result, {"x": x})["y"],
                                  run_model(model, {"x": x})["y"])


@pytest.mark.parametrize("model", [dq_gather_q(q_scale=0.06), dq_gather_q(q_zero=121),
                                   dq_gather_q(indices=None)],
                         ids=["scale", "zero_point", "computed_indices"])
def test_other_parameters_or_computed_indices_stay(model):
    result, _ = fused(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "DequantizeLinear", "Gather", "QuantizeLinear"]
