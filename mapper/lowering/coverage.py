"""Where each node of an imported model will run, and why (`systolic inspect`'s unit column).

`node_units(model, config)` runs the mapper passes and plans the model for `config`
(`compile_model.plan_layers`: the compiler's placement and lowering checks, no instruction
emitted) and follows every original node to its outcome:

- fused into a systolic op (QConv, QConvInt, QMatMul, QMatMulInt, QMaxPool, QAveragePool,
  QAdd, QMul, QTable, QSoftmax, QLayerNorm): the unit the compiled layer runs on, `array`
  (QMatMulInt, QConvInt: MatMulInteger, ConvInteger with int32 results) or `vector`
  (QSoftmax: SOFTMAX; QLayerNorm: LAYERNORM, a layer normalization's chain of nodes)
  (or `host` when the lowering fell
  back, with the lowering's reason); BatchNormalization folded into a Conv follows that Conv;
  an elementwise function made a QTable is `vector` also when the table is fused into the
  STOREs of the convolution or matrix product before it (no instructions of its own, the
  activation unit applies it as the array's results are written);
- an integer layout op (Flatten, Reshape, ...): `vector` (a COPY on the vector datapath, or
  addressing alone), as `systolic simulate` reports it;
- kept as a standard op: `host`, with the reason the passes or the compiler gave;
- removed or folded into a constant before the run (Identity, Dropout, constant chains, the
  Quantize/Dequantize pairs fused ops absorb): `none`, with the reason.

Symbolic input dimensions (a dynamic batch) are taken as 1 for this: the unit a node runs on
does not depend on them. When the model cannot be mapped at all, every node is `host` with
the mapper's message. A node of an operator the tool does not implement (a model read with
`mark_unsupported`) is `unsupported`, with the reason; the mapper does not run on such a
model, so the others are `host`, not mapped.

Quantization parameters: a float model is quantized by the passes on ranges calibrated over
a set of inputs (`compile`, `simulate`); with `calibrated=False` (`systolic inspect`) no
calibration runs and every activation's range is taken as empty (scale 1, zero point 0; the
weights are quantized from their values as always): `ASSUMED_RANGES` says so. A unit that
depends on the calibrated scales (a requantization multiplier out of range, a bias leaving
int32) may then differ from the compiled program's (no test model's does), and so may how many
of a Concat's inputs are written in place (equal assumed scales need no requantization before
it, so an input that other nodes read too is copied: yolo_block_float).
"""

import ast
import re
from collections.abc import Mapping, Sequence

from systolic.config import ArrayConfig
from systolic.errors import SystolicError
from systolic.ir import Model
from systolic.isa.program import ProgramLayer
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.report import FOLDED, FUSED, LAYOUT, REMOVED, NodeFate, PassReport

__all__ = [
    "ASSUMED_RANGES",
    "NodeUnit",
    "follow_units",
    "needs_calibration",
    "node_units",
    "symbols_as_one",
]

ASSUMED_RANGES = (
    "float model: units decided without calibration, on activation ranges taken as empty "
    "(scale 1, zero point 0); compile and simulate calibrate, so a layer whose requantization "
    "multiplier or int32 bias depends on the calibrated scales may run elsewhere there, and a "
    "Concat may write more of its inputs in place there (calibrated scales differ, so an input "
    "also read elsewhere is requantized for it instead of copied)"
)
"""What `node_units(..., calibrated=False)` assumes for a float model (inspect prints it)."""

NodeUnit = tuple[str, str]
"""(unit, reason): unit is "array", "vector", "host", "none" or "unsupported"."""

_HOST_WHY = {
    op: f"{op} needs exponentials or divisions in float, which no accelerator unit computes: "
    "runs on the host"
    for op in ("LogSoftmax", "Div", "InstanceNormalization")
}
_HOST_WHY["LayerNormalization"] = (
    "LayerNormalization in float runs on the host: between a DequantizeLinear and a "
    "QuantizeLinear (over the last axis) it would become LAYERNORM on the vector unit"
)
_HOST_WHY["DynamicQuantizeLinear"] = (
    "DynamicQuantizeLinear computes the activation's scale and zero point from the tensor's "
    "range at run time: runs on the host (the MatMulInteger or ConvInteger it feeds runs on "
    "the array as QMatMulInt or QConvInt, its zero point's part added on the host)"
)
_SOFTMAX_WHY = {
    op: f"{op} in float runs on the host: between a DequantizeLinear and a QuantizeLinear "
    "(over the last axis) it would become SOFTMAX on the vector unit"
    for op in ("Softmax", "QLinearSoftmax")
}
"""Softmax: SOFTMAX when quantized; the passes' reason, when they give one, says why not."""
_TABLE_WHY = {
    op: f"{op} in float runs on the host: between a DequantizeLinear and a QuantizeLinear "
    "it would become an activation table (TABLE) on the accelerator"
    for op in ("Sigmoid", "Tanh", "Exp", "Log", "Erf", "Gelu", "Reciprocal", "Softplus", "Mish",
               "Elu", "Selu", "Sin", "Cos")
}
"""Elementwise functions: a table when quantized; the passes' reason, when they give one,
says why this one is not."""

_TARGET = re.compile(r"""\s('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def _target(fate: NodeFate) -> str | None:
    match = _TARGET.search(fate.into)
    if match is None:
        return None
    name = ast.literal_eval(match.group(1))
    return name if isinstance(name, str) else None


def _layernorm_why(fate: NodeFate) -> str:
    """The passes' reason a node of a layer normalization stays on the host, or ""."""
    from systolic.mapper.passes.layernorm_match import LAYERNORM_NOTE

    return fate.reason if fate.reason.startswith(LAYERNORM_NOTE) else ""


def symbols_as_one(model: Model) -> Model:
    """Return `model` with every symbolic or unknown input dimension bound to 1 (unchanged
    when all inputs are static or when the binding fails)."""
    from systolic.mapper.dim_binding import bind_inputs

    constants = {tensor.name for tensor in model.graph.initializers}
    shapes = {
        info.name: tuple(d if isinstance(d, int) else 1 for d in info.type.shape)
        for info in model.graph.inputs
        if info.name not in constants and info.type.shape is not None and not info.type.is_static
    }
    if not shapes:
        return model
    try:
        return bind_inputs(model, shapes)
    except SystolicError:
        return model


_NOT_MAPPED = "not mapped: the mapper runs only on a model whose operators are all supported"


def _unsupported(model: Model) -> dict[int, str]:
    """Return {node index: why} for the nodes the importer left unbound (mark_unsupported)."""
    from systolic.mapper.binding import bind_version
    from systolic.mapper.dim_binding import model_opsets

    opsets = model_opsets(model)
    found: dict[int, str] = {}
    for index, node in enumerate(model.graph.nodes):
        if node.version:
            continue
        try:
            bind_version(node, opsets)
        except SystolicError as err:
            why = str(err).removeprefix(f"node {node.label!r}: ")
            found[index] = why.removesuffix(" (see `systolic inspect MODEL`)")
    return found


def needs_calibration(model: Model) -> bool:
    """True when the passes would calibrate `model` (a float model: no quantization in it)."""
    from systolic.mapper.passes.quantize_float import is_quantized

    return not is_quantized(model)


def node_units(model: Model, config: ArrayConfig, *, calibrated: bool = True) -> list[NodeUnit]:
    """Return (unit, reason) for each node of `model.graph.nodes`, in order. With
    `calibrated=False`, a float model is quantized without calibration (module docstring)."""
    from systolic.mapper.lowering.compile_model import plan_layers
    from systolic.mapper.passes.pipeline import run_passes

    names = [node.name for node in name_nodes(model).graph.nodes]
    missing = _unsupported(model)
    if missing:
        return [
            ("unsupported", missing[i]) if i in missing else ("host", _NOT_MAPPED)
            for i in range(len(names))
        ]
    try:
        integer, report = run_passes(symbols_as_one(model),
                                     calibration=None if calibrated else [])  # fmt: skip
        layers = {layer.name: layer for layer in plan_layers(integer, config)}
    except SystolicError as err:
        return [("host", f"the mapper cannot map this model: {err}")] * len(names)

    return follow_units(names, report, layers)


def follow_units(
    names: Sequence[str], report: PassReport, layers: Mapping[str, ProgramLayer]
) -> list[NodeUnit]:
    """Return (unit, reason) for each original node name in `names`, from the passes'
    `report` and the compiled (or planned) `layers` by name (module docstring)."""
    from systolic.mapper.lowering.compile_model import FUSED_TABLE

    def layer_unit(label: str) -> NodeUnit | None:
        layer = layers.get(label)
        if layer is None:
            return None
        unit = layer.unit.value if layer.unit.value != "layout" else "vector"
        return unit, layer.reason

    result: list[NodeUnit] = []
    for name in names:
        fate = report.fate(name)
        if fate is None:
            result.append(layer_unit(name) or ("none", "no outcome recorded by the passes"))
            continue
        if fate.action == FUSED:
            label, seen = _target(fate), set[str]()
            found = None
            while label is not None and label not in seen:
                seen.add(label)
                found = layer_unit(label)
                if found is not None:
                    break
                onward = report.fate(label)
                label = _target(onward) if onward and onward.action == FUSED else None
            if found is None:
                result.append(("none", f"fused into {fate.into}, which the compiler dropped"))
            elif found[0] == "host":
                result.append(("host", f"fused into {fate.into}; on the host: {found[1]}"))
            elif found[1].startswith(FUSED_TABLE):  # a QTable applied by the STOREs before
                result.append((found[0], f"fused into {fate.into}, itself {found[1]}"))
            else:
                result.append((found[0], f"fused into {fate.into}"))
        elif fate.action == LAYOUT:
            found = layer_unit(name)
            if found is None:
                result.append(("none", "layout op removed by the compiler"))
            elif found[0] == "host":
                result.append(("host", found[1]))
            else:
                result.append(("vector", f"layout: {found[1]}"))
        elif fate.action in (REMOVED, FOLDED):
            result.append(("none", f"{fate.action}: {fate.reason}" if fate.reason
                           else fate.action))  # fmt: skip
        else:  # host
            found = layer_unit(name)
            op = fate.op_type.rsplit(".", 1)[-1].split(":")[0]
            reason = (_layernorm_why(fate) or _HOST_WHY.get(op, "") or fate.reason
                      or _TABLE_WHY.get(op, "") or _SOFTMAX_WHY.get(op, ""))
            reason = reason or (found[1] if found else "")
            result.append(("host", reason or "runs on the host"))
    return result
