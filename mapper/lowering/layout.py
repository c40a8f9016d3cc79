"""Layout operators (Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Identity, Concat, Split,
nearest Resize and Upsample, and Gather and Slice with constant indices, starts and ends).

The element each output position takes from the input is found by running the reference
operator on the input's array of byte addresses. Then, in order of preference:

1. **alias**: the output's addresses follow the layout rules for its shape (its canonical
   strides, no halo): the output is the input's bytes re-interpreted, no instruction;
2. **permuted**: the output is [N, K], every consumer is a QMatMul reading it as A with a
   constant B, and each row's K addresses are a permutation of a contiguous range (a Flatten
   of an NHWC tensor): A is read in memory order and the consumers' B rows are permuted to
   that order (`LayoutDecision.permutation`), no instruction;
3. **strided**: every consumer is a QMatMul whose B is batched or computed (attention: a
   Transpose of K, the heads split by Reshape + Transpose) and the addresses are strided:
   the output is the input's bytes with permuted strides, no instruction (the QMatMul walks
   A and B with element strides);
4. **copy**: the addresses are strided: LOAD + COPY into the output's own placement
   (`copy_strided`); Concat copies each input into its slice of the output; or they repeat a
   strided view by integer factors along some axes (a nearest Resize upsampling): LOAD once,
   one COPY per repeat (`layout_repeat`);
5. otherwise the layer runs on the host (a Gather of computed indices: no indexed LOAD; a
   linear Resize: `layout_resize`).

Split has one output per part: `layout_split` decides each like a single-output op.

The accelerator moves operand-sized (8-bit) elements only: a layout node of any other element
type (float32, int32, ...) is an alias when it is a pure re-interpretation, else a host layer.
"""

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from systolic.ir import Node
from systolic.isa.instructions import Instruction
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.layout_repeat import copy_repeated, expand_strides, split_shape
from systolic.mapper.lowering.layout_resize import RESAMPLING, resize_reason
from systolic.mapper.lowering.memory_plan import EIGHT_BIT
from systolic.mapper.lowering.node_attrs import int_attr
from systolic.mapper.passes.dequantize_after_layout import COMPUTED_INDICES
from systolic.reference.executor import make_op

__all__ = [
    "LAYOUT_OPS",
    "NOT_STRIDED",
    "LayoutDecision",
    "address_array",
    "decide_layout",
    "decide_view",
    "not_addressable",
    "output_addresses",
    "strides_of",
]

LAYOUT_OPS = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Identity",
                        "Concat", "Gather", "Slice", "Split", "Resize", "Upsample"})
"""Standard operators (default domain) the lowering treats as layout operators."""

NOT_STRIDED = "its element order is not a strided view of its input"
"""Why a layout op whose output no strides describe runs on the host."""


@dataclasses.dataclass(frozen=True)
class LayoutDecision:
    """How a layout node runs: `kind` is "alias", "permuted", "strided", "copy" or "host".

    alias/permuted/strided: `placement` is the output's (memory-order) placement; permuted:
    `permutation[p]` is the logical column held at memory position p of each row.
    copy: `sources` lists (source address, source strides, shape, destination address,
    destination strides) per move. host: `reason` says why.
    """

    kind: str
    placement: TensorPlacement | None = None
    permutation: np.ndarray | None = None
    sources: tuple[tuple[int, tuple[int, ...], tuple[int, ...], int, tuple[int, ...]], ...] = ()
    reason: str = ""

    def instructions(self, ctx: LayerContext) -> list[Instruction]:
        """Return the copy instructions (none for an alias)."""
        code: list[Instruction] = []
        for src, src_strides, shape, dst, dst_strides in self.sources:
            code += copy_repeated(ctx.config, shape, src, src_strides, dst, dst_strides,
                                  element=ctx.config.operand_bytes)  # fmt: skip
        return code


def address_array(placement: TensorPlacement) -> np.ndarray:
    """Return the byte address of every element of a placement, in its logical shape."""
    addresses = np.full(placement.shape, placement.address, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(placement.shape, placement.strides, strict=True)):
        shape = [1] * len(placement.shape)
        shape[axis] = size
        addresses = addresses + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return addresses


def strides_of(addresses: np.ndarray) -> tuple[int, ...] | None:
    """Return the non-negative strides that generate `addresses` from its first element, or
    None when no strides do."""
    if addresses.size == 0:
        return None
    origin = addresses.reshape(-1)[0]
    strides = []
    rebuilt = np.full(addresses.shape, origin, dtype=np.int64)
    for axis, size in enumerate(addresses.shape):
        index = [0] * addresses.ndim
        stride = 0
        if size > 1:
            index[axis] = 1
            stride = int(addresses[tuple(index)] - origin)
        if stride < 0:
            return None
        strides.append(stride)
        shape = [1] * addresses.ndim
        shape[axis] = size
        rebuilt = rebuilt + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return tuple(strides) if np.array_equal(rebuilt, addresses) else None


def output_addresses(node: Node, ctx: LayerContext, opsets: Mapping[str, int]) -> list[np.ndarray]:
    """Return, per output of layout node `node`, the byte address of the input element each
    output element takes (the reference operator run on the input's address array)."""
    op = make_op(node, opsets)
    args: list[np.ndarray | None] = []
    for position, name in enumerate(node.inputs):
        if not name:
            args.append(None)
        elif position == 0:
            args.append(address_array(ctx.placement(name)))
        else:
            args.append(np.asarray(ctx.constant(name)))
    return [np.asarray(result) for result in op.run(args)]


def not_addressable(node: Node, ctx: LayerContext) -> str | None:
    """Return why the elements layout node `node` selects are not known at compile time (or
    not its input's: a linear or extrapolating Resize), else None."""
    if node.op_type in RESAMPLING:
        reason = resize_reason(node)
        if reason is not None:
            return reason
    missing = [n for n in node.inputs[1:] if n and ctx.graph.initializer(n) is None]
    if node.op_type == "Gather" and node.inputs[1] in missing:
        return COMPUTED_INDICES
    if missing or node.inputs[0] not in ctx.plan.placements:
        return "its shape operands are not constants"
    return None


def decide_layout(
    node: Node,
    ctx: LayerContext,
    opsets: Mapping[str, int],
    *,
    may_alias: bool,
    matmul_only: bool,
    out_placement: Callable[[], TensorPlacement],
    strided_view: bool = False,
) -> LayoutDecision:
    """Decide how layout node `node` runs (see the module docstring).

    `may_alias` is False when the output must own its bytes (a graph output, or a value a
    padded QConv reads inside a halo); `matmul_only` is True when every consumer is a QMatMul
    reading the output as A with a constant B; `strided_view` is True when every consumer is a
    QMatMul with a batched or computed B (which reads any strides). `out_placement()` places
    the output by the layout rules when it needs its own bytes.
    """
    out_name = node.outputs[0]
    if node.op_type == "Concat":
        if not _movable(ctx, out_name):
            return LayoutDecision("host", reason=_not_movable(ctx, out_name))
        return _concat(node, ctx, out_placement)
    reason = not_addressable(node, ctx)
    if reason is not None:
        return LayoutDecision("host", reason=reason)
    addresses = output_addresses(node, ctx, opsets)[0]
    return decide_view(ctx, node.inputs[0], out_name, addresses, may_alias=may_alias,
                       matmul_only=matmul_only, strided_view=strided_view,
                       out_placement=out_placement)  # fmt: skip


def decide_view(
    ctx: LayerContext,
    source_name: str,
    out_name: str,
    addresses: np.ndarray,
    *,
    may_alias: bool,
    matmul_only: bool,
    out_placement: Callable[[], TensorPlacement],
    strided_view: bool = False,
) -> LayoutDecision:
    """Decide how output `out_name`, whose elements lie at `addresses` (in the placement of
    `source_name`), is made: the module docstring's order, then a copy that repeats
    elements (`layout_repeat`: a nearest Resize by integer factors), else the host."""
    dtype, shape = ctx.dtype(out_name), ctx.shape(out_name)
    element = ctx.config.operand_bytes
    strides = strides_of(addresses)
    source = ctx.placement(source_name)
    canonical = ctx.plan.canonical(out_name, dtype, shape)
    if may_alias and strides is not None and _same_strides(strides, canonical, shape):
        placement = TensorPlacement(out_name, TensorRole.ACTIVATION, int(addresses.flat[0]),
                                    shape, source.dtype, canonical)  # fmt: skip
        return LayoutDecision("alias", placement=placement)
    if not _movable(ctx, out_name):
        return LayoutDecision("host", reason=_not_movable(ctx, out_name))
    if may_alias and matmul_only and len(shape) == 2:
        permutation = _row_permutation(addresses, element)
        if permutation is not None:
            row = shape[1] * element
            placement = TensorPlacement(out_name, TensorRole.ACTIVATION,
                                        int(addresses.min()), shape, source.dtype,
                                        (row, element))  # fmt: skip
            return LayoutDecision("permuted", placement=placement, permutation=permutation)
    if strides is None:
        split = split_shape(shape, ctx.shape(source_name))
        if split is None:
            return LayoutDecision("host", reason=NOT_STRIDED)
        src_strides = strides_of(addresses.reshape(split))
        if src_strides is None:
            return LayoutDecision("host", reason=f"{NOT_STRIDED}, nor one repeating its "
                                  "elements by integer factors")
        target = out_placement()
        dst_strides = expand_strides(target.strides, shape, split)
        move = (int(addresses.flat[0]), src_strides, split, target.address, dst_strides)
        return LayoutDecision("copy", placement=target, sources=(move,))
    if may_alias and strided_view:
        placement = TensorPlacement(out_name, TensorRole.ACTIVATION, int(addresses.flat[0]),
                                    shape, source.dtype, strides)  # fmt: skip
        return LayoutDecision("strided", placement=placement)
    target = out_placement()
    move = (int(addresses.flat[0]), strides, shape, target.address, target.strides)
    return LayoutDecision("copy", placement=target, sources=(move,))


def _movable(ctx: LayerContext, name: str) -> bool:
    return ctx.dtype(name) in EIGHT_BIT and ctx.config.operand_bytes == 1


def _not_movable(ctx: LayerContext, name: str) -> str:
    return f"the accelerator moves only 8-bit elements, not {ctx.dtype(name).name}"


def _same_strides(a: tuple[int, ...], b: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """True when strides a and b address the same bytes (they may differ on size-1 axes)."""
    return all(x == y for x, y, size in zip(a, b, shape, strict=True) if size > 1)


def _row_permutation(addresses: np.ndarray, element: int) -> np.ndarray | None:
    rows, cols = addresses.shape
    base = int(addresses.min())
    order = np.argsort(addresses[0], kind="stable")
    for n in range(rows):
        start = base + n * cols * element
        if not np.array_equal(addresses[n][order], start + np.arange(cols) * element):
            return None
    return order


def _concat(
    node: Node, ctx: LayerContext, out_placement: Callable[[], TensorPlacement]
) -> LayoutDecision:
    if any(n not in ctx.plan.placements for n in node.inputs if n):
        return LayoutDecision("host", reason="an input is not in external memory")
    target = out_placement()
    axis = int_attr(node, "axis", 0) % len(target.shape)
    moves = []
    offset = 0
    for name in node.inputs:
        if not name:
            continue
        source = ctx.placement(name)
        dst = target.address + offset * target.strides[axis]
        if (source.address, source.strides) != (dst, target.strides):  # else written in place
            moves.append((source.address, source.strides, source.shape, dst, target.strides))
        offset += source.shape[axis]
    return LayoutDecision("copy", placement=target, sources=tuple(moves))
