"""com.microsoft QLinearConcat as accelerator work: a requantizing table per input whose
parameters differ from the output's, then a Concat of 8-bit values (a layout op).

QLinearConcat copies an input whose scale and zero point equal the output's and requantizes
any other one element by element (`y = Q_y(DQ_x(x))`, the reference's
`op_qlinear_concat`), which is a function of one 8-bit value: a 256-entry systolic.QTable
computed by running QLinearConcat itself on that input alone with the reference, so the
table is bit-exact with the node. The concatenation of values that share the output's
parameters is then an ordinary Concat, which the lowering runs as layout (aliases or COPYs).

Preconditions: every scale and zero point is a constant per-tensor value, the input and
output types are the same 8-bit type (the reference checks that the model is well formed).
Otherwise the node stays on the host with the reason.
"""

from systolic.ir import Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_int, make_node
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable, per_tensor_params
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.tables import table_of

__all__ = ["qlinear_concat"]


def qlinear_concat(ctx: FusionContext, node: Node, report: PassReport) -> None:
    """Schedule `node` (com.microsoft QLinearConcat) as QTables and a Concat (module
    docstring); raise NotFusable when a precondition fails."""
    y_scale, y_zero_point, *triples = node.inputs
    output = per_tensor_params(ctx.constants, y_scale, y_zero_point or None, "output")
    dtype = ctx.dtype_of(node.outputs[0])
    if dtype not in EIGHT_BIT or output.dtype != dtype:
        raise NotFusable("the output is not 8-bit of its zero point's type")
    axis = attr_int(node, "axis", 0)
    parts, tables = [], []
    for index in range(0, len(triples), 3):
        x, x_scale, x_zero_point = triples[index: index + 3]
        params = per_tensor_params(ctx.constants, x_scale, x_zero_point or None,
                                   f"input {index // 3}")
        if ctx.dtype_of(x) != dtype or params.dtype != dtype:
            raise NotFusable(f"input {index // 3} is not of the output's type")
        if (params.scale, params.zero_point) == (output.scale, output.zero_point):
            parts.append(x)
            continue
        table = _requantizing_table(ctx, node, x, (x_scale, x_zero_point), index // 3)
        tables.append(table)
        parts.append(table.outputs[0])
    concat = make_node("Concat", parts, node.outputs, name=ctx.namer(f"{node.label}_concat"),
                       attrs={"axis": axis})
    for new in (*tables, concat):
        ctx.replace([node], new, at=node)
    report.fused([node.label], f"{len(tables)} systolic.QTable and Concat {concat.name!r}")


def _requantizing_table(ctx: FusionContext, node: Node, x: str,
                        x_params: tuple[str, str], index: int) -> Node:
    """Return the QTable node mapping input `x` to the output's parameters, its table
    computed by running a one-input QLinearConcat with the reference."""
    dtype = ctx.dtype_of(x)
    assert dtype is not None
    requantized = ctx.namer(f"{node.outputs[0]}_part{index}")
    alone = make_node(node.op_type, (node.inputs[0], node.inputs[1], x, *x_params),
                      (requantized,), name=f"{node.label}_part{index}", domain=node.domain,
                      version=node.version, attrs={"axis": 0})  # the table runs on 1-D
    table = table_of([alone], ctx.constants, x, dtype, requantized,
                     {node.domain: node.version or 1})
    inputs = [x, ctx.constant(f"{node.label}_table{index}", table)]
    return ctx.systolic_node("QTable", inputs, requantized, f"{node.label}_requant{index}",
                             {"to": int(dtype)})
