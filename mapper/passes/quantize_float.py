"""Post-training quantization of a float model, expressed as QuantizeLinear/DequantizeLinear
pairs that `fuse_qdq` then fuses (the same form onnxruntime's QDQ quantizer writes).

- Weights of Conv, Gemm and MatMul (constants): int8, symmetric (zero point 0), per output
  channel: scale = max|W| / 127 over the channel (1.0 for an all-zero channel), values
  round_half_to_even(W / scale) clamped to [-127, 127]. They are read through a
  DequantizeLinear (axis = the output-channel axis). A batched MatMul weight [..., K, N] is
  quantized per column N, one scale shared by every batch entry (axis = its last axis).
  Biases stay float: the fusion quantizes them with scale input_scale * weight_scale.
- A MatMul of two computed tensors (attention: Q·K^T, scores·V) quantizes both inputs
  symmetric, uint8 with zero point 128 (like every other activation, uint8; the LOAD's
  flip_sign makes them int8 with zero point 0): scale = max(|min|, |max|) / 127 (1.0 when both
  are 0). The zero point's correction Σ_k B[k, n]·zp could not be folded into a constant bias
  when B is computed. The symmetric parameters go to the value's source: the layout ops
  (Reshape, Transpose) between a projection and the product share them.
- Activations: uint8, asymmetric, per tensor, from the (min, max) over the calibration set
  widened to include 0: scale = (max - min) / 255 (1.0 when both are 0), zero point =
  round_half_to_even(-min / scale). The quantized activations are the inputs of Conv, Gemm,
  MatMul, Add (and two-input Sum: two computed inputs of the same shape), AveragePool and GlobalAveragePool, and
  their results; a Relu or Clip (constant bounds) that is the only reader of a Conv, Gemm,
  MatMul or Add is absorbed: the quantized result is the activation's output (likewise the
  Add of a constant bias after a MatMul). MaxPool and
  the layout ops (Flatten, Reshape, Transpose, Squeeze, Unsqueeze, and Gather of constant
  indices: an unrolled recurrent layer's time steps) of a quantized value keep its
  parameters. A Concat of quantized values gets one set of parameters for its inputs and
  output (calibrated on the output, which covers every input; DenseNet's chained concats end
  up sharing the block's last one), so it stays a layout op instead of a requantization on
  the host.
- Element-wise activations and products (`ptq_regions`): the result of an element-wise
  region fed by one quantized value (Sigmoid, Tanh, HardSwish, HardSigmoid, SiLU = x *
  Sigmoid(x), Gelu and its erf/tanh chains, LeakyRelu, Elu, Mish, Softplus ..., scalar
  constants only) is quantized, calibrated like any activation, so the fusions make it one
  systolic.QTable; a Mul of two computed tensors (same shape, or one per channel of the
  other: squeeze-excitation) has its inputs and result quantized (-> systolic.QMul). A
  region with several results read outside it stays float; the report notes why.
- Softmax (static shape, over contiguous rows: the last axis from opset 13, any axis before)
  of a quantized value (a product's scores, say): its output is quantized too (the input's
  low end no lower than where the exp table underflows for every calibration row,
  `softmax_ranges`: a mask's -10000 added by a quantized Add does not set the scale), so
  that `fuse_softmax` makes it one systolic.QSoftmax (SOFTMAX on the vector unit, within
  one step of the float softmax of the quantized input). A Softmax of a float value (a
  host Add of a broadcast mask) stays float: its input's range would come from the
  calibration set's masks alone (zeros for integer inputs by default).
- Layer normalization over the last axis (`layernorm_ptq`: the decomposed ReduceMean ...
  Div chain, or LayerNormalization(x, 1) of `split_layernorm`): its input and its normalized
  result are quantized (calibrated like any activation), and a Mul (gamma) and an Add (beta)
  of a float constant along the last axis after it have their results quantized and the
  constant read through a DequantizeLinear of its int8 per-tensor quantization, so that
  `fuse_layernorm` makes one systolic.QLayerNorm and `fuse_qdq` a QMul and a QAdd.
- A per-channel affine op (`channel_affine_ptq`: `channel_affine`'s Mul or Add of a float
  [1, C, 1, 1] constant on a rank-4 activation, pre-activation batch norm): its input and
  result are quantized (a Relu or Clip reading only the result absorbed) and the constant
  read through a DequantizeLinear of its int8 per-tensor quantization, shape kept, so that
  `fuse_qdq` makes a QMul or a QAdd with a per-channel B.
- Degenerate ranges: a scale below float32's smallest normal number (0, denormal) becomes 1
  with zero point 0 (onnxruntime's quantizer does the same).
- Calibration: the caller's feeds, or `calibration.random_calibration(graph, seed)` (8 seeded
  standard-normal inputs) when none is given.
- A float island of a quantized model (`region`: node names, the unrolled recurrent layers
  of `recurrent_island`): only the island's nodes are planned (every rule above, applied to
  them); a value they read that a DequantizeLinear produces is quantized already (no new
  pair); a value of the island read by a QuantizeLinear outside it takes that node's
  parameters (`recurrent_island.exit_params`), the values sharing its parameters with it,
  and a value float layout ops outside it make from a DequantizeLinear's result takes that
  node's (`entry_params`).
"""

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from systolic.errors import ModelError
from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.calibration import calibrate, random_calibration
from systolic.mapper.passes.channel_affine_ptq import (
    channel_vector_index,
    keeps_shape,
    quantized_by_model,
)
from systolic.mapper.passes.constant_layout import core, spread
from systolic.mapper.passes.constant_operand_ptq import (
    constant_operand_index,
    quantized_operand,
)
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    attr_str,
    constants_of,
    make_node,
    tensor,
)
from systolic.mapper.passes.layernorm_ptq import layernorm_plans, quantize_vector
from systolic.mapper.passes.ptq_regions import elementwise_region, is_product_of_computed
from systolic.mapper.passes.quant_params import is_activation, weight_scale_floor
from systolic.mapper.passes.recurrent_island import Params, entry_params, exit_params
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.softmax_ranges import RowFloors

__all__ = ["QUANTIZED_OP_TYPES", "is_quantized", "quantize_float"]

QUANTIZED_OP_TYPES = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
    "QLinearMatMul", "MatMulInteger", "ConvInteger", "QGemm", "QLinearAdd", "QLinearMul",
    "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSigmoid",
    "QLinearLeakyRelu", "QLinearSoftmax",
})
"""Operators that show a model is quantized already (it is then left to the fusions)."""

COMPUTE_OPS = frozenset({"Conv", "Gemm", "MatMul", "Add", "Sub", "Sum", "AveragePool",
                         "GlobalAveragePool"})
PASS_THROUGH_OPS = frozenset({"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
                              "Unsqueeze"})
SELECTING_OPS = frozenset({"Slice", "Split", "Resize", "Upsample"})
"""Ops that pass through (keep their input's parameters) when their other inputs are constant
(and a Resize/Upsample is nearest): `dequantize_after_layout` then runs them on integers."""
WEIGHT_MAX = 127
SYMMETRIC_ZERO_POINT = 128
QDQ_VERSION = 13
"""The inserted QuantizeLinear/DequantizeLinear are bound to version 13 (per-axis support)
whatever opset the model imports: older models (opset 9) have no such operators."""


def is_quantized(model: Model) -> bool:
    """True when the model already holds quantization operators."""
    return any(node.op_type in QUANTIZED_OP_TYPES for node in model.graph.nodes)


WeightGuard = tuple[float | None, float | None, np.ndarray | None]
"""(x_scale, y_scale, bias) of a weighted node, for `weight_scale_floor` (None: unknown)."""


@dataclasses.dataclass
class _Plan:
    values: list[str]  # activations to quantize, in discovery order
    shared: dict[str, str]  # value -> the value whose parameters it reuses
    weights: dict[str, int]  # node name -> channel axis of its weight (input 1)
    symmetric: set[str] = dataclasses.field(default_factory=set)  # sources quantized symmetric
    results: dict[str, str] = dataclasses.field(default_factory=dict)  # node -> quantized output
    softmax_inputs: list[Node] = dataclasses.field(default_factory=list)  # their only reader
    vectors: dict[str, int] = dataclasses.field(default_factory=dict)  # node -> LN gamma/beta
    operands: dict[str, tuple[int, tuple[int, ...]]] = dataclasses.field(
        default_factory=dict)  # node -> (index, shape) of its whole-tensor constant
    cuts: dict[str, float] = dataclasses.field(
        default_factory=dict)  # whole-tensor constant -> its softmax floor (a constant mask)


def quantize_float(
    model: Model,
    report: PassReport,
    *,
    calibration: Sequence[Mapping[str, np.ndarray]] | None = None,
    seed: int = 0,
    region: Collection[str] | None = None,
    entries: Sequence[str] = (),
) -> Model:
    """Return `model` with quantization inserted as QuantizeLinear/DequantizeLinear pairs;
    `region` (node names): quantize only those nodes' float island (module docstring);
    `entries`: float values made outside it that it reads, quantized as activations first
    (a dynamic product's float result: `dynamic_island`)."""
    graph = model.graph
    plan = _plan(graph, report, region, entries)
    if not plan.values and not plan.vectors and not plan.operands:
        return model  # (a constant B alone: a QDQ model's Mul between its own DQ and Q)
    _check_finite_weights(graph, plan)
    fixed = {} if region is None else _adopt_borders(graph, plan, region)
    measured = [v for v in plan.values if _root(plan, v) not in fixed]
    floors = RowFloors(plan.softmax_inputs, graph)  # taken in the calibration runs themselves
    ranges: dict[str, tuple[float, float]] = {}
    if measured:
        feeds = list(calibration) if calibration is not None else random_calibration(graph,
                                                                                     seed)
        ranges = _group_ranges(plan, calibrate(model, feeds, measured, also=floors))
    for name, floor in floors.floors.items():
        if name in ranges and name not in plan.shared:  # the mask's values cut (softmax_ranges)
            ranges[name] = (max(ranges[name][0], floor), ranges[name][1])
    _constant_cuts(graph, plan, floors)
    params: dict[str, Params] = {}
    for value in plan.values:
        source = _root(plan, value)
        low_high = ranges.get(source, (0.0, 0.0))
        if source in fixed:
            params[value] = fixed[source]
        elif source in plan.symmetric:
            params[value] = _symmetric_params(*low_high)
        else:
            params[value] = _activation_params(*low_high)
    _reciprocal_cuts(graph, plan, ranges, params, set(fixed))
    return dataclasses.replace(model, graph=_rewrite(graph, plan, params))


def _reciprocal_cuts(graph: Graph, plan: _Plan, ranges: Mapping[str, tuple[float, float]],
                     params: dict[str, Params], fixed: Collection[str]) -> None:
    """Narrow the parameters of each Reciprocal's result r = 1 / b to what its 8-bit divisor
    represents. b is a quantized value s * k (k an integer), or such a value plus a
    one-element constant c with |c| < s / 2 (a divisor's eps): at every k != 0, |b| >= s - |c|,
    so |r| <= 1 / (s - |c|); k = 0 is a division by a quantized 0 (every float divisor in
    (-s / 2, s / 2) maps to it), whose result saturates. Without the cut a divisor that
    calibration saw near 0 (EfficientViT's linear attention: out[..., -1:] + 1e-5 in rows
    whose relu kernel is 0) sets r's range to 1e5 and leaves the ordinary rows no resolution.
    Applied to r's parameter source (and every value sharing it) unless adopted or symmetric."""
    for node in graph.nodes:
        if node.op_type != "Reciprocal" or node.domain != "" or len(node.outputs) != 1:
            continue
        root = _root(plan, node.outputs[0])
        floor = _divisor_floor(graph, node.inputs[0], params)
        if floor is None or root in fixed or root in plan.symmetric or root not in params:
            continue
        low, high = ranges.get(root, (0.0, 0.0))
        cut = _activation_params(max(low, -1.0 / floor), min(high, 1.0 / floor))
        for value in plan.values:
            if _root(plan, value) == root:
                params[value] = cut


def _divisor_floor(graph: Graph, b: str, params: Mapping[str, Params]) -> float | None:
    """The smallest |b| at a nonzero code of b's quantized source (`_reciprocal_cuts`); None
    when b is neither quantized nor a quantized value plus a small one-element constant."""
    if b in params:
        return float(params[b][0])
    node = graph.producers().get(b)
    if node is None or node.op_type != "Add" or node.domain != "" or len(node.inputs) != 2:
        return None
    constants = constants_of(graph)
    for x, c in (node.inputs, node.inputs[::-1]):
        value = constants.get(c)
        if x in params and value is not None and value.size == 1:
            step, shift = float(params[x][0]), abs(float(value.reshape(())))
            return step - shift if shift < step / 2 else None
    return None


def _constant_cuts(graph: Graph, plan: _Plan, floors: RowFloors) -> None:
    """Record in `plan.cuts` the floor of each whole-tensor constant operand that has one: a
    constant mask added to a Softmax's scores (LLaMA's causal triangle of 0 and float's
    lowest). Its values below the floor are raised to it before quantizing, as a computed
    mask's range is cut (`softmax_ranges`: every sum below the floor still saturates to the
    lowest code), instead of a scale of ~1e36 that drowns the mask's zeros and needs a
    requantization multiplier of ~1e37 (host)."""
    names = [node.inputs[plan.operands[node.name][0]] for node in graph.nodes
             if node.name in plan.operands]
    plan.cuts.update(floors.constant_floors(names))


def _float(graph: Graph, name: str) -> bool:
    found = graph.type_of(name)
    return found is not None and found.dtype == DataType.FLOAT


def _adopt_borders(graph: Graph, plan: _Plan,
                   region: Collection[str]) -> dict[str, Params]:
    """Return the parameters an island's values take from the model's own quantization, by
    parameter source (the root of `plan.shared`; a symmetric source keeps its own): those
    of a QuantizeLinear outside the island that reads them, or of the DequantizeLinear that
    float layout ops outside it read (`recurrent_island`). An exit read only by such
    QuantizeLinear nodes (not a graph output) that shares its parameters loses its own pair
    from `plan.values`: the model's QuantizeLinear quantizes it."""
    fixed: dict[str, Params] = {}
    adopted = exit_params(graph, region, plan.values)
    for value, params in [*adopted.items(), *entry_params(graph, region, plan.values).items()]:
        source = _root(plan, value)
        if source not in plan.symmetric:
            fixed.setdefault(source, params)
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    for value, params in adopted.items():
        readers = consumers.get(value, [])
        if (value not in outputs and value in plan.shared
                and fixed.get(_root(plan, value)) == params
                and all(r.op_type == "QuantizeLinear" and r.name not in region
                        for r in readers)):
            plan.values.remove(value)
    return fixed


def _group_ranges(plan: _Plan, ranges: Mapping[str, tuple[float, float]]
                  ) -> dict[str, tuple[float, float]]:
    """Return `ranges` with each parameter source's range widened to cover every value that
    shares its parameters. Where the source holds all of them (a Concat's output, the input
    of a Reshape or MaxPool) nothing changes; in a chain of Concats whose earlier outputs
    are only partly carried on (ShuffleNet: half of a block's channels are sliced into the
    next block's Concat, half into a branch) the last Concat alone would clip the others."""
    widened = dict(ranges)
    for value, (low, high) in ranges.items():
        source = _root(plan, value)
        if source != value and source in widened:
            known = widened[source]
            widened[source] = (min(known[0], low), max(known[1], high))
    return widened


def _root(plan: _Plan, value: str) -> str:
    """The value whose parameters `value` takes (itself when it has its own)."""
    while value in plan.shared:
        value = plan.shared[value]
    return value


def _plan(graph: Graph, report: PassReport, region: Collection[str] | None = None,
          entries: Sequence[str] = ()) -> _Plan:
    constants = constants_of(graph)
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    plan = _Plan([], {}, {})
    chosen: set[str] = set()
    dequantized = set() if region is None else {
        node.outputs[0] for node in graph.nodes if node.op_type == "DequantizeLinear"}

    def add(name: str) -> None:
        if name not in chosen:
            chosen.add(name)
            if name not in dequantized:  # a DequantizeLinear's result is quantized already
                plan.values.append(name)

    for name in entries:
        add(name)

    # nodes inside an element-wise region already planned, and the nodes outside `region`
    taken: set[int] = set() if region is None else {
        id(node) for node in graph.nodes if node.name not in region}
    order = {id(node): index for index, node in enumerate(graph.nodes)}

    def absorbing(result: str) -> str:
        """Return `result`, or the output of the Relu/Clip that alone reads it (then taken:
        the fused op's output stage applies it)."""
        readers = consumers.get(result, [])
        if len(readers) == 1 and result not in outputs and is_activation(readers[0], constants):
            taken.add(id(readers[0]))
            return readers[0].outputs[0]
        return result

    norms = layernorm_plans(graph, taken)
    taken.update(id(n) for norm in norms.values() for n in norm.nodes)
    for node in graph.nodes:
        if (norm := norms.get(id(node))) is not None:  # its last node: -> QLayerNorm
            for name in norm.values:
                add(name)
            plan.vectors.update(norm.vectors)
            continue
        if node.domain != "" or not node.inputs or not node.outputs or id(node) in taken:
            continue
        activations = (_activation_inputs(node, constants, graph)
                       if node.op_type in COMPUTE_OPS else None)
        if activations is not None:
            for name in activations:
                add(name)
            if node.op_type == "MatMul" and len(activations) == 2:
                for name in activations:  # a product of two computed tensors: symmetric
                    while name in plan.shared:
                        name = plan.shared[name]
                    plan.symmetric.add(name)
            elif node.op_type in ("Conv", "Gemm", "MatMul"):
                plan.weights[node.name] = _weight_axis(node, constants[node.inputs[1]].ndim)
            result = node.outputs[0]
            if node.op_type == "MatMul":
                result = _bias_add_output(result, consumers, constants, outputs)
            readers = consumers.get(result, [])
            if (node.op_type in ("Conv", "Gemm", "MatMul", "Add", "Sub", "Sum")
                    and len(readers) == 1
                    and result not in outputs and is_activation(readers[0], constants)):
                result = readers[0].outputs[0]
            if _float(graph, result):
                add(result)
                plan.results[node.name] = result
        elif (_passes_through(node, constants) and node.inputs[0] in chosen
              and all(_float(graph, o) for o in node.outputs if o)):
            for out in (o for o in node.outputs if o):  # a Split: every part
                add(out)
                plan.shared[out] = node.inputs[0]
        elif node.op_type == "Concat" and _float(graph, node.outputs[0]):
            _share_concat(node, plan, chosen, add)
        elif is_product_of_computed(node, graph, constants):
            for name in node.inputs:
                add(name)
            add(absorbing(node.outputs[0]))
        elif (node.op_type == "Softmax" and node.inputs[0] in chosen
              and _softmax_on_rows(graph, node)):
            add(node.outputs[0])  # DQ -> Softmax -> Q: a QSoftmax (fuse_softmax)
            if len(consumers.get(node.inputs[0], [])) == 1 and node.inputs[0] not in outputs:
                plan.softmax_inputs.append(node)
        elif (index := _constant_operand(node, graph, constants, plan)) is not None:
            add(node.inputs[1 - index])  # -> QMul / QAdd of a per-channel or whole-tensor B
            result = absorbing(node.outputs[0])
            if not quantized_by_model(result, consumers, outputs):
                add(result)
        elif node.op_type in ELEMENTWISE:
            _plan_region(graph, node, (constants, consumers, order), chosen, add, taken,
                         report)
    return plan


def _constant_operand(node: Node, graph: Graph, constants: dict[str, np.ndarray],
                      plan: _Plan) -> int | None:
    """Return the index of the constant input of a Mul/Add of a per-channel constant
    (`channel_affine_ptq`, recorded in `plan.vectors`) or of an Add of a whole-tensor
    constant (`constant_operand_ptq`, recorded in `plan.operands` with the shape it is read
    in), else None."""
    if (index := channel_vector_index(node, graph, constants)) is not None:
        plan.vectors[node.name] = index
        return index
    if (index := constant_operand_index(node, graph, constants)) is not None:
        found = graph.type_of(node.inputs[1 - index])
        assert found is not None and found.shape is not None
        plan.operands[node.name] = (index, tuple(int(d) for d in found.shape
                                                 if isinstance(d, int)))
        return index
    return None


def _passes_through(node: Node, constants: Mapping[str, np.ndarray]) -> bool:
    """True for an op whose results keep its input's parameters because they select input
    elements: a PASS_THROUGH_OPS op, a Gather of constant indices (an unrolled layer's time
    step) or GatherElements of constant indices (DeBERTa's relative positions), a Slice or
    Split of constant bounds (ShuffleNet's channel split, a C2f block's halves) and a nearest
    Resize/Upsample of constant scales or sizes."""
    if node.op_type in ("Gather", "GatherElements"):
        return len(node.inputs) == 2 and node.inputs[1] in constants
    if node.op_type in SELECTING_OPS:
        if node.op_type in ("Resize", "Upsample") and attr_str(node, "mode", "nearest") != "nearest":
            return False
        return all(not name or name in constants for name in node.inputs[1:])
    return node.op_type in PASS_THROUGH_OPS


def _softmax_on_rows(graph: Graph, node: Node) -> bool:
    """True for a float Softmax that SOFTMAX can compute once quantized: static input shape,
    normalised over contiguous rows (before opset 13 always: the 2-D coercion; from 13 the
    axis must be the last of size above 1)."""
    found = graph.type_of(node.inputs[0])
    if not _float(graph, node.inputs[0]) or not _float(graph, node.outputs[0]):
        return False
    if found is None or found.shape is None or not found.is_static or not found.shape:
        return False
    shape = [int(d) for d in found.shape if isinstance(d, int)]
    if not node.version or node.version < 13:
        return True
    axis = attr_int(node, "axis", -1)
    if not -len(shape) <= axis < len(shape):
        return False
    return all(d == 1 for d in shape[axis % len(shape) + 1:])


def _plan_region(graph: Graph, node: Node,
                 known: tuple[Mapping[str, np.ndarray], Mapping[str, list[Node]],
                              Mapping[int, int]],
                 chosen: set[str], add: Callable[[str], None], taken: set[int],
                 report: PassReport) -> None:
    """Quantize the result of the element-wise region `node` starts, when it reads one
    quantized value (and scalar constants) and has exactly one result read outside it.
    `known`: the graph's constants, the readers of each value, each node's index by id."""
    constants, consumers, order = known
    sources = {name for name in node.inputs if name and name not in constants}
    if len(sources) != 1 or not sources <= chosen:
        return
    region = elementwise_region(graph, sources.pop(), constants, consumers, order, taken)
    if not region.nodes:
        return
    taken.update(id(n) for n in region.nodes)
    if len(region.exits) != 1:
        for member in region.nodes:
            report.note(member.label, f"its element-wise region ({len(region.nodes)} nodes) "
                        f"has {len(region.exits)} results read outside it, not one: it is not "
                        "one table and stays float")
        return
    add(region.exits[0])


def _share_concat(node: Node, plan: _Plan, chosen: set[str],
                  add: Callable[[str], None]) -> None:
    """Quantize a Concat of quantized values with one set of parameters for its inputs and
    its output (calibrated on the output, whose range covers every input's), so it stays a
    layout op on the integers. Each input's parameter source then takes the output's; not
    done when an input is not quantized, or its source already follows another value's
    parameters or must be symmetric (the Concat then runs on the host)."""
    inputs = [name for name in node.inputs if name]
    if not inputs or any(name not in chosen for name in inputs):
        return
    roots = []
    for name in inputs:
        while name in plan.shared:
            name = plan.shared[name]
        roots.append(name)
    output = node.outputs[0]
    if output in chosen or any(root in plan.symmetric for root in roots):
        return
    add(output)
    for root in dict.fromkeys(roots):
        plan.shared[root] = output


def _bias_add_output(result: str, consumers: Mapping[str, list[Node]],
                     constants: Mapping[str, np.ndarray], outputs: set[str]) -> str:
    """Return the output of an Add of a constant bias along the last axis ([N], [1, N], ...)
    that is the only reader of a MatMul's result (the bias belongs to the fused product),
    else the result itself (an attention bias [1, H, S, S] after q @ k^T is an Add of its
    own: the product's result is quantized)."""
    readers = consumers.get(result, [])
    if len(readers) != 1 or result in outputs or readers[0].op_type != "Add":
        return result
    others = [name for name in readers[0].inputs if name != result]
    if len(others) != 1 or others[0] not in constants:
        return result
    if any(d != 1 for d in constants[others[0]].shape[:-1]):
        return result  # not a bias along the last axis
    return readers[0].outputs[0]


def _activation_inputs(node: Node, constants: Mapping[str, np.ndarray],
                       graph: Graph) -> list[str] | None:
    """Return the float activation inputs of a compute op that PTQ handles, or None."""
    x = node.inputs[0]
    if x in constants or not _float(graph, x):
        return None
    if node.op_type in ("Add", "Sub", "Sum"):  # a Sub: fuse_qdq's QAdd of -multiplier_b
        if len(node.inputs) != 2 or node.inputs[1] in constants or not _float(graph,
                                                                             node.inputs[1]):
            return None
        shape_a, shape_b = graph.type_of(x), graph.type_of(node.inputs[1])
        if shape_a is None or shape_b is None or shape_a.shape != shape_b.shape:
            return None
        return [x, node.inputs[1]]
    if node.op_type in ("AveragePool", "GlobalAveragePool"):
        return [x]
    weight = constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if weight is None and node.op_type == "MatMul" and _float(graph, node.inputs[1]):
        b_type = graph.type_of(node.inputs[1])
        if b_type is None or b_type.shape is None or len(b_type.shape) < 2:
            return None
        return [x, node.inputs[1]]  # attention style: both factors computed
    if weight is None or weight.dtype != np.float32:
        return None
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    if bias and bias not in constants:
        return None
    if node.op_type == "Conv" and weight.ndim not in (3, 4):
        return None
    if node.op_type == "Gemm" and weight.ndim != 2:
        return None
    if node.op_type == "MatMul" and weight.ndim < 2:
        return None
    if node.op_type == "Gemm" and attr_int(node, "transA", 0):
        return None
    return [x]


def _weight_axis(node: Node, rank: int) -> int:
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm" and attr_int(node, "transB", 0):
        return 0
    return rank - 1  # MatMul [..., K, N]: per column N, shared by every batch entry


SMALLEST_SCALE = float(np.finfo(np.float32).tiny)
"""A scale below float32's smallest normal number (0 or denormal) becomes 1 with zero point
0, as onnxruntime's quantizer does (compute_scale_zp): a value that is (nearly) constant 0
over the calibration set, whose real range would otherwise give no usable scale."""


def _activation_params(low: float, high: float) -> tuple[np.float32, np.uint8]:
    low, high = min(low, 0.0), max(high, 0.0)
    real = (high - low) / 255.0
    if not real >= SMALLEST_SCALE:
        return np.float32(1.0), np.uint8(0)
    scale = np.float32(real)
    zero = int(np.clip(np.rint(-low / float(scale)), 0, 255))
    return scale, np.uint8(zero)


def _symmetric_params(low: float, high: float) -> tuple[np.float32, np.uint8]:
    peak = max(abs(low), abs(high))
    real = peak / 127.0
    scale = np.float32(real) if real >= SMALLEST_SCALE else np.float32(1.0)
    return scale, np.uint8(SYMMETRIC_ZERO_POINT)


_CHUNK = 1 << 20
"""Elements quantized at a time (float64 temporaries of 8 MB, not of the whole weight)."""


def quantize_weights(
    w: np.ndarray, axis: int, guard: WeightGuard | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Return (read-only int8 values, float32 scale per channel along `axis`), symmetric. A
    channel's scale is max|W| / 127 (1 for an all-zero channel), raised to
    `weight_scale_floor` from `guard` (x_scale, y_scale, bias; None: no floor). A
    repeated-value view (`constant_layout`) is quantized one element per repetition and the
    integers are a view of the same shape again."""
    axis = axis % w.ndim
    compact = core(w)
    if compact is w:
        return _quantize_weights(w, axis, guard)
    wide = list(compact.shape)
    wide[axis] = w.shape[axis]  # every channel, for its own scale
    values, scale = _quantize_weights(np.ascontiguousarray(np.broadcast_to(compact, wide)),
                                      axis, guard)
    return spread(values, w.shape), scale


def _quantize_weights(
    w: np.ndarray, axis: int, guard: WeightGuard | None
) -> tuple[np.ndarray, np.ndarray]:
    """`quantize_weights` of an array in memory, `axis` non-negative."""
    others = tuple(i for i in range(w.ndim) if i != axis)
    # Slices of axis 0 of about _CHUNK elements: no temporary of the whole weight (abs, float64).
    step = max(1, _CHUNK // max(1, w[:1].size))
    parts = [slice(start, start + step) for start in range(0, w.shape[0], step)] or [slice(None)]
    # max|W| per channel, taken in W's own type: abs and max round nothing.
    peaks = [np.abs(w[part]).max(axis=others) for part in parts]
    peak = (np.concatenate(peaks) if axis == 0 else np.maximum.reduce(peaks)).astype(np.float64)
    scale64 = peak / WEIGHT_MAX
    if guard is not None:
        scale64 = np.maximum(scale64, weight_scale_floor(peak, *guard))
    scale = np.where(peak > 0, scale64, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    divisor = scale.astype(np.float64).reshape(shape)
    out = np.empty(w.shape, np.int8)
    for part in parts:
        q = w[part].astype(np.float64)
        np.divide(q, divisor[part] if axis == 0 else divisor, out=q)
        np.rint(q, out=q)
        np.clip(q, -WEIGHT_MAX, WEIGHT_MAX, out=q)
        out[part] = q
    out.flags.writeable = False  # a constant from here on: `tensor` keeps it, no copy
    return out, scale


def _guard(node: Node, plan: _Plan, params: Mapping[str, Params],
           constants: Mapping[str, np.ndarray]) -> WeightGuard:  # fmt: skip
    """Return what bounds the weight scales of `node`: its input's and its quantized result's
    scales, and its bias (Conv and Gemm input 2) when constant."""
    x = params.get(node.inputs[0]) if node.inputs else None
    result = plan.results.get(node.name)
    y = params.get(result) if result is not None else None
    bias = constants.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if node.op_type not in ("Conv", "Gemm") or (bias is not None and bias.ndim > 1):
        bias = None
    return (None if x is None else float(x[0]), None if y is None else float(y[0]), bias)


def _check_finite_weights(graph: Graph, plan: _Plan) -> None:
    """Raise ModelError naming the first weight to quantize that holds NaN or infinity (its
    minimum and maximum tell, NaN propagating: no temporary of the weight's size)."""
    constants = constants_of(graph)
    for node in graph.nodes:
        if node.name not in plan.weights:
            continue
        values = core(constants[node.inputs[1]])
        if not values.size or np.isfinite(values.min()) and np.isfinite(values.max()):
            continue
        bad = int(np.count_nonzero(~np.isfinite(constants[node.inputs[1]])))
        if bad:
            raise ModelError(
                f"weight {node.inputs[1]!r} of node {node.label!r} holds {bad} NaN or infinite "
                "value(s), which cannot be quantized: fix the float model's weights"
            )


def _dequantized_vector(node: Node, index: int, constants: Mapping[str, np.ndarray],
                        namer: Namer) -> tuple[Node, Node, list[Tensor]]:  # fmt: skip
    """Return `node` reading its constant input `index` (a vector along the last axis, or per
    channel [1, C, 1, 1]) through a DequantizeLinear of its per-tensor int8 quantization
    (`quantize_vector`) flattened to [H] (a per-channel one keeps its shape), that node and
    the new constants."""
    name = node.inputs[index]
    q, scale = quantize_vector(constants[name].reshape(-1))
    if keeps_shape(constants[name]):  # per channel [1, C, 1, 1] (channel_affine_ptq)
        q = q.reshape(constants[name].shape)
    return _dequantized_constant(node, index, q, scale, namer)


def _dequantized_constant(node: Node, index: int, q: np.ndarray, scale: np.float32,
                          namer: Namer) -> tuple[Node, Node, list[Tensor]]:
    """Return `node` reading int8 `q` (scale `scale`, zero point 0) through a new
    DequantizeLinear in place of its input `index`, that node and the new constants."""
    name = node.inputs[index]
    q_name, s_name = namer(f"{name}_quantized"), namer(f"{name}_scale")
    z_name, dq_name = namer(f"{name}_zero_point"), namer(f"{name}_dequantized")
    dq = make_node("DequantizeLinear", (q_name, s_name, z_name), (dq_name,),
                   name=namer(f"{name}_DequantizeLinear"), version=QDQ_VERSION)
    inputs = list(node.inputs)
    inputs[index] = dq_name
    tensors = [tensor(q_name, q), tensor(s_name, np.array(scale, np.float32)),
               tensor(z_name, np.array(0, np.int8))]
    return dataclasses.replace(node, inputs=tuple(inputs)), dq, tensors


def _rewrite(graph: Graph, plan: _Plan, params: dict[str, Params]) -> Graph:
    namer = Namer(graph)
    constants = constants_of(graph)
    new_tensors = []
    inputs = {info.name for info in graph.inputs}
    quantized = set(plan.values)
    rename_in: dict[str, str] = {}  # graph input -> its dequantized copy
    pairs: dict[str, list[Node]] = {}  # value -> its Q and DQ nodes
    produced_as: dict[str, str] = {}  # value -> the float name its producer now writes
    for value in plan.values:
        scale, zero = params[value]
        s_name, z_name = namer(f"{value}_scale"), namer(f"{value}_zero_point")
        new_tensors += [tensor(s_name, np.array(scale, np.float32)),
                        tensor(z_name, np.asarray(zero))]  # uint8, or an int8 border's
        q_name = namer(f"{value}_quantized")
        if value in inputs:
            source, target = value, namer(f"{value}_dequantized")
            rename_in[value] = target
        else:
            source, target = namer(f"{value}_float"), value
            produced_as[value] = source
        pairs[value] = [
            make_node("QuantizeLinear", (source, s_name, z_name), (q_name,),
                      name=namer(f"{value}_QuantizeLinear"), version=QDQ_VERSION),
            make_node("DequantizeLinear", (q_name, s_name, z_name), (target,),
                      name=namer(f"{value}_DequantizeLinear"), version=QDQ_VERSION),
        ]
    nodes: list[Node] = []
    for info in graph.inputs:
        nodes += pairs.get(info.name, [])
    for node in graph.nodes:
        guard = _guard(node, plan, params, constants)
        node = dataclasses.replace(node, inputs=tuple(rename_in.get(n, n) for n in node.inputs))
        axis = plan.weights.get(node.name)
        if axis is not None:
            w_name = node.inputs[1]
            q, w_scale = quantize_weights(constants[w_name], axis, guard)
            q_name, s_name = namer(f"{w_name}_quantized"), namer(f"{w_name}_scale")
            z_name, dq_name = namer(f"{w_name}_zero_point"), namer(f"{w_name}_dequantized")
            new_tensors += [tensor(q_name, q), tensor(s_name, w_scale),
                            tensor(z_name, np.zeros(w_scale.shape, np.int8))]
            nodes.append(make_node("DequantizeLinear", (q_name, s_name, z_name), (dq_name,),
                                   name=namer(f"{w_name}_DequantizeLinear"),
                                   version=QDQ_VERSION, attrs={"axis": axis}))
            node = dataclasses.replace(node, inputs=(node.inputs[0], dq_name, *node.inputs[2:]))
        index = plan.vectors.get(node.name)
        if index is not None:  # a layer normalization's gamma or beta: int8 per tensor
            node, dq, tensors = _dequantized_vector(node, index, constants, namer)
            nodes.append(dq)
            new_tensors += tensors
        if node.name in plan.operands:  # a whole-tensor constant: int8 per tensor
            index, shape = plan.operands[node.name]
            operand = constants[node.inputs[index]]
            if (cut := plan.cuts.get(node.inputs[index])) is not None:  # a constant mask
                operand = np.maximum(operand, np.float32(cut))
            q, scale = quantized_operand(operand, shape)
            node, dq, tensors = _dequantized_constant(node, index, q, scale, namer)
            nodes.append(dq)
            new_tensors += tensors
        outs = tuple(produced_as.get(o, o) for o in node.outputs)
        nodes.append(dataclasses.replace(node, outputs=outs))
        for out in node.outputs:
            if out in quantized and out not in inputs:
                nodes += pairs[out]
    return dataclasses.replace(graph, nodes=tuple(nodes),
                               initializers=graph.initializers + tuple(new_tensors))

