"""A MatMulInteger of two computed tensors (onnxruntime's quantize_dynamic with
MatMulConstBOnly=False: the attention products, their zero points computed at run time by
DynamicQuantizeLinear) on the array, corrected on the host in int32.

With A_s8 = A − z0_A and B_s8 = B − z0_B (z0 = 128 for uint8, 0 for int8: the LOADs'
flip_sign) and α = a_zp − z0_A, β = b_zp − z0_B (scalars, constant or computed):

    Σ_k (A − a_zp)(B − b_zp) = Σ_k A_s8·B_s8 − β·Σ_k A_s8 − α·Σ_k B_s8 + K·α·β

The first sum is systolic.QMatMulInt with a computed B (the array, STORE raw); the rest are
host nodes in int32: Cast and ReduceSum for the row sums of A ([..., M, 1]) and the column
sums of B ([..., 1, N]), Sub for the implied zero points, Mul by the run-time zero points,
and Sub/Add into the product. Every step wraps modulo 2^32 like MatMulInteger's own int32
result: bit-exact.
"""

import numpy as np

from systolic.ir import DataType, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import make_node
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable
from systolic.mapper.passes.report import PassReport

__all__ = ["fuse_computed_product"]

_IMPLIED = {DataType.UINT8: 128, DataType.INT8: 0}
_INT32 = int(DataType.INT32)


class _Host:
    """Host nodes in int32 added before `at`, named after the product `name`."""

    def __init__(self, ctx: FusionContext, name: str, opset: int) -> None:
        self.ctx, self.name, self.opset = ctx, name, opset
        self.nodes: list[Node] = []

    def node(self, op: str, inputs: list[str], attrs: dict[str, object] | None = None,
             output: str | None = None) -> str:  # fmt: skip
        out = output or self.ctx.namer(f"{self.name}_{op.lower()}")
        self.nodes.append(make_node(op, inputs, [out], name=self.ctx.namer(f"{self.name}_{op}"),
                                    attrs=attrs))  # type: ignore[arg-type]  # fmt: skip
        return out

    def constant(self, value: int) -> str:
        return self.ctx.constant(f"{self.name}_i32", np.array(value, np.int32))

    def offset(self, zero_point: str, implied: int) -> str:
        """Return the int32 scalar zero point − implied (a constant when it is one)."""
        if not zero_point or zero_point in self.ctx.constants:
            value = int(self.ctx.constants[zero_point].reshape(())) if zero_point else 0
            return self.constant(value - implied)
        cast = self.node("Cast", [zero_point], {"to": _INT32})
        return self.node("Sub", [cast, self.constant(implied)])

    def sum(self, value: str, axis: int, k: int, implied: int) -> str:
        """Return Σ (value − implied) along `axis` (kept), in int32."""
        cast = self.node("Cast", [value], {"to": _INT32})
        if self.opset >= 13:
            axes = self.ctx.constant(f"{self.name}_axes", np.array([axis], np.int64))
            total = self.node("ReduceSum", [cast, axes], {"keepdims": 1})
        else:
            total = self.node("ReduceSum", [cast], {"axes": (axis,), "keepdims": 1})
        return self.node("Sub", [total, self.constant(k * implied)]) if implied else total


def _operand(ctx: FusionContext, node: Node, index: int) -> tuple[DataType, str]:
    """Return input `index`'s type and its zero point's name ("" when absent); raise unless
    it is a computed 8-bit tensor of rank >= 2 with a one-value zero point."""
    name = node.inputs[index]
    dtype, shape = ctx.dtype_of(name), ctx.shape_of(name)
    if dtype not in EIGHT_BIT or shape is None or len(shape) < 2 or name in ctx.constants:
        raise NotFusable("the inputs are not computed 8-bit tensors of static rank >= 2")
    assert dtype is not None
    zero_point = node.inputs[index + 2] if len(node.inputs) > index + 2 else ""
    zp_shape = ctx.shape_of(zero_point) if zero_point else ()
    if zero_point and (zp_shape is None or int(np.prod(zp_shape)) != 1
                       or ctx.dtype_of(zero_point) != dtype):  # fmt: skip
        raise NotFusable("a zero point is not one value of its input's type")
    return dtype, zero_point


def fuse_computed_product(ctx: FusionContext, node: Node, report: PassReport,
                          opset: int) -> None:  # fmt: skip
    """Replace MatMulInteger `node` of two computed tensors by QMatMulInt and the host's
    zero-point correction (module docstring); raise NotFusable when it does not fit."""
    a_type, a_zp = _operand(ctx, node, 0)
    b_type, b_zp = _operand(ctx, node, 1)
    k = ctx.shape_of(node.inputs[1])[-2]  # type: ignore[index]
    name = node.name or node.label
    out = node.outputs[0]
    raw = ctx.namer(f"{out}_raw")
    new = ctx.systolic_node("QMatMulInt", [node.inputs[0], node.inputs[1]], raw, name, {})
    host = _Host(ctx, name, opset)
    alpha = host.offset(a_zp, _IMPLIED[a_type])
    beta = host.offset(b_zp, _IMPLIED[b_type])
    rows = host.node("Mul", [host.sum(node.inputs[0], -1, k, _IMPLIED[a_type]), beta])
    cols = host.node("Mul", [host.sum(node.inputs[1], -2, k, _IMPLIED[b_type]), alpha])
    both = host.node("Mul", [host.node("Mul", [alpha, beta]), host.constant(k)])
    partial = host.node("Sub", [host.node("Sub", [raw, rows]), cols])
    host.node("Add", [partial, both], output=out)
    ctx.replace([node], new, at=node)
    for step in host.nodes:
        ctx.replace([], step, at=node)
    report.fused([node.label], f"systolic.QMatMulInt {new.name!r}")
