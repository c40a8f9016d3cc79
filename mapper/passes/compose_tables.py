"""Compose integer functions of one 8-bit tensor into one systolic.QTable, exactly.

Every systolic.QTable, QMul and QAdd whose inputs are all functions of the same 8-bit
tensor x (x itself or x through a chain of QTable nodes) computes, element by element, an
integer function of x alone, which takes 256 values: it is one QTable of x. This covers a
QTable of a QTable, and the SiLU form onnxruntime's QDQ export writes, DQ(x) -> Sigmoid -> Q
(a QTable after `fuse_tables`) then DQ(x) * DQ(sigmoid) -> Q (a QMul after `fuse_qdq`):
QMul(x, QTable(x)) = QTable(x). The table is obtained by running the integer nodes
themselves with the reference on the 256 values of x (`tables.table_of`), so the result is
bit-exact with the unfused integer graph. QMul and QAdd must have operands of the same shape
(no broadcast); the QTable nodes in between that nothing else reads are absorbed (the report
moves their original nodes into the new table), the others stay for their other readers.
"""

import dataclasses

from systolic.ir import SYSTOLIC_DOMAIN, DataType, Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.tables import table_of

__all__ = ["compose_tables"]

COMPOSABLE = frozenset({"QTable", "QMul", "QAdd"})


def compose_tables(model: Model, report: PassReport) -> Model:
    """Return `model` with every integer function of one 8-bit tensor made one QTable.

    Rounds repeat until one composes nothing: a round reads the graph as it was when it
    began, so a table after a QMul that the same round turns into a table (GELU: x * T(x),
    then * 0.5) composes in the next round."""
    while True:
        ctx = FusionContext(model.graph)
        opsets = dict(model.opsets)
        order = {id(node): i for i, node in enumerate(model.graph.nodes)}
        composed = 0
        for node in model.graph.nodes:
            if node.domain != SYSTOLIC_DOMAIN or node.op_type not in COMPOSABLE:
                continue
            if ctx.is_scheduled(node):
                continue
            try:
                _compose(ctx, node, opsets, order, report)
            except NotFusable:
                continue  # not a function of one tensor: the op stays as it is
            composed += 1
        if not composed:
            return model
        model = dataclasses.replace(model, graph=ctx.result())


def _data_inputs(node: Node) -> tuple[str, ...]:
    return node.inputs[:1] if node.op_type == "QTable" else node.inputs[:2]


def _table_producer(ctx: FusionContext, name: str) -> Node | None:
    node = ctx.producers.get(name)
    if node is None or node.domain != SYSTOLIC_DOMAIN or node.op_type != "QTable":
        return None
    return node


def _root(ctx: FusionContext, name: str, cone: dict[int, Node]) -> str:
    """Return the tensor at the start of the QTable chain ending at `name`, adding the
    chain's QTable nodes to `cone`."""
    while (producer := _table_producer(ctx, name)) is not None:
        cone[id(producer)] = producer
        name = producer.inputs[0]
    return name


def _compose(ctx: FusionContext, node: Node, opsets: dict[str, int], order: dict[int, int],
             report: PassReport) -> None:
    cone: dict[int, Node] = {}
    roots = {_root(ctx, name, cone) for name in _data_inputs(node)}
    if len(roots) != 1 or (node.op_type == "QTable" and not cone):
        raise NotFusable("not a function of one tensor through tables")
    source = roots.pop()
    dtype = ctx.dtype_of(source)
    if source in ctx.constants or dtype not in EIGHT_BIT:
        raise NotFusable("the source is not a computed 8-bit tensor")
    if node.op_type != "QTable":
        shapes = {ctx.shape_of(name) for name in _data_inputs(node)}
        if len(shapes) != 1 or None in shapes:
            raise NotFusable("the operands are broadcast")
    out_type = ctx.dtype_of(node.outputs[0])
    assert dtype is not None
    if out_type not in EIGHT_BIT:
        raise NotFusable("the result is not 8-bit")
    assert out_type is not None
    ordered = sorted([*cone.values(), node], key=lambda n: order[id(n)])
    table = table_of(ordered, ctx.constants, source, dtype, node.outputs[0], opsets)
    absorbed = _absorbed(ctx, node, list(cone.values()))
    name = node.name or node.label
    new = ctx.systolic_node("QTable", [source, ctx.constant(f"{name}_table", table)],
                            node.outputs[0], name, {"to": int(DataType(out_type))})
    ctx.replace([node, *absorbed], new, at=node)
    into = f"systolic.QTable {new.name!r}"
    for old in (node, *absorbed):
        report.redirect(f"systolic.{old.op_type} {old.name!r}", into)
    report.fused([node.label], into)


def _absorbed(ctx: FusionContext, node: Node, cone: list[Node]) -> list[Node]:
    """Return the QTable nodes of `cone` whose readers all lie in the composed function
    (a table read by a table that stays must stay too: repeated until nothing changes)."""
    inside = {id(n) for n in cone} | {id(node)}
    changed = True
    while changed:
        changed = False
        for table in cone:
            out = table.outputs[0]
            readers = ctx.consumers.get(out, [])
            if id(table) in inside and (out in ctx.outputs
                                        or any(id(r) not in inside for r in readers)):
                inside.discard(id(table))
                changed = True
    return [t for t in cone if id(t) in inside]
