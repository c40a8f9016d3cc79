"""Lower `systolic.QMatMul` (Gemm, MatMul, batched A with any leading dimensions, batched or
computed B).

With a constant 2-D B, A's leading dimensions are flattened into rows: the last two leading
axes form a LOAD/STORE row pattern (n0 = the last one's size) and any earlier ones give one
row block per index. With a batched B ([..., K, N], a constant of rank >= 3 or a computed
tensor), the batch axes of A and B broadcast (numpy matmul): one `GemmJob` per batch entry
of B, whose rows are the M rows of every A batch entry that reads it (one row block each)
and whose B is that entry's K x N matrix (a constant, or `ComputedWeights` read where the
computed B lies, any strides: a Transpose aliased with permuted strides works). A 1-D A is
one row. K is walked by the element pattern: contiguous (run = K) when K's stride is
`operand_bytes`, else one element per step (n_mid = K, stride_mid = K's stride). Y's last
axis must be contiguous (STORE writes rows of contiguous elements).

A computed B cannot get A's zero point folded into a constant bias (Σ_k B[k, n] is not
known): with zero points 0 in the int8 domain (int8 zp 0, uint8 zp 128, the LOADs' flip_sign)
the product runs as it is; otherwise the reduction is extended so that the array computes
the zero points' terms too (`asymmetric_product`: A' = [A, A, c_α], B' = [B; c_β; B]).
"""

import itertools
import math
from collections.abc import Mapping
from typing import TypedDict

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.program import TensorPlacement
from systolic.isa.store import RAW_BYTES
from systolic.mapper.lowering.asymmetric_product import AsymmetricProduct, prepare
from systolic.mapper.lowering.gemm import ComputedWeights, ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.jobs import lower_jobs
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode
from systolic.mapper.lowering.node_attrs import (
    OutputSide,
    constant_input,
    input_side,
    int_attr,
    ints_attr,
    output_side,
    per_channel,
)
from systolic.mapper.lowering.params_rows import fold_zero_point
from systolic.mapper.lowering.table import Activation
from systolic.reference.ops.op_systolic_qmatmul import matmul_shape

__all__ = ["batch_entries", "computed_entry", "lower_qmatmul", "lower_raw_product", "row_blocks"]


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
    b: TensorPlacement | None = None,
    activation: Activation | None = None,
) -> LayerCode:
    """Return the code computing QMatMul `node` from A at `a` into Y at `y`.

    `constants` maps initializer names to arrays (B and the optional Bias [N]); `b` is B's
    placement when B is computed (not in `constants`). With `activation` (a fused QTable),
    the STOREs write Y through its table (`y` then is the QTable's output placement, with
    the QMatMul's output type).
    """
    if node.inputs[1] not in constants or np.ndim(constants[node.inputs[1]]) != 2:
        return _lower_batched(node, a, y, config, alloc, constants, b, activation)
    label = node.label
    b_matrix = _constant_b(node, constants)
    if not a.shape or a.shape[-1] != b_matrix.shape[0]:
        raise ModelError(f"node {label!r}: A {list(a.shape)} must be [..., K] and B "
                         f"{list(b_matrix.shape)} [K, N]")  # fmt: skip
    k, n = b_matrix.shape
    if y.shape != (*a.shape[:-1], n):
        raise ModelError(f"node {label!r}: Y is placed as {list(y.shape)}, the product gives "
                         f"{[*a.shape[:-1], n]}")  # fmt: skip
    a_zp, flip_in, out, bias = _sides(node, a, y, n, config, constants)
    job = GemmJob(
        label=label,
        a_rows=row_blocks(a.address, a.shape[:-1], a.strides[:-1]),
        y_rows=row_blocks(y.address, y.shape[:-1], y.strides[:-1]),
        walk=_walk(k, a.strides[-1], config),
        weights=b_matrix,
        bias=fold_zero_point(b_matrix, bias, a_zp, label),
        **_stage(node, n, out, flip_in),
    )
    rows = job.rows
    return lower_jobs([job], rows * k * n, config, alloc, activation)


def _lower_batched(
    node: Node,
    a: TensorPlacement,
    y: TensorPlacement,
    config: ArrayConfig,
    alloc: ConstantAllocator,
    constants: Mapping[str, np.ndarray],
    b: TensorPlacement | None,
    activation: Activation | None,
) -> LayerCode:
    """Lower a QMatMul whose B is batched or computed (module docstring)."""
    label = node.label
    constant = node.inputs[1] in constants
    if constant:
        b_values = _constant_b(node, constants)
        b_shape = tuple(int(d) for d in b_values.shape)
    elif b is None:
        raise UnsupportedError(f"layer {label!r}: B ({node.inputs[1]!r}) is neither a constant "
                               "nor placed in external memory")  # fmt: skip
    else:
        b_shape = b.shape
    shape = matmul_shape(a.shape, b_shape)
    if shape is None or len(b_shape) < 2:
        raise ModelError(f"node {label!r}: A {list(a.shape)} must be [..., K] and B "
                         f"{list(b_shape)} [..., K, N] with broadcastable batch axes")  # fmt: skip
    if y.shape != shape:
        raise ModelError(f"node {label!r}: Y is placed as {list(y.shape)}, the product gives "
                         f"{list(shape)}")  # fmt: skip
    k, n = b_shape[-2:]
    a_zp, flip_in, out, bias = _sides(node, a, y, n, config, constants)
    stage = _stage(node, n, out, flip_in)
    b_flip = False
    product: AsymmetricProduct | None = None
    if not constant:
        assert b is not None
        b_zp, b_flip = input_side(b, int_attr(node, "b_zero_point", 0), node, config)
        if b_zp or a_zp:
            product = prepare(label, a, flip_in, a_zp, b, b_flip, b_zp, config, alloc)
            a = product.a
    walk = product.walk if product else _walk(k, a.strides[-1], config)
    entries = batch_entries(a, y, b_shape)
    jobs = []
    for b_index, (a_rows, y_rows) in entries.items():
        weights: np.ndarray | ComputedWeights
        if constant:
            matrix = b_values[b_index]
            weights, job_bias = matrix, fold_zero_point(matrix, bias, a_zp, label)
        elif product is not None:
            weights, job_bias = product.b_prime.weights(b_index), product.biased(bias, label)
        else:
            assert b is not None
            weights, job_bias = computed_entry(b, b_index, b_flip), bias
        jobs.append(
            GemmJob(
                label=label,
                a_rows=tuple(a_rows),
                y_rows=tuple(y_rows),
                walk=walk,
                weights=weights,
                bias=job_bias,
                **stage,
            )
        )
    macs = math.prod(shape) * k
    code = lower_jobs(jobs, macs, config, alloc, activation)
    if product is None:
        return code
    return LayerCode(product.code + code.instructions, product.segments + code.segments,
                     code.stats)  # fmt: skip


def lower_raw_product(
    node: Node, a: TensorPlacement, b: TensorPlacement, y: TensorPlacement,
    config: ArrayConfig, alloc: ConstantAllocator,
) -> LayerCode:  # fmt: skip
    """Return the code of `wrap32(Σ_k A_s8·B_s8)` into int32 Y (STORE raw) for a computed B
    (QMatMulInt with the implied zero points: 128 for uint8, 0 for int8), batched as numpy
    matmul; the bias is 0."""
    label = node.label
    shape = matmul_shape(a.shape, b.shape)
    if shape is None or len(b.shape) < 2 or y.shape != shape or y.dtype != DataType.INT32:
        raise ModelError(f"node {label!r}: A {list(a.shape)}, B {list(b.shape)} and int32 Y "
                         f"{list(y.shape)} do not form a batched product")  # fmt: skip
    k, n = b.shape[-2:]
    if y.strides[-1] != RAW_BYTES and n > 1:
        raise UnsupportedError(f"layer {label!r}: Y ({y.name!r}) must have contiguous int32 "
                               f"rows, not a last stride of {y.strides[-1]} bytes")  # fmt: skip
    zero_a, flip_a = input_side(a, 128 if a.dtype == DataType.UINT8 else 0, node, config)
    zero_b, flip_b = input_side(b, 128 if b.dtype == DataType.UINT8 else 0, node, config)
    assert zero_a == zero_b == 0
    zeros = np.zeros(n, np.int64)
    jobs = [GemmJob(label=label, a_rows=tuple(a_rows), y_rows=tuple(y_rows),
                    walk=_walk(k, a.strides[-1], config), weights=computed_entry(b, index, flip_b),
                    bias=zeros, multiplier=zeros, shift=zeros, zero_point=0, lo=0, hi=0,
                    flip_in=flip_a, flip_out=False, raw=True)
            for index, (a_rows, y_rows) in batch_entries(a, y, b.shape).items()]  # fmt: skip
    return lower_jobs(jobs, math.prod(shape) * k, config, alloc)


Entries = dict[tuple[int, ...], tuple[list[RowBlock], list[RowBlock]]]
"""Per batch entry of B (its index): the row blocks of A and of Y that read it."""


def batch_entries(a: TensorPlacement, y: TensorPlacement, b_shape: tuple[int, ...]) -> Entries:
    """Return the rows of A and Y per batch entry of B for a batched product (numpy matmul
    broadcasting; A as [*a_batch, M, K], Y as [*batch, M, N], a 1-D A one row)."""
    a_shape, a_strides = a.shape, a.strides
    y_shape, y_strides = y.shape, y.strides
    if len(a_shape) == 1:
        a_shape, a_strides = (1, *a_shape), (0, *a_strides)
        y_shape, y_strides = (*y_shape[:-1], 1, y_shape[-1]), (*y_strides[:-1], 0, y_strides[-1])
    m = a_shape[-2]
    entries: Entries = {}
    for index in itertools.product(*(range(size) for size in y_shape[:-2])):
        a_base = a.address + _offset(index, a_shape[:-2], a_strides[:-2])
        y_base = y.address + _offset(index, y_shape[:-2], y_strides[:-2])
        a_rows, y_rows = entries.setdefault(_broadcast_index(index, b_shape[:-2]), ([], []))
        a_rows.append(RowBlock(a_base, m, m, a_strides[-2], 0))
        y_rows.append(RowBlock(y_base, m, m, y_strides[-2], 0))
    return entries


def computed_entry(b: TensorPlacement, index: tuple[int, ...], flip: bool) -> ComputedWeights:
    """Return batch entry `index` of a computed B, read where it lies."""
    k, n = b.shape[-2:]
    return ComputedWeights(b.address + _offset(index, b.shape[:-2], b.strides[:-2]), k, n,
                           b.strides[-2], b.strides[-1], flip)  # fmt: skip


def _constant_b(node: Node, constants: Mapping[str, np.ndarray]) -> np.ndarray:
    """Return a constant B minus its b_zero_point (0 as the passes write it): B itself when
    that is 0 and B is int8 (no int64 copies of a large fc layer's weights; the weight
    checks and images take any integer type), else as int64."""
    b = constant_input(constants, node.inputs[1], node)
    zero_point = int_attr(node, "b_zero_point", 0)
    if zero_point == 0 and b.dtype == np.int8:
        return b
    return b.astype(np.int64) - zero_point


def _sides(
    node: Node, a: TensorPlacement, y: TensorPlacement, n: int, config: ArrayConfig,
    constants: Mapping[str, np.ndarray],
) -> tuple[int, bool, OutputSide, np.ndarray]:  # fmt: skip
    """Return A's zero point (int8 domain) and flip_sign, Y's output stage and the bias;
    raise unless Y's rows are contiguous."""
    ob = config.operand_bytes
    if y.strides[-1] != ob and n > 1:
        raise UnsupportedError(
            f"layer {node.label!r}: Y ({y.name!r}) must have contiguous rows (last stride {ob} "
            f"bytes), not {y.strides[-1]}"
        )
    a_zp, flip_in = input_side(a, int_attr(node, "a_zero_point", 0), node, config)
    out = output_side(node, y, config)
    if len(node.inputs) > 2 and node.inputs[2]:
        bias = constant_input(constants, node.inputs[2], node).astype(np.int64).reshape(-1)
    else:
        bias = np.zeros(n, np.int64)
    return a_zp, flip_in, out, bias


def _walk(k: int, k_stride: int, config: ArrayConfig) -> ElementWalk:
    """Return the element pattern of A's K elements (contiguous, or `k_stride` apart)."""
    if k_stride == config.operand_bytes or k == 1:
        return ElementWalk(k, 1, 0, 0)
    return ElementWalk(1, k, k_stride, 0)


class _Stage(TypedDict):
    """The GemmJob fields every job of one node shares."""

    multiplier: np.ndarray
    shift: np.ndarray
    zero_point: int
    lo: int
    hi: int
    flip_in: bool
    flip_out: bool


def _stage(node: Node, n: int, out: OutputSide, flip_in: bool) -> _Stage:
    """Return the GemmJob fields every job of the node shares: per-column requantization,
    the output stage's zero point and bounds, and both flip_signs."""
    return {"multiplier": _columns(node, "multiplier", n), "shift": _columns(node, "shift", n),
            "zero_point": out.zero_point, "lo": out.lo, "hi": out.hi, "flip_in": flip_in,
            "flip_out": out.flip}  # fmt: skip


def _columns(node: Node, name: str, n: int) -> np.ndarray:
    """Return attribute `name` per output column (one value given: the same for all)."""
    values = ints_attr(node, name)
    if len(values) == 1:
        return np.full(n, values[0], dtype=np.int64)
    return per_channel(node, name, n)


def _offset(index: tuple[int, ...], shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Return the byte offset of broadcast batch `index` in a tensor's batch axes."""
    return sum(i * s for i, s in zip(_broadcast_index(index, shape), strides, strict=True))


def _broadcast_index(index: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Return the index into batch axes `shape` that broadcast batch `index` reads."""
    tail = index[len(index) - len(shape) :] if shape else ()
    return tuple(0 if size == 1 else i for i, size in zip(tail, shape, strict=True))
