"""Lower `systolic.QMatMulInt` (the MatMulInteger of dynamic quantization) to the array with
raw int32 results.

A computed B (a product of two computed tensors with their zero points corrected on the host,
`fuse_integer_matmul`) is read where it lies, batched as numpy matmul (`lower_raw_product`).

Y = wrap32(sum_k A_s8 * B + Bias): A's leading axes are rows (as for a QMatMul with a constant
2-D B: `row_blocks`), its K elements walked by the element pattern, uint8 A flipped to int8 by
the LOAD (A - 128, the op's implied zero point); B the constant int8 K x N matrix; Bias
(int32, optional) goes into the params rows. The STOREs have `raw`: each row of Y is N int32
elements (4 bytes, little-endian), so Y's last axis must be contiguous int32; the params
rows' multiplier and shift are unused (0). The schedules are the QMatMul's (`lower_jobs`).
"""

from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.program import TensorPlacement
from systolic.isa.store import RAW_BYTES
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob
from systolic.mapper.lowering.jobs import lower_jobs
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode
from systolic.mapper.lowering.matmul import lower_raw_product, row_blocks
from systolic.mapper.lowering.node_attrs import constant_input, input_side
from systolic.mapper.lowering.table import Activation

__all__ = ["lower_qmatmulint"]


def lower_qmatmulint(
    node: Node,
    a: TensorPlacement,
    y: TensorPlacement,
    config: ArrayConfig,
    alloc: ConstantAllocator,
    *,
    constants: Mapping[str, np.ndarray],
    b: TensorPlacement | None = None,
    activation: Activation | None = None,
) -> LayerCode:
    """Return the code computing QMatMulInt `node` from A at `a` into int32 Y at `y`
    (`constants` holds B and the optional Bias; `b` is a computed B's placement, read where
    it lies; `activation` is not supported)."""
    label = node.label
    if activation is not None:
        raise UnsupportedError(f"layer {label!r}: QMatMulInt has no table")
    if b is not None:
        return lower_raw_product(node, a, b, y, config, alloc)
    weights = constant_input(constants, node.inputs[1], node).astype(np.int64)
    if weights.ndim != 2 or not a.shape or a.shape[-1] != weights.shape[0]:
        raise UnsupportedError(f"layer {label!r}: A {list(a.shape)} must be [..., K] and B "
                               f"{list(weights.shape)} a constant [K, N] matrix")  # fmt: skip
    k, n = weights.shape
    if y.shape != (*a.shape[:-1], n) or y.dtype != DataType.INT32:
        raise ModelError(f"node {label!r}: Y is placed as {y.dtype.name} {list(y.shape)}, the "
                         f"product gives INT32 {[*a.shape[:-1], n]}")  # fmt: skip
    if y.strides[-1] != RAW_BYTES and n > 1:
        raise UnsupportedError(f"layer {label!r}: Y ({y.name!r}) must have contiguous int32 "
                               f"rows, not a last stride of {y.strides[-1]} bytes")  # fmt: skip
    zero, flip_in = input_side(a, 128 if a.dtype == DataType.UINT8 else 0, node, config)
    assert zero == 0
    if len(node.inputs) > 2 and node.inputs[2]:
        bias = constant_input(constants, node.inputs[2], node).astype(np.int64).reshape(-1)
    else:
        bias = np.zeros(n, np.int64)
    walk = (ElementWalk(k, 1, 0, 0) if a.strides[-1] == config.operand_bytes or k == 1
            else ElementWalk(1, k, a.strides[-1], 0))  # fmt: skip
    zeros = np.zeros(n, np.int64)
    job = GemmJob(
        label=label,
        a_rows=row_blocks(a.address, a.shape[:-1], a.strides[:-1]),
        y_rows=row_blocks(y.address, y.shape[:-1], y.strides[:-1]),
        walk=walk, weights=weights, bias=bias, multiplier=zeros, shift=zeros,
        zero_point=0, lo=0, hi=0, flip_in=flip_in, flip_out=False, raw=True,
    )  # fmt: skip
    return lower_jobs([job], job.rows * k * n, config, alloc)
