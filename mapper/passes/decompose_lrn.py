"""LRN (local response normalization across channels) as operators the accelerator runs.

ONNX LRN over the channel axis 1 of x [N, C, ...]:

    square_sum[n, c] = sum over i in window(c) of x[n, i]^2,
        window(c) = max(0, c - floor((size - 1) / 2)) .. min(C - 1, c + ceil((size - 1) / 2))
    y = x / (bias + alpha / size * square_sum)^beta

is, with W[c, i] = alpha / size for i in window(c) (else 0), a 1x1 convolution of x^2:

    d = Conv(Mul(x, x), W, B = bias)      d = bias + alpha / size * square_sum
    y = Mul(x, Pow(d, -beta))

so after post-training quantization Mul(x, x) and Pow(d, -beta) are activation tables, the
banded 1x1 convolution runs on the array (C^2 MACs per position, most of them with zero
weights: counted as performed) and the product is an element-wise multiply on the vector
unit. In float arithmetic the rewrite equals LRN up to roundings (the reference computes the
same sums in another order); the quantized model is compared with the float model, as every
float model is.

Preconditions (else nothing changes, LRN stays on the host): a float model (quantized models
keep their float LRN on the host as one operator), a float input of static shape and rank
>= 3, size >= 1.
"""

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_int,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.report import PassReport

__all__ = ["decompose_lrn", "window_weights"]


def window_weights(channels: int, size: int, alpha: float, spatial: int = 2) -> np.ndarray:
    """Return the [C, C, 1, ...] float32 weights (`spatial` ones) of LRN's channel window
    times alpha / size."""
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    index = np.arange(channels)
    inside = ((index[None, :] >= index[:, None] - before)
              & (index[None, :] <= index[:, None] + after))
    weights = np.where(inside, np.float32(alpha / size), np.float32(0)).astype(np.float32)
    return weights.reshape(channels, channels, *(1,) * spatial)


def decompose_lrn(model: Model, report: PassReport) -> Model:
    """Return `model` with each float LRN written as the module docstring says."""
    if is_quantized(model):
        return model
    graph = model.graph
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}
    constants: list[Tensor] = []
    for lrn in graph.nodes:
        if lrn.op_type != "LRN" or lrn.domain != "":
            continue
        found = graph.type_of(lrn.inputs[0])
        shape = found.shape if found is not None else None
        if (found is None or found.dtype != DataType.FLOAT or shape is None
                or not found.is_static or len(shape) < 3 or attr_int(lrn, "size", 0) < 1
                or not isinstance(shape[1], int)):
            continue
        nodes, tensors = _rewrite(lrn, shape[1], len(shape) - 2, namer)
        replaced[id(lrn)] = nodes
        constants += tensors
        report.note(lrn.label, "LRN as Mul(x, x) -> banded 1x1 Conv -> Pow -> Mul")
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, set()),
                                           constants))


def _rewrite(lrn: Node, channels: int, spatial: int,
             namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """Return the four nodes that compute `lrn` and their constants."""
    x, y, base = lrn.inputs[0], lrn.outputs[0], lrn.name or lrn.label
    size, alpha = attr_int(lrn, "size", 1), attr_float(lrn, "alpha", 1e-4)
    beta, bias = attr_float(lrn, "beta", 0.75), attr_float(lrn, "bias", 1.0)
    w, b, e = namer(f"{base}_window"), namer(f"{base}_bias"), namer(f"{base}_exponent")
    tensors = [tensor(w, window_weights(channels, size, alpha, spatial)),
               tensor(b, np.full(channels, bias, np.float32)),
               tensor(e, np.array(-beta, np.float32))]
    square, sums, scale = namer(f"{x}_squared"), namer(f"{y}_denominator"), namer(f"{y}_scale")
    nodes = [make_node("Mul", [x, x], [square], name=namer(f"{base}_square")),
             make_node("Conv", [square, w, b], [sums], name=namer(f"{base}_window_sum"),
                       attrs={"kernel_shape": (1,) * spatial}),
             make_node("Pow", [sums, e], [scale], name=namer(f"{base}_power")),
             make_node("Mul", [x, scale], [y], name=lrn.name)]
    return nodes, tensors
