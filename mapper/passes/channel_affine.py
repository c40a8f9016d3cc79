"""Per-channel affine chains (float): y = s_c * x + t_c over axis 1 of x [N, C, *spatial].

Pre-activation batch norm (DenseNet: Concat -> BatchNormalization -> Relu -> Conv) and the
BatchNormalization + Mul(scale) + Add(bias) of Caffe2's exports (constants [C, 1, 1]) leave
element-wise ops that no fusion takes. A chain of such ops on one value is one affine map
per channel, which the vector unit computes as a QMul and a QAdd of per-channel constants:

- the steps: an inference BatchNormalization (constant gamma, beta, mean, var; one output):
  s = gamma / sqrt(var + eps), t = beta - mean * s; Mul(x, c) or Mul(c, x): s = c; Add(x, c)
  or Add(c, x): t = c; Sub(x, c): t = -c; Sub(c, x): s = -1, t = c; Div(x, c): s = 1 / c
  (c without zeros). c is a float constant of x's type whose shape broadcasts only along
  axis 1 (C or 1 there, 1 elsewhere, rank at most x's) and leaves x's shape unchanged;
- a chain: a step, then while the current value has exactly one reader (and is no graph
  output) that is a step, that reader. The composition s2 (s1 x + t1) + t2 is computed in
  float64 (s = s2 s1, t = s2 t1 + t2) and rounded once to float32;
- a chain is rewritten only when it holds a BatchNormalization or a constant of more than
  one element (a chain of scalars stays for the element-wise tables);
- after a float Conv or Gemm the chain becomes one BatchNormalization(x, s, t, 0, 1,
  epsilon=0) that `fold_batchnorm` (the next step) folds into the weights and bias, when
  its preconditions hold (x has no other reader, is no graph output, constant weights ...)
  and the chain is not a lone BatchNormalization already (left as it is);
- otherwise, for x of rank 4 or 3 (stored channel-last, as the vector unit's per-channel
  broadcast needs; [N, C, T]: a BatchNorm1d after an Add of Conv1d outputs) with more than
  one channel, it becomes Mul(x, s[1, C, 1, 1]) -> Add(t[1, C, 1, 1]) (rank 3: [1, C, 1]), the Mul left out when every s is 1 and the Add when every t is 0 (a
  chain that is the identity, or one Mul/Add of a [1, C, 1, 1] constant already, is left
  as it is); for x [M, C] (rank 2: C is the last axis, BatchNorm1d after a pooled or
  flattened Linear, LeViT) likewise with [C] constants (QMul and QAdd along the last axis),
  except a lone BatchNormalization that `fold_batchnorm` folds into a MatMul. `quantize_float` then quantizes x, the product and the sum
  (`channel_vector_index`), which the fusions make a QMul and a QAdd with a per-channel B.
  Other ranks, and one channel, are left as they are.

The new nodes take the names of the chain's first node (the Mul or the BatchNormalization)
and last node (the Add; a fresh name when the chain is one node); the chain's other nodes are
recorded fused into them. The chain's last value keeps its name.
"""

import dataclasses

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.fold_batchnorm import _why_not as batchnorm_refusal
from systolic.mapper.passes.fold_batchnorm_matmul import matmul_chain
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_int,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["channel_affine", "channel_vector"]

STEP_OPS = frozenset({"BatchNormalization", "Mul", "Add", "Sub", "Div"})
MUL_ADD_RANKS = (2, 3, 4)
"""Ranks of x whose chain becomes Mul -> Add: [N, C, H, W] and [N, C, T] (per-channel
constants [1, C, 1, 1], [1, C, 1]) and [M, C] (a BatchNorm1d after a Linear: constants
along the last axis, as LayerNorm's gamma)."""


@dataclasses.dataclass(frozen=True)
class _Chain:
    x: str
    nodes: tuple[Node, ...]
    scale: np.ndarray  # float64 [C]
    shift: np.ndarray  # float64 [C]
    per_channel: bool  # a BatchNormalization or a constant of more than one element


def channel_affine(model: Model, report: PassReport) -> Model:
    """Return `model` with every per-channel affine chain rewritten (module docstring)."""
    graph = model.graph
    constants = constants_of(graph)
    producers = graph.producers()
    constants.update(_dequantized_parameters(graph, constants, producers))
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}
    removed: set[int] = set()
    new_constants: list[Tensor] = []
    seen: set[int] = set()
    for node in graph.nodes:
        if id(node) in seen or node.op_type not in STEP_OPS or node.domain != "":
            continue
        chain = _chain(graph, node, constants, consumers, outputs)
        if chain is None:
            continue
        seen.update(id(n) for n in chain.nodes)
        if not chain.per_channel:
            continue
        producer = producers.get(chain.x)
        folding = _folding_batchnorm(chain, namer)
        if producer is not None and _folds(folding, producer, constants, consumers, outputs):
            if len(chain.nodes) == 1 and chain.nodes[0].op_type == "BatchNormalization":
                continue  # fold_batchnorm's own case
            new, tensors = folding
            into = f"{producer.op_type} {producer.label!r} (float)"
        elif (_rank(graph, chain.x) not in MUL_ADD_RANKS or len(chain.scale) < 2
              or _canonical(chain, constants) or _folds_into_matmul(chain, graph, constants,
                                                                    consumers, outputs)):
            continue
        else:
            new, tensors = _mul_add(chain, namer, _rank(graph, chain.x))
            if not new:
                continue
            into = " and ".join(f"{n.op_type} {n.label!r}" for n in new) + " (per channel)"
        replaced[id(chain.nodes[0])] = new
        removed.update(id(n) for n in chain.nodes[1:])
        new_constants += tensors
        kept = {n.name for n in new}
        report.fused([n.label for n in chain.nodes if n.name not in kept], into)
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, removed),
                                           new_constants))


def _dequantized_parameters(graph: Graph, constants: dict[str, np.ndarray],
                            producers: dict[str, Node]) -> dict[str, np.ndarray]:
    """Return the float32 values of a BatchNormalization's parameters that a
    DequantizeLinear of constants computes (onnxruntime's QDQ quantizes them too):
    (q - zero point) * scale, per tensor or along its axis, evaluated here so that the batch
    norm is a chain step like a float one."""
    values = {}
    for node in graph.nodes:
        if node.op_type != "BatchNormalization" or node.domain != "":
            continue
        for name in node.inputs[1:5]:
            dq = producers.get(name)
            if (dq is None or dq.op_type != "DequantizeLinear" or dq.domain != ""
                    or any(n not in constants for n in dq.inputs if n)):
                continue
            q = constants[dq.inputs[0]].astype(np.float64)
            scale = constants[dq.inputs[1]].astype(np.float64)
            zero = (constants[dq.inputs[2]].astype(np.float64)
                    if len(dq.inputs) > 2 and dq.inputs[2] else np.zeros(scale.shape))
            if q.ndim != 1 or scale.size not in (1, q.size) or zero.size != scale.size:
                continue
            values[name] = ((q - zero.reshape(-1)) * scale.reshape(-1)).astype(np.float32)
    return values


def _chain(graph: Graph, first: Node, constants: dict[str, np.ndarray],
           consumers: dict[str, list[Node]], outputs: set[str]) -> _Chain | None:  # fmt: skip
    """Return the chain starting at `first` (None when `first` is no step)."""
    step = _step(graph, first, constants)
    if step is None:
        return None
    x, scale, shift, per_channel = step
    nodes = [first]
    while True:
        value = nodes[-1].outputs[0]
        readers = consumers.get(value, [])
        if len(readers) != 1 or value in outputs:
            break
        found = _step(graph, readers[0], constants)
        if found is None or found[0] != value:
            break
        _, s, t, more = found
        scale, shift = s * scale, s * shift + t
        per_channel = per_channel or more
        nodes.append(readers[0])
    return _Chain(x, tuple(nodes), scale, shift, per_channel)


def _step(graph: Graph, node: Node, constants: dict[str, np.ndarray]
          ) -> tuple[str, np.ndarray, np.ndarray, bool] | None:  # fmt: skip
    """Return (x, s [C], t [C], per channel) of a step `node`, float64, or None."""
    if node.op_type not in STEP_OPS or node.domain != "" or not node.inputs:
        return None
    if node.op_type == "BatchNormalization":
        return _batchnorm_step(graph, node, constants)
    if len(node.inputs) != 2 or len([o for o in node.outputs if o]) != 1:
        return None
    for index in (0, 1):
        x, c = node.inputs[index], node.inputs[1 - index]
        if x in constants or c not in constants:
            continue
        if index == 1 and node.op_type == "Div":
            return None
        vector = channel_vector(graph, x, constants[c], node.outputs[0])
        if vector is None:
            return None
        ones, zeros = np.ones_like(vector), np.zeros_like(vector)
        if node.op_type == "Div" and not np.all(vector != 0):
            return None
        if node.op_type == "Div":
            return x, 1 / vector, zeros, constants[c].size > 1
        s, t = {"Mul": (vector, zeros), "Add": (ones, vector),
                "Sub": (ones, -vector) if index == 0 else (-ones, vector)}[node.op_type]
        return x, s, t, constants[c].size > 1
    return None


def _batchnorm_step(graph: Graph, node: Node, constants: dict[str, np.ndarray]
                    ) -> tuple[str, np.ndarray, np.ndarray, bool] | None:  # fmt: skip
    if (len(node.inputs) < 5 or any(n not in constants for n in node.inputs[1:5])
            or len([o for o in node.outputs if o]) != 1 or attr_int(node, "training_mode", 0)):
        return None
    x = node.inputs[0]
    found, out = graph.type_of(x), graph.type_of(node.outputs[0])
    if found is None or out is None or found.dtype != DataType.FLOAT or found.shape is None:
        return None
    shape = found.shape
    if len(shape) < 2 or not isinstance(shape[1], int) or out.shape != shape:
        return None
    params = [constants[n].astype(np.float64).reshape(-1) for n in node.inputs[1:5]]
    if any(p.size != shape[1] for p in params):
        return None
    gamma, beta, mean, var = params
    scale = gamma / np.sqrt(var + attr_float(node, "epsilon", 1e-5))
    if not np.all(np.isfinite(scale)):
        return None
    return x, scale, beta - mean * scale, True


def channel_vector(graph: Graph, x: str, value: np.ndarray, result: str) -> np.ndarray | None:
    """Return constant `value` as a float64 [C] vector along axis 1 of float x [N, C, ...]
    (rank at least 2, static C), or None when it varies along another axis, has more axes
    than x, another type, or broadcasts x up (`result`, the op's output, must keep x's
    shape)."""
    found, out = graph.type_of(x), graph.type_of(result)
    if found is None or out is None or found.shape is None or found.dtype != DataType.FLOAT:
        return None
    shape = found.shape
    if (len(shape) < 2 or not isinstance(shape[1], int) or out.shape != shape
            or value.dtype != np.float32 or value.ndim > len(shape)
            or not np.all(np.isfinite(value))):
        return None
    aligned = (1,) * (len(shape) - value.ndim) + value.shape
    channels = shape[1]
    if aligned[1] not in (1, channels) or any(d != 1 for i, d in enumerate(aligned) if i != 1):
        return None
    return np.broadcast_to(value.astype(np.float64).reshape(-1), (channels,)).copy()


def _rank(graph: Graph, name: str) -> int:
    found = graph.type_of(name)
    return -1 if found is None or found.shape is None else len(found.shape)


def _canonical(chain: _Chain, constants: dict[str, np.ndarray]) -> bool:
    """True for a chain that is one Mul/Add of a [1, C, 1, 1] or [1, C, 1] (rank 2: [C])
    constant already."""
    node = chain.nodes[0]
    if len(chain.nodes) > 1 or node.op_type not in ("Mul", "Add"):
        return False
    c = next(constants[n] for n in node.inputs if n != chain.x)
    return (c.ndim in (3, 4) and c.shape[0] == 1) or c.ndim == 1


def _folds_into_matmul(chain: _Chain, graph: Graph, constants: dict[str, np.ndarray],
                       consumers: dict[str, list[Node]], outputs: set[str]) -> bool:
    """True for a lone 2-D BatchNormalization that `fold_batchnorm` folds into a MatMul
    (`fold_batchnorm_matmul`): left for it."""
    (first, *rest) = chain.nodes
    return (not rest and first.op_type == "BatchNormalization"
            and matmul_chain(first, graph, constants, consumers, outputs) is not None)


def _folds(folding: tuple[list[Node], list[Tensor]], producer: Node,
           constants: dict[str, np.ndarray], consumers: dict[str, list[Node]],
           outputs: set[str]) -> bool:  # fmt: skip
    """True when `fold_batchnorm` folds the chain's BatchNormalization into `producer`."""
    (bn,), tensors = folding
    known = {**constants, **{t.name: t.data for t in tensors}}
    return batchnorm_refusal(bn, producer, known, consumers, outputs) is None


def _folding_batchnorm(chain: _Chain, namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """BatchNormalization(x, s, t, 0, 1, epsilon=0): the chain, for `fold_batchnorm`."""
    base = chain.nodes[0].name
    names = tuple(namer(f"{base}_affine_{p}") for p in ("scale", "shift", "mean", "var"))
    values = (chain.scale, chain.shift, np.zeros_like(chain.scale), np.ones_like(chain.scale))
    tensors = [tensor(n, v.astype(np.float32)) for n, v in zip(names, values, strict=True)]
    bn = make_node("BatchNormalization", (chain.x, *names), (chain.nodes[-1].outputs[0],),
                   name=base, attrs={"epsilon": 0.0})
    return [bn], tensors


def _mul_add(chain: _Chain, namer: Namer, rank: int) -> tuple[list[Node], list[Tensor]]:
    """Mul(x, s) -> Add(t) of [1, C, 1, 1] constants (x of `rank` 3: [1, C, 1]; 2: [C],
    along its last axis), either left out when neutral."""
    shape = (1, len(chain.scale)) + (1,) * (rank - 2) if rank > 2 else (len(chain.scale),)
    scale, shift = chain.scale.astype(np.float32), chain.shift.astype(np.float32)
    steps = [(op, v) for op, v, neutral in (("Mul", scale, 1.0), ("Add", shift, 0.0))
             if not np.all(v == neutral)]
    if not steps:
        return [], []
    first, last = chain.nodes[0], chain.nodes[-1]
    names = [first.name, last.name if len(chain.nodes) > 1 else namer(f"{first.name}_shift")]
    nodes, tensors, value = [], [], chain.x
    for index, (op, v) in enumerate(steps):
        c_name = namer(f"{first.name}_channel_{'scale' if op == 'Mul' else 'shift'}")
        tensors.append(tensor(c_name, v.reshape(shape)))
        out = last.outputs[0] if index == len(steps) - 1 else namer(f"{first.name}_scaled")
        name = names[0] if index == 0 else names[1]
        nodes.append(make_node(op, (value, c_name), (out,), name=name))
        value = out
    return nodes, tensors
