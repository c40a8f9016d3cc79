"""channel_affine_ptq: a float Mul/Add of a last-axis vector [1, 1, 1, C] over a rank-4
activation [N, H, W, C] (ConvNeXtV2's GRN gamma and beta on its channel-last tensor) is
found like the [C], [1, C], [1, 1, C] ones; a whole-shape or per-channel [1, C, 1, 1] one
is not taken as a last-axis vector."""

import numpy as np
import pytest

from systolic.mapper.passes.channel_affine_ptq import channel_vector_index
from systolic.mapper.passes.graph_tools import constants_of

from .model_builder import build, node

C = 6


def _mul_model(constant_shape, op="Mul"):  # type: ignore[no-untyped-def]
    """x [1, 3, 4, C] -> Relu -> op(constant) -> y."""
    constant = np.linspace(0.5, 1.5, int(np.prod(constant_shape))).astype(np.float32)
    nodes = [node("Relu", ["x"], ["r"]), node(op, ["r", "c"], ["y"], name="affine")]
    return build(nodes, [("x", np.float32, [1, 3, 4, C])], [("y", np.float32, [1, 3, 4, C])],
                 {"c": constant.reshape(constant_shape)})


@pytest.mark.parametrize("op", ["Mul", "Add"])
def test_a_rank_4_last_axis_vector_is_found(op):  # type: ignore[no-untyped-def]
    model = _mul_model((1, 1, 1, C), op)
    affine = next(n for n in model.graph.nodes if n.name == "affine")
    assert channel_vector_index(affine, model.graph, constants_of(model.graph)) == 1


@pytest.mark.parametrize("shape", [(1, 3, 4, C), (1, 1, 4, C)])
def test_other_rank_4_constants_are_not_last_axis_vectors(shape):  # type: ignore[no-untyped-def]
    model = _mul_model(shape)
    affine = next(n for n in model.graph.nodes if n.name == "affine")
    assert channel_vector_index(affine, model.graph, constants_of(model.graph)) is None
