"""Fold inference-mode BatchNormalization into the Conv or Gemm in front of it (float).

y = gamma * (z - mean) / sqrt(var + eps) + beta with z = conv(x, W) + b becomes one conv with
W' = W * s (per output channel) and b' = (b - mean) * s + beta, s = gamma / sqrt(var + eps),
computed in float64 and stored in W's type. For Gemm (Y = alpha * A @ B' + beta * C, BN over
its N features) B is scaled per output column, alpha and beta are absorbed (alpha = beta = 1).
The fold applies when the Conv/Gemm output has no other reader and is not a graph output,
weights, bias and the BN parameters are constants, and BN has one output. A 2-D BN over the
columns of a MatMul of a constant weight, through an optional bias Add and a Flatten/Reshape
that merges leading axes, folds into that MatMul (`fold_batchnorm_matmul`). Otherwise the BN
stays a standard op (on the host), with the reason noted.
"""

import dataclasses

import numpy as np

from systolic.ir import Attrs, Model, Node, Tensor
from systolic.mapper.passes.fold_batchnorm_matmul import fold_into_matmul, matmul_chain
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_int,
    constants_of,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["fold_batchnorm"]


def fold_batchnorm(model: Model, report: PassReport) -> Model:
    """Return `model` with every foldable BatchNormalization merged into its producer (the
    same object when none is)."""
    graph = model.graph
    constants = constants_of(graph)
    producers = graph.producers()
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}  # id(producer) -> [the folded producer]
    removed: set[int] = set()
    new_constants: list[Tensor] = []
    for bn in graph.nodes:
        if bn.op_type != "BatchNormalization" or bn.domain != "":
            continue
        producer = producers.get(bn.inputs[0])
        why = _why_not(bn, producer, constants, consumers, outputs)
        chain = matmul_chain(bn, graph, constants, consumers, outputs) if why else None
        if chain is not None:  # a Linear's BN over the product's columns (LeViT)
            scale, shift = _affine(bn, constants)
            parts, gone, tensors = fold_into_matmul(chain, bn, scale, shift, constants, namer)
            replaced.update(parts)
            removed |= gone
            new_constants += tensors
            constants.update((t.name, t.data) for t in tensors)
            into = f"MatMul {chain.matmul.label!r} (float)"
            report.record(bn.label, FUSED, into=into)
            if chain.bias_add is not None:
                report.record(chain.bias_add.label, FUSED, into=into)
            continue
        if why is not None or producer is None:
            report.note(bn.label, why or "its input is not produced by a Conv or Gemm")
            continue
        scale, shift = _affine(bn, constants)
        folded, tensors = _fold(producer, scale, shift, constants, namer)
        folded = dataclasses.replace(folded, outputs=(bn.outputs[0],))
        replaced[id(producer)] = [folded]
        removed.add(id(bn))
        new_constants += tensors
        for t in tensors:
            constants[t.name] = t.data
        report.record(bn.label, FUSED, into=f"{producer.op_type} {producer.label!r} (float)")
    if not removed:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, removed),
                                           new_constants))


def _why_not(
    bn: Node,
    producer: Node | None,
    constants: dict[str, np.ndarray],
    consumers: dict[str, list[Node]],
    outputs: set[str],
) -> str | None:
    if producer is None or producer.op_type not in ("Conv", "Gemm") or producer.domain != "":
        return "its input is not produced by a Conv or Gemm"
    if len([o for o in bn.outputs if o]) != 1:
        return "training-mode outputs (running mean/var) are used"
    if any(name not in constants for name in bn.inputs[1:5]):
        return "scale, bias, mean or variance is not a constant"
    if len(consumers.get(bn.inputs[0], [])) != 1 or bn.inputs[0] in outputs:
        return f"the output of {producer.label!r} has other readers"
    weights = [n for n in producer.inputs[1:] if n]
    if any(name not in constants for name in weights):
        return f"the weights of {producer.label!r} are not constants"
    if producer.op_type == "Gemm":
        if attr_int(producer, "transA", 0):
            return "the Gemm transposes A"
        c = constants.get(producer.inputs[2]) if len(producer.inputs) > 2 else None
        n = _gemm_columns(producer, constants)
        if c is not None and c.size not in (1, n):
            return "the Gemm's C is not a per-column bias"
        if len(constants[bn.inputs[1]].reshape(-1)) != n:
            return "BN channels do not match the Gemm's output columns"
    return None


def _gemm_columns(gemm: Node, constants: dict[str, np.ndarray]) -> int:
    b = constants[gemm.inputs[1]]
    return int(b.shape[0] if attr_int(gemm, "transB", 0) else b.shape[1])


def _affine(bn: Node, constants: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Return (s, t) with BN(z) = s * z + t per channel, in float64."""
    gamma, beta, mean, var = (constants[n].astype(np.float64).reshape(-1) for n in bn.inputs[1:5])
    epsilon = attr_float(bn, "epsilon", 1e-5)
    scale = gamma / np.sqrt(var + epsilon)
    return scale, beta - mean * scale


def _fold(
    node: Node, scale: np.ndarray, shift: np.ndarray, constants: dict[str, np.ndarray],
    namer: Namer,
) -> tuple[Node, list[Tensor]]:
    w = constants[node.inputs[1]]
    dtype = w.dtype
    bias_name = node.inputs[2] if len(node.inputs) > 2 else ""
    old_bias = constants[bias_name].astype(np.float64) if bias_name else np.zeros(1)
    if node.op_type == "Conv":
        new_w = w.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1))
        new_b = old_bias.reshape(-1) * scale + shift
        attrs = node.attrs
    else:
        alpha = attr_float(node, "alpha", 1.0)
        beta = attr_float(node, "beta", 1.0)
        trans_b = attr_int(node, "transB", 0)
        column = scale.reshape(-1, 1) if trans_b else scale.reshape(1, -1)
        new_w = alpha * w.astype(np.float64) * column
        new_b = beta * old_bias.reshape(-1) * scale + shift
        attrs = Attrs({**dict(node.attrs), "alpha": 1.0, "beta": 1.0})
    w_name = namer(f"{node.inputs[1]}_bn_folded")
    b_name = namer(f"{node.label}_bn_folded_bias")
    tensors = [tensor(w_name, new_w.astype(dtype)), tensor(b_name, new_b.astype(dtype))]
    inputs = (node.inputs[0], w_name, b_name)
    return dataclasses.replace(node, inputs=inputs, attrs=attrs), tensors
