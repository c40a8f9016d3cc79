"""layout_sets: the values an element-wise op connects are stored alike; channel-last when a
convolution touches them, row-major when a matrix op or a last-axis B needs it, channel-last
for a per-channel B otherwise."""

import numpy as np

from systolic.ir import DataType, Graph, Tensor
from systolic.mapper.binding import bind_graph
from systolic.mapper.lowering.layout_sets import LayoutSets, layout_sets
from systolic.mapper.shape_inference import infer_shapes

from .graphs import OPSETS, graph, node, qconv, qmatmul

U8, I8 = DataType.UINT8, DataType.INT8


def _sets(g: Graph) -> LayoutSets:
    bound, ops = bind_graph(g, OPSETS)
    return layout_sets(infer_shapes(bound, ops, max_tensor_bytes=1 << 30))


def _pair(op: str, a: str, b: str, y: str):  # type: ignore[no-untyped-def]
    return node(op, [a, b], y, a_zero_point=0, b_zero_point=0, multiplier_a=1 << 30,
                multiplier_b=1 << 30, multiplier=1 << 30, shift=0, y_zero_point=0,
                y_type=int(I8))  # fmt: skip


def test_a_mask_added_to_an_attention_product_is_row_major_like_it():
    """[1, H, S, S] scores (a QMatMul's Y) plus a mask input of that shape: both row-major."""
    product, constants = qmatmul("x", "scores", 3, 4, seed=1)
    g = graph({"x": (I8, (1, 2, 4, 3)), "mask": (I8, (1, 2, 4, 4))}, {"y": I8},
              [product, _pair("QAdd", "scores", "mask", "y")], constants)  # fmt: skip
    sets = _sets(g)
    assert {"scores", "mask", "y"} <= sets.matrix
    assert not {"scores", "mask", "y"} & sets.spatial


def test_the_group_reaches_through_chains_of_element_wise_ops():
    product, constants = qmatmul("x", "scores", 3, 4, seed=1)
    nodes = [product, _pair("QAdd", "bias", "mask", "sum"), _pair("QAdd", "scores", "sum", "y")]
    g = graph({"x": (I8, (1, 2, 4, 3)), "bias": (I8, (1, 2, 4, 4)), "mask": (I8, (1, 2, 4, 4))},
              {"y": I8}, nodes, constants)  # fmt: skip
    assert {"bias", "mask", "sum", "y"} <= _sets(g).matrix


def test_a_last_axis_b_makes_a_rank_4_operand_row_major():
    g = graph({"a": (I8, (1, 4, 4, 6)), "gamma": (I8, (6,))}, {"y": I8},
              [_pair("QMul", "a", "gamma", "y")])  # fmt: skip
    assert {"a", "y"} <= _sets(g).matrix


def test_a_per_channel_b_makes_a_rank_3_operand_channel_last():
    g = graph({"a": (I8, (1, 5, 7)), "scale": (I8, (1, 5, 1))}, {"y": I8},
              [_pair("QMul", "a", "scale", "y")])  # fmt: skip
    sets = _sets(g)
    assert {"a", "y"} <= sets.spatial
    assert not {"a", "y"} & sets.matrix


def test_a_per_channel_b_leaves_a_matrix_product_row_major():
    """A rank-3 QMatMul result keeps its rows contiguous: the per-channel product of it is
    not made channel-last (it runs on the host rather than the product)."""
    product, constants = qmatmul("x", "h", 3, 7, seed=2)
    g = graph({"x": (I8, (1, 5, 3)), "scale": (I8, (1, 5, 1))}, {"y": I8},
              [product, _pair("QMul", "h", "scale", "y")], constants)  # fmt: skip
    sets = _sets(g)
    assert not {"h", "y"} & sets.spatial


def test_a_convolution_wins_over_a_matrix_op_in_one_group():
    conv, conv_constants = qconv("x", "c", 2, 2, seed=3, y_type=I8)
    product, constants = qmatmul("z", "m", 3, 4, seed=4)
    g = graph({"x": (U8, (1, 2, 2, 4)), "z": (I8, (1, 2, 2, 3))}, {"y": I8},
              [conv, product, _pair("QAdd", "c", "m", "y")], [*conv_constants, *constants])
    sets = _sets(g)
    assert {"c", "m", "y"} <= sets.spatial
    assert not sets.spatial & sets.matrix


def test_row_major_is_carried_through_transposes_to_the_next_group():
    product, constants = qmatmul("x", "m", 3, 4, seed=5)
    transpose = node("Transpose", ["m"], "t", domain="", perm=(0, 2, 1, 3))
    g = graph({"x": (I8, (1, 2, 2, 3)), "b": (I8, (1, 2, 2, 4))}, {"y": I8},
              [product, transpose, _pair("QAdd", "t", "b", "y")], constants)  # fmt: skip
    assert {"m", "t", "b", "y"} <= _sets(g).matrix


def test_a_shared_vector_b_does_not_tie_unrelated_groups():
    """One per-channel constant scales a convolution's map and a matrix product's rows: the
    product stays row-major, the map channel-last."""
    conv, conv_constants = qconv("x", "c", 2, 4, seed=6, y_type=I8)
    product, constants = qmatmul("z", "m", 3, 5, seed=7)
    scale = Tensor("s", I8, np.ones((1, 4, 1, 1), np.int8))
    g = graph({"x": (U8, (1, 2, 3, 3)), "z": (I8, (1, 4, 2, 3))}, {"y1": I8, "y2": I8},
              [conv, product, _pair("QMul", "c", "s", "y1"), _pair("QMul", "m", "s", "y2")],
              [*conv_constants, *constants, scale])  # fmt: skip
    sets = _sets(g)
    assert {"c", "y1"} <= sets.spatial
    assert "m" in sets.matrix and "m" not in sets.spatial
