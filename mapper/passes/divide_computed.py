"""Float models, before post-training quantization: a Div of two computed tensors becomes a
product by the divisor's reciprocal, Div(a, b) -> Mul(a, Reciprocal(b)).

A quotient of two quantized tensors is no function of one tensor (not one table) and the
vector unit has no divide, so the Div stayed float on the host (EfficientViT's linear
attention normalises by a computed sum: out[..., :-1] / (out[..., -1:] + eps); ConvNeXtV2's
GRN: Gx / (mean(Gx) + eps)). As a product, post-training quantization calibrates the
reciprocal like any activation (one QTable of b) and quantizes the product's operands and
result (one QMul, with the usual broadcasts). The reciprocal's range is cut at
1 / (s_b - |eps|), the largest value the 8-bit b (plus a small eps) takes at a nonzero code
(`quantize_float`'s reciprocal cut), so that a divisor calibration saw near 0 does not leave
the ordinary rows without resolution.

Numeric contract (docs/numeric-contract.md, "Division of two computed tensors"): the float
function is the same (a / b = a * (1 / b) up to float rounding); once quantized, 1 / b is
rounded to its own 8-bit scale s_r before the product, a second rounding the Div did not have
(within s_r / 2, times |a|). That step is coarse against 1 / b where b is large: at a divisor
of k codes, 1 / b holds about 255 * k_min / k codes (k_min: the smallest nonzero code the
range keeps), so the quotient is accurate where the divisor's values stay within a small
factor of each other, and only within tens of percent where they span the whole 8-bit range.

Left as they are: a quotient of a reduction's result that stays on the host (ConvNeXtV2's
GRN: ReduceL2 over H, W; rewriting it would add a rounding and two host layers); a constant
divisor (a table or a scale of one tensor already); a divisor that a Sqrt makes (a
normalization's d / sqrt(var + eps): `layernorm_ptq` and `fuse_layernorm` take that chain);
a Div whose operands are both functions of one tensor (a region of one table, such as
x / (1 + exp(-x))).
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import DataType, Graph, Model, Node
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    splice,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["divide_computed"]

_NORMALIZERS = frozenset({"Sqrt"})
"""Producers of a divisor that another pass takes as a normalization."""


def divide_computed(model: Model, report: PassReport) -> Model:
    """Return `model` with each Div of two computed float tensors (module docstring) as a Mul
    by the divisor's Reciprocal; `model` itself when there is none."""
    graph = model.graph
    constants, producers = constants_of(graph), graph.producers()
    namer, replaced = Namer(graph), {}
    for node in graph.nodes:
        if not _divides_computed(graph, node, constants, producers):
            continue
        a, b = node.inputs
        base = node.name or node.outputs[0]
        inverse = namer(f"{base}_reciprocal")
        replaced[id(node)] = [
            make_node("Reciprocal", (b,), (inverse,), name=namer(f"{base}_reciprocal")),
            dataclasses.replace(node, op_type="Mul", inputs=(a, inverse), version=0)]
        report.note(node.label, "a quotient of two computed tensors: a product by the "
                    "divisor's reciprocal (a table)")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set())))


def _divides_computed(graph: Graph, node: Node, constants: Mapping[str, np.ndarray],
                      producers: Mapping[str, Node]) -> bool:
    """True for a float Div of two computed tensors that no other pass takes."""
    if node.op_type != "Div" or node.domain != "" or len(node.inputs) != 2:
        return False
    a, b = node.inputs
    if a in constants or b in constants or any(not _is_float(graph, n) for n in (a, b)):
        return False
    divisor = producers.get(b)
    if divisor is None or divisor.op_type in _NORMALIZERS or _is_constant_dequantize(
            divisor, constants):
        return False
    roots = [_root(name, constants, producers) for name in (a, b)]
    if any((made := producers.get(root)) is not None and made.op_type.startswith("Reduce")
           for root in roots):
        return False  # of a host reduction's result (GRN's ReduceL2): it stays with it
    return roots[0] != roots[1]


def _is_float(graph: Graph, name: str) -> bool:
    found = graph.type_of(name)
    return found is not None and found.dtype == DataType.FLOAT


def _is_constant_dequantize(node: Node, constants: Mapping[str, np.ndarray]) -> bool:
    return node.op_type == "DequantizeLinear" and all(
        not n or n in constants for n in node.inputs)


def _root(name: str, constants: Mapping[str, np.ndarray], producers: Mapping[str, Node]) -> str:
    """The value `name` is an element-wise function of alone: back through element-wise
    nodes whose other inputs are one-value constants."""
    seen = set()
    while name not in seen:
        seen.add(name)
        node = producers.get(name)
        if node is None or node.domain != "" or node.op_type not in ELEMENTWISE:
            return name
        computed = [n for n in node.inputs if n and not (n in constants
                                                         and constants[n].size == 1)]
        if len(computed) != 1 or any(n in constants for n in computed):
            return name
        name = computed[0]
    return name
