"""The float island of an unrolled recurrent layer inside a quantized model, and the
quantization parameters its borders take from the model's own quantization.

onnxruntime's quantizer leaves RNN/GRU/LSTM in float: the layer reads a float value (a graph
input, a DequantizeLinear's result) and its result reaches a QuantizeLinear through float
layout ops (lstm2: LSTM -> Squeeze -> Transpose -> QuantizeLinear). Once `unroll_recurrent`
has written the layer as per-step float nodes, `quantize_float(region=...)` quantizes that
island after training as it quantizes a float model:

- `recurrent_island(model, unrolled)`: the unrolled nodes, plus the float layout ops
  (Flatten, Reshape, Transpose, Squeeze, Unsqueeze) that read the island's values, transitively (the Squeeze and
  Transpose after the layer), so that they keep the parameters of what they read and stay
  layout ops on the integers;
- `exit_params(graph, region, values)`: a value of the island read by a QuantizeLinear
  outside it (per-tensor, uint8 or int8 zero point, constant parameters) takes that node's scale
  and zero point instead of a calibrated range, so DQ -> layout -> Q keeps one set of
  parameters and no requantization is left on the host;
- `entry_params(graph, region, values)`: likewise a value the island reads that float
  layout ops outside it make from a DequantizeLinear's result (DQ -> Transpose -> LSTM)
  takes that DequantizeLinear's parameters, so the layout ops run on the integers.
"""

from collections.abc import Collection, Mapping

import numpy as np

from systolic.ir import DataType, Graph, Model
from systolic.mapper.passes.graph_tools import constants_of

__all__ = ["Params", "entry_params", "exit_params", "recurrent_island"]

Params = tuple[np.float32, np.uint8 | np.int8]
"""Per-tensor quantization parameters: (scale, zero point; the zero point's type is the
quantized type)."""

_LAYOUT = frozenset({"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze"})


def recurrent_island(model: Model, unrolled: Collection[str]) -> frozenset[str]:
    """Return the names of `unrolled` and of the float layout nodes fed by them (module
    docstring)."""
    graph = model.graph
    island = set(unrolled)
    produced = {out for node in graph.nodes if node.name in island for out in node.outputs}
    for node in graph.nodes:  # graph order: a layout chain is followed in one sweep
        if (node.name in island or node.domain != "" or node.op_type not in _LAYOUT
                or not node.inputs or node.inputs[0] not in produced):
            continue
        outputs = [out for out in node.outputs if out]
        if len(outputs) == 1 and _is_float(graph, outputs[0]):
            island.add(node.name)
            produced.add(outputs[0])
    return frozenset(island)


def exit_params(graph: Graph, region: Collection[str],
                values: Collection[str]) -> dict[str, Params]:
    """Return, for each of `values` read by a QuantizeLinear outside `region` with a
    per-tensor float scale and 8-bit zero point (constants), that node's parameters (the
    first such reader's)."""
    constants = constants_of(graph)
    consumers = graph.consumers()
    found: dict[str, Params] = {}
    for value in values:
        for reader in consumers.get(value, []):
            if reader.name in region or reader.domain != "" or reader.op_type != "QuantizeLinear":
                continue
            params = _per_tensor(reader.inputs, constants)
            if params is not None and reader.inputs[0] == value:
                found[value] = params
                break
    return found


def entry_params(graph: Graph, region: Collection[str],
                 values: Collection[str]) -> dict[str, Params]:
    """Return, for each of `values` produced outside `region` by a chain of float layout
    ops from a DequantizeLinear with a per-tensor float scale and 8-bit zero point
    (constants), that node's parameters."""
    constants = constants_of(graph)
    producers = graph.producers()
    found: dict[str, Params] = {}
    for value in values:
        node = producers.get(value)
        if node is None or node.name in region or node.op_type not in _LAYOUT:
            continue
        while node is not None and node.domain == "" and node.op_type in _LAYOUT:
            node = producers.get(node.inputs[0])
        if node is not None and node.domain == "" and node.op_type == "DequantizeLinear":
            params = _per_tensor(node.inputs, constants)
            if params is not None:
                found[value] = params
    return found


def _per_tensor(inputs: tuple[str, ...],
                constants: Mapping[str, np.ndarray]) -> Params | None:
    scale = constants.get(inputs[1]) if len(inputs) > 1 else None
    zero = constants.get(inputs[2]) if len(inputs) > 2 and inputs[2] else None
    if scale is None or zero is None or scale.size != 1 or zero.size != 1:
        return None
    if scale.dtype != np.float32 or zero.dtype not in (np.uint8, np.int8):
        return None
    value = int(zero.reshape(()))
    return np.float32(scale.reshape(())), (np.uint8(value) if zero.dtype == np.uint8
                                           else np.int8(value))


def _is_float(graph: Graph, name: str) -> bool:
    found = graph.type_of(name)
    return found is not None and found.dtype == DataType.FLOAT
