"""The float island of a dynamically quantized model (onnxruntime's `quantize_dynamic`), and
its post-training quantization.

`quantize_dynamic` quantizes only the products with constant weights (DynamicQuantizeLinear
-> MatMulInteger -> Cast -> Mul by the scales' product, DynamicQuantizeLSTM); everything
between them stays float: the attention products Q.K^T and scores.V, their scaling, Softmax,
GELU, bias and residual Adds, LayerNorm, an unrolled DynamicQuantizeLSTM's gate functions.
This module quantizes that float part after training, as `quantize_float` quantizes a float
model (calibrated on the calibration inputs), so that it runs on the array (QMatMul), the
vector unit (QAdd, QMul, QSoftmax) and the activation tables (QTable). The dynamic products
keep their dynamic semantics (`fuse_integer_matmul`: QMatMulInt on the array, the activation's
scale and zero point computed on the host by DynamicQuantizeLinear).

- The dynamic machinery stays as written, on the host (with that reason in the report):
  DynamicQuantizeLinear, MatMulInteger, ConvInteger, Cast, every node computing from a
  DynamicQuantizeLinear's scale or zero point (the scales' product), and each product's
  float epilogue, the Mul of its Cast result by the scales' product: the accelerator
  requantizes with compile-time multipliers, and a_scale is known only at run time.
- The island (`dynamic_island`): every other node of the default domain whose results are
  all float, except the nodes in `done` (a float recurrent island quantized already).
- Entry border: a product's float result (the epilogue Mul's) that the island reads is an
  *entry*: the host computes it in float32 as the model does (int32 sum -> Cast -> times
  a_scale * w_scale) and quantizes it with static parameters calibrated on the calibration
  inputs (a QuantizeLinear on the host: round half to even, saturate), symmetric when it
  reaches an attention product (`quantize_float`'s rule). From there the island runs on
  integers. A bias Add after it (a float vector along the last axis, the epilogue's only
  reader) is in the island: the vector is quantized int8 per tensor, symmetric
  (`layernorm_ptq.quantize_vector`, as LayerNorm's beta), its result is an entry, and the
  Add becomes a QAdd of a constant vector (b_broadcast); another bias (per channel, after
  a ConvInteger) stays on the host with the epilogue and the entry is its result. Entries too, so that the fusions
  take what `quantize_float`'s own rules
  leave float (`_entries_of`): a Softmax's input; the inputs and result of an Add or Mul of
  a tensor and one along its last axis (the attention mask added to the scores: QAdd with a
  broadcast B); a Cast's result (an integer graph input made float) read by an element-wise
  function of scalar constants (the mask's (1 - m) * -10000: one table).
- Exit border: an island value read by a DynamicQuantizeLinear (the next product's input) is
  quantized like any activation of the island; the DynamicQuantizeLinear (host) then reads
  its dequantized value, computes its range and quantizes it again, as in the model. Every
  other reader of a quantized value reads the dequantized value too.
- What is ours: the island's quantization is not in the model (partly float,
  `quantizes_dynamic_island`): results are compared with the model as written by cosine, as
  a float model's are; the dynamic products' integer arithmetic is unchanged.
"""

import dataclasses
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from systolic.ir import DataType, Graph, Model, Node
from systolic.mapper.binding import bind_graph
from systolic.mapper.dim_binding import DEFAULT_MAX_TENSOR_BYTES
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.graph_tools import Namer, constants_of, make_node, tensor
from systolic.mapper.passes.layernorm_ptq import quantize_vector
from systolic.mapper.passes.merge_dynamic_products import merge_dynamic_products
from systolic.mapper.passes.quantize_float import QDQ_VERSION, quantize_float
from systolic.mapper.passes.report import DYNAMIC_SCALING, HOST, PassReport
from systolic.mapper.passes.unroll_recurrent import DYNAMIC_LSTM, unrolls
from systolic.mapper.shape_inference import infer_shapes
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast

__all__ = ["DynamicIsland", "dynamic_island", "fusion_entries", "quantize_dynamic_island",
           "quantizes_dynamic_island"]

_DYNAMIC_QUANTIZER = "DynamicQuantizeLinear"
_INTEGER_PRODUCTS = frozenset({"MatMulInteger", "ConvInteger"})
_CONVERSIONS = frozenset({"Cast", "QuantizeLinear", "DequantizeLinear", _DYNAMIC_QUANTIZER})


@dataclasses.dataclass(frozen=True)
class DynamicIsland:
    """The island's node names, its entries (the values quantized first, in graph order),
    its bias Adds ({node name: the index of its constant vector}) and the dynamic
    machinery's scaling nodes that stay on the host ({node name: why})."""

    nodes: frozenset[str]
    entries: tuple[str, ...]
    biases: Mapping[str, int]
    host: Mapping[str, str]


def dynamic_island(model: Model, done: Collection[str] = ()) -> DynamicIsland | None:
    """Return the float island of `model` (module docstring), or None when the model holds
    no DynamicQuantizeLinear or its island is empty."""
    graph = model.graph
    if not any(n.domain == "" and n.op_type == _DYNAMIC_QUANTIZER for n in graph.nodes):
        return None
    machinery, products, biases = _machinery(graph)
    nodes = frozenset(
        node.name for node in graph.nodes
        if node.domain == "" and node.name not in machinery and node.name not in done
        and node.op_type not in _CONVERSIONS and _all_float(graph, node))
    if not nodes:
        return None
    consumers = graph.consumers()
    entries = [value for value in products
               if any(reader.name in nodes for reader in consumers.get(value, []))]
    constants = constants_of(graph)
    producers = graph.producers()
    host: dict[str, str] = {}
    for node in graph.nodes:
        if node.name in nodes:
            entries += _entries_of(graph, node, constants, producers)
            if node.name in biases:
                entries.append(node.outputs[0])
        elif node.name in machinery and node.op_type in ("Mul", "Add"):
            host[node.label] = (_EPILOGUE_WHY if _epilogue_source(node, producers)
                                else _SCALES_WHY)
        elif node.op_type == "Cast" and _reads_product(node, producers):
            host[node.label] = _CAST_WHY
    return DynamicIsland(nodes, tuple(dict.fromkeys(entries)),
                         {name: index for name, index in biases.items() if name in nodes}, host)


_EPILOGUE_WHY = (
    f"{DYNAMIC_SCALING}: scales MatMulInteger's int32 result by a_scale * w_scale, known "
    "only at run time (DynamicQuantizeLinear's scale); the accelerator requantizes with "
    "compile-time multipliers only, so this float step runs on the host (its result is "
    "quantized for the accelerator's layers after it)")
_CAST_WHY = (
    f"{DYNAMIC_SCALING}: converts MatMulInteger's int32 result to float for its scaling by "
    "a_scale * w_scale, known only at run time: runs on the host")
_SCALES_WHY = (
    f"{DYNAMIC_SCALING}: computes from DynamicQuantizeLinear's run-time scale or zero point "
    "(a per-inference scalar): runs on the host")


def fusion_entries(graph: Graph) -> tuple[str, ...]:
    """The values around every node of `graph` that `_entries_of` names, in graph order: for
    a float model's post-training quantization (its attention mask and the Softmax after it,
    as in a dynamic model's island)."""
    constants, producers = constants_of(graph), graph.producers()
    found = [value for node in graph.nodes if node.domain == ""
             for value in _entries_of(graph, node, constants, producers)]
    return tuple(dict.fromkeys(found))


def _entries_of(graph: Graph, node: Node, constants: Mapping[str, np.ndarray],
                producers: Mapping[str, Node]) -> list[str]:
    """The values around island node `node` that `quantize_float`'s own rules would leave
    float but the fusions take quantized: a Softmax's input; an Add or Mul of two computed
    tensors, one along the other's last axis (the attention mask [1, 1, 1, S] added to the
    scores): its inputs and result (-> QAdd, QMul with a broadcast B); a Cast's result
    (an integer input made float) that an element-wise function of scalar constants
    reads (the mask's (1 - m) * -10000: -> one table); a Cast to an integer type (RoBERTa's
    position ids) stays as it is; a Cast's float result that a Concat copies (a bool mask made
    float, then expanded to the scores' shape by `expand_as_concat`), so the Concat moves
    integers."""
    computed = [name for name in node.inputs if name and name not in constants]
    if node.op_type == "Softmax":
        return [node.inputs[0]]
    if node.op_type == "Concat" and computed and all(
            _float_cast(graph, name, producers) for name in computed):
        return list(dict.fromkeys(computed))
    if node.op_type in ("Add", "Mul") and len(computed) == 2 and _broadcast(graph, *computed):
        return [*computed, node.outputs[0]]
    if (node.op_type in ELEMENTWISE and len(computed) == 1
            and all(constants[name].size == 1 for name in node.inputs
                    if name and name in constants)
            and _float_cast(graph, computed[0], producers)):  # not an integer Cast (ids)
        return [computed[0]]
    return []


def _float_cast(graph: Graph, name: str, producers: Mapping[str, Node]) -> bool:
    """True when `name` is the float result of a Cast."""
    source = producers.get(name)
    made = graph.type_of(name)
    return (source is not None and source.op_type == "Cast" and source.domain == ""
            and made is not None and made.dtype == DataType.FLOAT)


def _broadcast(graph: Graph, a: str, b: str) -> bool:
    """True for two float tensors of static shapes of which one is along the other's last
    axis [1, ..., H] (and not the same shape)."""
    shapes = []
    for name in (a, b):
        found = graph.type_of(name)
        if (found is None or found.dtype != DataType.FLOAT or found.shape is None
                or not found.is_static):
            return False
        shapes.append(tuple(int(d) for d in found.shape if isinstance(d, int)))
    return shapes[0] != shapes[1] and (last_axis_broadcast(shapes[0], shapes[1])
                                       or last_axis_broadcast(shapes[1], shapes[0]))


def quantize_dynamic_island(
    model: Model,
    report: PassReport,
    *,
    calibration: Sequence[Mapping[str, np.ndarray]] | None = None,
    seed: int = 0,
    done: Collection[str] = (),
) -> Model:
    """Return `model` with the dynamic products of one DynamicQuantizeLinear's result merged
    (`merge_dynamic_products`) and its dynamic island quantized (`quantize_float` over the
    island, its entries first), or `model` itself when neither applies."""
    merged = merge_dynamic_products(model, report)
    if merged is not model:
        model = _typed(merged)
    island = dynamic_island(model, done)
    if island is None:
        return model
    for label, why in island.host.items():
        if report.tracks(label):
            report.record(label, HOST, reason=why)
        else:  # a node the passes made (an unrolled DynamicQuantizeLSTM's scaling)
            report.created(label, why)
    model = _quantized_biases(model, island.biases)
    return quantize_float(model, report, calibration=calibration, seed=seed,
                          region=island.nodes, entries=island.entries)


def _typed(model: Model) -> Model:
    """`model` with its nodes bound to their operator versions and its types inferred again
    (the pipeline's `finalize`, which this module cannot import: the pipeline imports it)."""
    graph, ops = bind_graph(dataclasses.replace(model.graph, value_info=()), dict(model.opsets))
    graph = infer_shapes(graph, ops, max_tensor_bytes=DEFAULT_MAX_TENSOR_BYTES)
    return dataclasses.replace(model, graph=graph)


def _quantized_biases(model: Model, biases: Mapping[str, int]) -> Model:
    """Return `model` with each bias Add of `biases` ({node name: constant input index})
    reading its constant vector through a DequantizeLinear of its int8 per-tensor
    quantization (`quantize_vector`: symmetric, max|b| / 127), so that the fusions make the
    Add a QAdd of a constant vector along the last axis (b_broadcast)."""
    if not biases:
        return model
    graph = model.graph
    constants = constants_of(graph)
    namer = Namer(graph)
    nodes: list[Node] = []
    tensors = []
    for node in graph.nodes:
        index = biases.get(node.name)
        if index is not None:
            name = node.inputs[index]
            q, scale = quantize_vector(constants[name])
            q_name, s_name = namer(f"{name}_quantized"), namer(f"{name}_scale")
            z_name, dq_name = namer(f"{name}_zero_point"), namer(f"{name}_dequantized")
            tensors += [tensor(q_name, q), tensor(s_name, np.array(scale, np.float32)),
                        tensor(z_name, np.array(0, np.int8))]
            nodes.append(make_node("DequantizeLinear", (q_name, s_name, z_name), (dq_name,),
                                   name=namer(f"{name}_DequantizeLinear"),
                                   version=QDQ_VERSION))
            inputs = list(node.inputs)
            inputs[index] = dq_name
            node = dataclasses.replace(node, inputs=tuple(inputs))
        nodes.append(node)
    graph = dataclasses.replace(graph, nodes=tuple(nodes),
                                initializers=graph.initializers + tuple(tensors))
    return dataclasses.replace(model, graph=graph)


def quantizes_dynamic_island(model: Model) -> bool:
    """True when the passes quantize a float part of the dynamically quantized `model` (as
    loaded, before unrolling): it holds a DynamicQuantizeLSTM that unrolls (its gate
    functions) or a
    DynamicQuantizeLinear beside a float node the island would make integer (a product of
    two computed tensors, a Softmax, an element-wise function or an Add/Mul of two
    computed tensors). Its results then differ from the model as written by that
    quantization, as a float model's do."""
    graph = model.graph
    if any((n.domain, n.op_type) == DYNAMIC_LSTM and unrolls(n, model) for n in graph.nodes):
        return True
    island = dynamic_island(model)
    if island is None:
        return False
    constants = constants_of(graph)
    return any(_quantizable(node, constants) for node in graph.nodes if node.name in island.nodes)


def _quantizable(node: Node, constants: Mapping[str, np.ndarray]) -> bool:
    computed = [name for name in node.inputs if name and name not in constants]
    if node.op_type in ("MatMul", "Add", "Mul"):
        return len(computed) == 2
    return node.op_type == "Softmax" or (node.op_type in ELEMENTWISE and len(computed) == 1
                                         and node.op_type not in ("Add", "Mul", "Sub", "Div"))


def _machinery(graph: Graph) -> tuple[set[str], list[str], dict[str, int]]:
    """Return the names of the dynamic machinery's nodes, the float results of the dynamic
    products (the epilogue Muls' results, in graph order) and their bias Adds of a constant
    vector along the last axis ({node name: the constant's input index}; module
    docstring)."""
    constants = constants_of(graph)
    consumers = graph.consumers()
    producers = graph.producers()
    machinery: set[str] = set()
    scalar_values: set[str] = set()  # a DynamicQuantizeLinear's scale and zero point, and
    products: list[str] = []  # what is computed from them
    biases: dict[str, int] = {}
    for node in graph.nodes:
        if node.domain != "":
            continue
        if node.op_type == _DYNAMIC_QUANTIZER:
            machinery.add(node.name)
            scalar_values.update(out for out in node.outputs[1:] if out)
        elif node.op_type in _INTEGER_PRODUCTS:
            machinery.add(node.name)
        elif any(name in scalar_values for name in node.inputs) and _epilogue_source(
                node, producers) is None:
            machinery.add(node.name)
            scalar_values.update(out for out in node.outputs if out)
        elif node.op_type == "Mul" and _epilogue_source(node, producers) is not None:
            machinery.add(node.name)
            result = node.outputs[0]
            bias = _bias_add(result, consumers, constants)
            if bias is not None and _along_last_axis(graph, result, constants[bias[1]]):
                biases[bias[0].name] = bias[0].inputs.index(bias[1])
            elif bias is not None:  # a per-channel bias of a ConvInteger: stays on the host
                machinery.add(bias[0].name)
                result = bias[0].outputs[0]
            products.append(result)
    return machinery, products, biases


def _epilogue_source(node: Node, producers: Mapping[str, Node]) -> str | None:
    """Return the Cast result an epilogue Mul scales (a Cast of a MatMulInteger or
    ConvInteger result), or None when `node` is not such a Mul."""
    if node.op_type != "Mul":
        return None
    for name in node.inputs:
        cast = producers.get(name)
        if cast is None or cast.op_type != "Cast" or not cast.inputs:
            continue
        source = producers.get(cast.inputs[0])
        if source is not None and source.op_type in _INTEGER_PRODUCTS:
            return name
    return None


def _reads_product(node: Node, producers: Mapping[str, Node]) -> bool:
    """True when `node` reads a MatMulInteger's or ConvInteger's result."""
    source = producers.get(node.inputs[0]) if node.inputs else None
    return source is not None and source.domain == "" and source.op_type in _INTEGER_PRODUCTS


def _bias_add(value: str, consumers: Mapping[str, list[Node]],
              constants: Mapping[str, np.ndarray]) -> tuple[Node, str] | None:
    """(the Add of a constant that is the only reader of `value`, that constant's name), or
    None."""
    readers = consumers.get(value, [])
    if len(readers) != 1 or readers[0].domain != "" or readers[0].op_type != "Add":
        return None
    others = [name for name in readers[0].inputs if name != value]
    return (readers[0], others[0]) if len(others) == 1 and others[0] in constants else None


def _along_last_axis(graph: Graph, value: str, bias: np.ndarray) -> bool:
    """True for a float32 vector of more than one value along `value`'s last axis."""
    found = graph.type_of(value)
    if (bias.dtype != np.float32 or bias.size < 2 or found is None or found.shape is None
            or not found.is_static):
        return False
    shape = tuple(int(d) for d in found.shape if isinstance(d, int))
    return last_axis_broadcast(shape, bias.shape)


def _all_float(graph: Graph, node: Node) -> bool:
    outputs = [out for out in node.outputs if out]
    if not outputs:
        return False
    for out in outputs:
        found = graph.type_of(out)
        if found is None or found.dtype != DataType.FLOAT:
            return False
    return True
