"""A two-operand Einsum as Transpose -> Reshape -> MatMul -> Reshape -> Transpose.

Funnel's relative attention ("bind,jnd->bnij") and other exporters' contractions stay Einsum
in ONNX, which no fusion takes: they ran on the host. Every letter of such an equation is a
batch letter (in both operands and the result), a contracted one (in both operands only), or
a free one of one operand (in it and the result). With A's axes ordered [batch, free A,
contracted] and reshaped to [Bt, M, K], B's ordered [batch, contracted, free B] and reshaped
to [Bt, K, N], MatMul gives [Bt, M, N]: reshaped to [batch..., free A..., free B...] and
transposed to the result's letter order, it is the Einsum (the same products; float sums in
another order). Transposes and Reshapes of identity permutations or equal shapes are left
out.

Taken: float32 operands of static shapes, one letter per axis (no ellipsis), every letter of
the result in an operand, no letter repeated within a term, no letter summed within one
operand alone, batch letters of equal sizes (no broadcasting). Other Einsums stay.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, replace_graph, splice, tensor
from systolic.mapper.passes.report import PassReport

__all__ = ["einsum_to_matmul"]


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The letters of one Einsum by role, and each letter's size."""

    a: str
    b: str
    out: str
    batch: str
    free_a: str
    free_b: str
    contracted: str
    sizes: dict[str, int]


def einsum_to_matmul(model: Model, report: PassReport) -> Model:
    """Return `model` with each Einsum taken (module docstring) as a MatMul between layout
    ops; `model` itself when none is."""
    graph = model.graph
    namer, replaced = Namer(graph), {}
    added: list[Tensor] = []
    for node in graph.nodes:
        plan = _plan(graph, node) if node.op_type == "Einsum" and node.domain == "" else None
        if plan is None:
            continue
        replaced[id(node)] = _lowered(node, plan, namer, added)
        report.note(node.label, "a two-operand Einsum, as a MatMul between layout ops")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _plan(graph: Graph, node: Node) -> _Plan | None:
    equation = str(node.attrs.get("equation", "")).replace(" ", "")
    if "->" not in equation or "." in equation or len(node.inputs) != 2:
        return None
    terms, out = equation.split("->")
    parts = terms.split(",")
    if len(parts) != 2 or any(len(set(t)) != len(t) for t in (*parts, out)):
        return None
    a, b = parts
    sizes: dict[str, int] = {}
    for name, term in zip(node.inputs, parts, strict=True):
        found = graph.type_of(name)
        if (found is None or found.shape is None or not found.is_static
                or found.dtype != DataType.FLOAT or len(found.shape) != len(term)):
            return None
        for letter, size in zip(term, found.shape, strict=True):
            if sizes.setdefault(letter, int(size)) != int(size):  # type: ignore[arg-type]
                return None
    if set(out) - set(a) - set(b) or (set(a) ^ set(b)) - set(out):
        return None
    batch = "".join(c for c in out if c in a and c in b)
    return _Plan(a, b, out, batch, "".join(c for c in a if c in out and c not in b),
                 "".join(c for c in b if c in out and c not in a),
                 "".join(c for c in a if c in b and c not in out), sizes)


def _lowered(node: Node, plan: _Plan, namer: Namer, added: list[Tensor]) -> list[Node]:
    """The nodes replacing Einsum `node` (new shape constants into `added`)."""
    base = node.name or node.outputs[0]
    nodes: list[Node] = []

    def size(letters: str) -> int:
        return math.prod(plan.sizes[c] for c in letters)

    def arrange(value: str, term: str, order: str, shape: tuple[int, ...], tag: str) -> str:
        if term != order:
            moved = namer(f"{base}_{tag}_t")
            nodes.append(make_node("Transpose", [value], [moved], name=namer(f"{base}_{tag}_t"),
                                   attrs={"perm": tuple(term.index(c) for c in order)}))
            value = moved
        if tuple(plan.sizes[c] for c in order) != shape:
            target, shaped = namer(f"{base}_{tag}_shape"), namer(f"{base}_{tag}_r")
            added.append(tensor(target, np.array(shape, np.int64)))
            nodes.append(make_node("Reshape", [value, target], [shaped],
                                   name=namer(f"{base}_{tag}_r")))
            value = shaped
        return value

    p = plan
    a = arrange(node.inputs[0], p.a, p.batch + p.free_a + p.contracted,
                (size(p.batch), size(p.free_a), size(p.contracted)), "a")
    b = arrange(node.inputs[1], p.b, p.batch + p.contracted + p.free_b,
                (size(p.batch), size(p.contracted), size(p.free_b)), "b")
    product = namer(f"{base}_matmul")
    nodes.append(make_node("MatMul", [a, b], [product], name=node.name or namer(base)))
    result = p.batch + p.free_a + p.free_b
    full = tuple(p.sizes[c] for c in result)
    if full != (size(p.batch), size(p.free_a), size(p.free_b)):
        target, shaped = namer(f"{base}_y_shape"), namer(f"{base}_y_r")
        added.append(tensor(target, np.array(full, np.int64)))
        nodes.append(make_node("Reshape", [product, target], [shaped], name=namer(f"{base}_y_r")))
        product = shaped
    perm = [result.index(c) for c in p.out]
    if perm == list(range(len(perm))):
        nodes.append(make_node("Identity", [product], list(node.outputs), name=namer(f"{base}_y")))
    else:
        nodes.append(make_node("Transpose", [product], list(node.outputs),
                               name=namer(f"{base}_y_t"), attrs={"perm": tuple(perm)}))
    return nodes
