"""Fold an inference-mode BatchNormalization over a MatMul's columns into that MatMul.

LeViT-style exports write a Linear layer's batch norm as MatMul(x [B, S, K], W [K, N]) ->
[Add(b [N])] -> Flatten/Reshape to [B*S, N] -> BatchNormalization (2-D input: its channel axis
1 is the product's last axis) -> Reshape back. The layout op only merges the leading axes, so
every element keeps its column, and BN(z) = s * z + t per column folds into the product:
W' = W * s (per column), b' = b * s + t (b = 0 without the Add), computed in float64 and
stored in W's type. The result is MatMul(x, W') -> Add(b') -> [the same layout op], which
`quantize_float` makes one QMatMul with a bias. Applies when each value of the chain has one
reader and is no graph output, and W, b and the BN parameters are constants.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, tensor

__all__ = ["MatmulChain", "fold_into_matmul", "matmul_chain"]

LEADING_MERGES = frozenset({"Flatten", "Reshape"})


@dataclasses.dataclass(frozen=True)
class MatmulChain:
    """The nodes between a BN's input and the product it folds into (None: absent)."""

    matmul: Node
    bias_add: Node | None
    layout: Node | None


def matmul_chain(bn: Node, graph: Graph, constants: dict[str, np.ndarray],
                 readers: dict[str, list[Node]], outputs: set[str]) -> MatmulChain | None:
    """Return the chain a 2-D BatchNormalization `bn` folds into, or None (not this form)."""
    producers = graph.producers()
    bn_in = graph.type_of(bn.inputs[0])
    if bn_in is None or bn_in.shape is None or len(bn_in.shape) != 2:
        return None
    node = producers.get(bn.inputs[0])
    layout = None
    if node is not None and node.op_type in LEADING_MERGES and node.domain == "":
        layout, node = node, producers.get(node.inputs[0])
    bias_add = None
    if node is not None and node.op_type == "Add" and node.domain == "":
        bias_add, node = node, _computed_input_producer(node, constants, producers)
    if node is None or node.op_type != "MatMul" or node.domain != "":
        return None
    chain = MatmulChain(node, bias_add, layout)
    return chain if _foldable(chain, bn, graph, constants, readers, outputs) else None


def _computed_input_producer(add: Node, constants: dict[str, np.ndarray],
                             producers: dict[str, Node]) -> Node | None:
    computed = [name for name in add.inputs if name not in constants]
    return producers.get(computed[0]) if len(computed) == 1 and len(add.inputs) == 2 else None


def _foldable(chain: MatmulChain, bn: Node, graph: Graph, constants: dict[str, np.ndarray],
              readers: dict[str, list[Node]], outputs: set[str]) -> bool:
    weight = constants.get(chain.matmul.inputs[1])
    if weight is None or weight.ndim != 2 or weight.dtype.kind != "f":
        return False
    columns = weight.shape[1]
    if any(name not in constants for name in bn.inputs[1:5]):
        return False
    if any(constants[name].size != columns for name in bn.inputs[1:5]):
        return False
    if chain.bias_add is not None and _bias(chain, constants).size not in (1, columns):
        return False
    links = [n for n in (chain.matmul, chain.bias_add, chain.layout) if n is not None]
    if any(len(readers.get(n.outputs[0], [])) != 1 or n.outputs[0] in outputs for n in links):
        return False
    if chain.layout is not None:
        before = graph.type_of(chain.layout.inputs[0])
        if before is None or before.shape is None or before.shape[-1:] != (columns,):
            return False
    return len([o for o in bn.outputs if o]) == 1


def _bias(chain: MatmulChain, constants: dict[str, np.ndarray]) -> np.ndarray:
    assert chain.bias_add is not None
    name = next(n for n in chain.bias_add.inputs if n in constants)
    return constants[name]


def fold_into_matmul(chain: MatmulChain, bn: Node, scale: np.ndarray, shift: np.ndarray,
                     constants: dict[str, np.ndarray], namer: Namer
                     ) -> tuple[dict[int, list[Node]], set[int], list[Tensor]]:
    """Return (replacements by node id, removed node ids, new constants) that fold `bn`
    (per-column `scale`, `shift` in float64) into `chain`."""
    matmul = chain.matmul
    w = constants[matmul.inputs[1]]
    old_bias = (_bias(chain, constants).astype(np.float64).reshape(-1)
                if chain.bias_add is not None else np.zeros(1))
    w_name = namer(f"{matmul.inputs[1]}_bn_folded")
    b_name = namer(f"{matmul.label}_bn_folded_bias")
    tensors = [tensor(w_name, (w.astype(np.float64) * scale.reshape(1, -1)).astype(w.dtype)),
               tensor(b_name, (old_bias * scale + shift).astype(w.dtype))]
    product = dataclasses.replace(matmul, inputs=(matmul.inputs[0], w_name))
    biased = namer(f"{matmul.outputs[0]}_bn_folded") if chain.layout else bn.outputs[0]
    add = make_node("Add", (matmul.outputs[0], b_name), (biased,),
                    name=namer(f"{matmul.label}_bn_bias"))
    replacements = {id(matmul): [product, add]}
    removed = {id(bn)}
    if chain.bias_add is not None:
        removed.add(id(chain.bias_add))
    if chain.layout is not None:
        replacements[id(chain.layout)] = [dataclasses.replace(
            chain.layout, inputs=(biased, *chain.layout.inputs[1:]), outputs=(bn.outputs[0],))]
    return replacements, removed, tensors
