"""Einsum MAC counts (macs._einsum_macs): one multiply per combination of the letters' values,
checked against the matmul it equals; forms not counted give 0."""

from systolic.ir import Attrs, DataType, Node, TensorType
from systolic.mapper.macs import node_macs


def _types(**shapes: tuple[int, ...]) -> dict[str, TensorType]:
    return {name: TensorType(DataType.FLOAT, shape) for name, shape in shapes.items()}


def _einsum(equation: str, *inputs: str) -> Node:
    return Node("Einsum", inputs, ("y",), attrs=Attrs({"equation": equation}))


def test_a_batched_product_counts_as_the_matmul_it_is() -> None:
    """bij,bjk->bik is MatMul [b, i, j] x [b, j, k]: b * i * k outputs of j MACs each."""
    types = _types(a=(2, 3, 5), b=(2, 5, 7), y=(2, 3, 7))
    matmul = node_macs(Node("MatMul", ("a", "b"), ("y",)), types.get)
    assert node_macs(_einsum("bij,bjk->bik", "a", "b"), types.get) == matmul == 2 * 3 * 7 * 5


def test_funnels_relative_attention_form() -> None:
    """bind,jnd->bnij: q [b, i, n, d] against position keys [j, n, d]."""
    types = _types(q=(1, 16, 2, 32), k=(24, 2, 32), y=(1, 2, 16, 24))
    assert node_macs(_einsum("bind,jnd->bnij", "q", "k"), types.get) == 1 * 16 * 2 * 32 * 24


def test_forms_not_counted() -> None:
    types = _types(a=(2, 3, 5), b=(2, 5, 7), y=(2, 3, 7))
    assert node_macs(_einsum("...ij,...jk->...ik", "a", "b"), types.get) == 0
    assert node_macs(_einsum("bij->bji", "a"), types.get) == 0
    assert node_macs(_einsum("bij,bjk->bik", "a", "unknown"), types.get) == 0
