"""Lower `systolic.QMatMul` (Gemm, MatMul, batched A with any leading dimensions).

A's leading dimensions are flattened into rows: the last two leading axes form a LOAD/STORE
row pattern (n0 = the last one's size) and any earlier ones give one row block per index.
K is walked by the element pattern: contiguous (run = K) when K's stride is `operand_bytes`,
else one element per step (n_mid = K, stride_mid = K's stride). Y's last axis must be
contiguous (STORE writes rows of contiguous elements).
"""

import itertools
from collections.abc import Mapping

import numpy as np
from systolic.mapper.ir import Node
from systolic.sim.isa.program import TensorPlacement

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError

from .gemm import ElementWalk, GemmJob, RowBlock
from .jobs import lower_jobs
from .layer_code import ConstantAllocator, LayerCode
from .node_attrs import constant_input, input_side, int_attr, output_side, per_channel
from .params_rows import fold_zero_point

__all__ = ["lower_qmatmul", "row_blocks"]


def row_blocks(
    address: int, lead_shape: tuple[int, ...], lead_strides: tuple[int, ...]
) -> tuple[RowBlock, ...]:
    """Return the row blocks of a tensor's leading axes flattened in row-major order."""
    if not lead_shape:
        return (RowBlock(address, 1, 1, 0, 0),)
    if len(lead_shape) == 1:
        return (RowBlock(address, lead_shape[0], lead_shape[0], lead_strides[0], 0),)
    outer_shape, outer_strides = lead_shape[:-2], lead_strides[:-2]
    count = lead_shape[-2] * lead_shape[-1]
    blocks = []
    for index in itertools.product(*(range(size) for size in outer_shape)):
        base = address + sum(i * s for i, s in zip(index, outer_strides, strict=True))
        blocks.append(RowBlock(base, count, lead_shape[-1], lead_strides[-1], lead_strides[-2]))
    return tuple(blocks)


def lower_qmatmul(
    node: Node,
    a: TensorPlacement,
    y: TensorPlacement,
    config: ArrayConfig,
    alloc: ConstantAllocator,
    *,
    constants: Mapping[str, np.ndarray],
) -> LayerCode:
    """Return the code computing QMatMul `node` from A at `a` into Y at `y`.

    `constants` maps initializer names to arrays (B [K, N] and the optional Bias [N]).
    """
    label = node.label
    b = constant_input(constants, node.inputs[1], node).astype(np.int64)
    if b.ndim != 2 or not a.shape or a.shape[-1] != b.shape[0]:
        raise ModelError(f"node {label!r}: A {list(a.shape)} must be [..., K] and B "
                         f"{list(b.shape)} [K, N]")  # fmt: skip
    k, n = b.shape
    if y.shape != (*a.shape[:-1], n):
        raise ModelError(f"node {label!r}: Y is placed as {list(y.shape)}, the product gives "
                         f"{[*a.shape[:-1], n]}")  # fmt: skip
    ob = config.operand_bytes
    if y.strides[-1] != ob and n > 1:
        raise UnsupportedError(
            f"layer {label!r}: Y ({y.name!r}) must have contiguous rows (last stride {ob} "
            f"bytes), not {y.strides[-1]}"
        )
    a_zp, flip_in = input_side(a, int_attr(node, "a_zero_point", 0), node, config)
    out = output_side(node, y, config)
    if len(node.inputs) > 2 and node.inputs[2]:
        bias = constant_input(constants, node.inputs[2], node).astype(np.int64).reshape(-1)
    else:
        bias = np.zeros(n, np.int64)
    k_stride = a.strides[-1]
    walk = ElementWalk(k, 1, 0, 0) if k_stride == ob or k == 1 else ElementWalk(1, k, k_stride, 0)
    job = GemmJob(
        label=label,
        a_rows=row_blocks(a.address, a.shape[:-1], a.strides[:-1]),
        y_rows=row_blocks(y.address, y.shape[:-1], y.strides[:-1]),
        walk=walk,
        weights=b,
        bias=fold_zero_point(b, bias, a_zp, label),
        multiplier=per_channel(node, "multiplier", n),
        shift=per_channel(node, "shift", n),
        zero_point=out.zero_point,
        lo=out.lo,
        hi=out.hi,
        flip_in=flip_in,
        flip_out=out.flip,
    )
    rows = job.rows
    return lower_jobs([job], rows * k * n, config, alloc)
