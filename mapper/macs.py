"""Count the multiply-accumulates of the operators a systolic array runs.

Convolutions: every output element takes (input channels / group) x kernel size MACs, which
is the product of the weight's dimensions after the first. Transposed convolutions scatter
every input element into (output channels / group) x kernel size outputs, again the product
of the weight's dimensions after the first (its layout is C_in x C_out/group x kernel). Matrix products: every output
element takes K MACs, K being the reduced dimension. Recurrent layers (RNN, GRU, LSTM,
com.microsoft DynamicQuantizeLSTM): every time step of every batch entry multiplies X_t by W
and H_{t-1} by R in each direction: seq x batch x (elements of W + elements of R), i.e.
seq x batch x directions x gates·hidden x (input + hidden). If, Loop and Scan count the MACs
of their subgraphs (`systolic.mapper.subgraph_macs`: the larger If branch, a Loop's body times
its trip count, a Scan's body times its length), with a note saying how. An Einsum of two
operands (Funnel's relative attention, "bind,jnd->bnij") multiplies once per combination of
its letters' values: the product of every letter's size (one of a single operand multiplies
nothing; one with an ellipsis or more operands counts 0). Other operators count 0. A count
needs static shapes; where they are unknown the count is 0.
"""

import math
from collections.abc import Callable

import numpy as np

from systolic.ir import Node, TensorType
from systolic.mapper.subgraph_macs import subgraph_macs

__all__ = ["node_macs", "node_macs_noted"]

# (domain, op_type) -> index of the weight input of convolutions.
_CONV_WEIGHT = {
    ("", "Conv"): 1,
    ("", "ConvInteger"): 1,
    ("", "QLinearConv"): 3,
}
# (domain, op_type) -> index of the weight input of transposed convolutions.
_CONV_TRANSPOSE_WEIGHT = {
    ("", "ConvTranspose"): 1,
}
# (domain, op_type) -> index of the left operand A of matrix products.
_MATMUL_A = {
    ("", "Gemm"): 0,
    ("", "MatMul"): 0,
    ("", "MatMulInteger"): 0,
    ("", "QLinearMatMul"): 0,
    ("com.microsoft", "QGemm"): 0,
}

# (domain, op_type) of recurrent layers: inputs X, W, R (W and R hold every direction).
_RECURRENT = frozenset({("", "RNN"), ("", "GRU"), ("", "LSTM"),
                        ("com.microsoft", "DynamicQuantizeLSTM")})


def node_macs(node: Node, type_of: Callable[[str], TensorType | None],
              value_of: Callable[[str], np.ndarray | None] | None = None) -> int:
    """Return the MACs one run of `node` performs (0 for other operators or unknown shapes).
    `value_of` gives the constant values known (a Loop's trip count); default: none."""
    return node_macs_noted(node, type_of, value_of)[0]


def node_macs_noted(node: Node, type_of: Callable[[str], TensorType | None],
                    value_of: Callable[[str], np.ndarray | None] | None = None
                    ) -> tuple[int, str]:
    """Return (MACs, note): the note says how a subgraph node's count was made ("" for
    other nodes)."""
    if node.subgraphs and not node.domain:
        return subgraph_macs(node, type_of, value_of or _no_value, node_macs_noted)
    return _plain_macs(node, type_of), ""


def _no_value(name: str) -> np.ndarray | None:
    return None


def _plain_macs(node: Node, type_of: Callable[[str], TensorType | None]) -> int:
    key = (node.domain, node.op_type)
    output = _static(type_of(node.outputs[0])) if node.outputs and node.outputs[0] else None
    if output is None:
        return 0
    if key in _CONV_WEIGHT:
        weight = _static(_input_type(node, _CONV_WEIGHT[key], type_of))
        if weight is None or len(weight) < 2:
            return 0
        return math.prod(output) * math.prod(weight[1:])
    if key in _CONV_TRANSPOSE_WEIGHT:
        x = _static(_input_type(node, 0, type_of))
        weight = _static(_input_type(node, _CONV_TRANSPOSE_WEIGHT[key], type_of))
        if x is None or weight is None or len(weight) < 2:
            return 0
        return math.prod(x) * math.prod(weight[1:])
    if key in _MATMUL_A:
        a = _static(_input_type(node, _MATMUL_A[key], type_of))
        if a is None or not a:
            return 0
        transposed = bool(node.attrs.get("transA", 0)) and key != ("", "MatMul")
        reduced = a[0] if transposed and len(a) == 2 else a[-1]
        return math.prod(output) * reduced
    if key in _RECURRENT:
        return _recurrent_macs(node, type_of)
    if key == ("", "Einsum"):
        return _einsum_macs(node, type_of)
    return 0


def _einsum_macs(node: Node, type_of: Callable[[str], TensorType | None]) -> int:
    """The product of every letter's size in a two-operand Einsum without an ellipsis whose
    operands have static shapes of one letter per axis; else 0 (the module docstring)."""
    equation = str(node.attrs.get("equation", "")).replace(" ", "")
    terms = equation.split("->")[0].split(",")
    if len(node.inputs) != 2 or len(terms) != 2 or "." in equation:
        return 0
    sizes: dict[str, int] = {}
    for index, term in enumerate(terms):
        shape = _static(_input_type(node, index, type_of))
        if shape is None or len(shape) != len(term):
            return 0
        for letter, size in zip(term, shape, strict=True):
            sizes[letter] = max(sizes.get(letter, 1), size)  # a broadcast 1 takes the other
    return math.prod(sizes.values())


def _recurrent_macs(node: Node, type_of: Callable[[str], TensorType | None]) -> int:
    x, w, r = (_static(_input_type(node, i, type_of)) for i in range(3))
    if x is None or w is None or r is None or len(x) != 3:
        return 0
    return x[0] * x[1] * (math.prod(w) + math.prod(r))


def _input_type(
    node: Node, index: int, type_of: Callable[[str], TensorType | None]
) -> TensorType | None:
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    return type_of(node.inputs[index])


def _static(tensor_type: TensorType | None) -> tuple[int, ...] | None:
    if tensor_type is None or not tensor_type.is_static:
        return None
    assert tensor_type.shape is not None
    return tuple(int(d) for d in tensor_type.shape if isinstance(d, int))
