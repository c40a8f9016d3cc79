"""Prove that a difference from onnxruntime comes from float rounding upstream of dynamic
quantizations.

onnxruntime's float host ops (ReduceMean, MatMul, the LSTM gates, ...) sum in another order
than our reference and differ in the last bits. A dynamic quantization (DynamicQuantizeLinear,
com.microsoft DynamicQuantizeLSTM) computes its scale from the values' range and rounds them
to uint8: a last-bit difference can move a value across a rounding boundary, a whole step.

`float_rounding_explains` runs onnxruntime with the float input of each dynamic quantization as
an extra output, then replays our reference with those values put in place of ours. The model
replayed is the one whose outputs are explained (the simulation's integer model, whose
tensors keep the ONNX file's names); a quantization input the file does not compute (one the
passes made, e.g. of an unrolled LSTM's steps) is not replaced. It holds
when (1) each of onnxruntime's values is within `RELATIVE` of ours (times the tensor's largest
magnitude): float rounding, nothing more; and (2) the replayed outputs then match onnxruntime's
(float outputs within `RELATIVE`, integer ones exactly): nothing else differs. A model with
no dynamic quantization of a computed value is never explained so. Rounding inside
a DynamicQuantizeLSTM (its gates) is covered only as far as its outputs stay within (2).
"""

import os
from collections.abc import Callable, Mapping

import numpy as np

from systolic.errors import SimulationError
from systolic.ir import Model, Node
from systolic.proto import ModelProto, ValueInfoProto
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_check import run_onnxruntime

__all__ = ["DYNAMIC_QUANTIZERS", "RELATIVE", "float_rounding_explains", "quantizer_inputs",
           "replay_explains"]

RELATIVE = 1e-5
"""Float rounding: |ours - theirs| at most this times the tensor's largest magnitude."""

DYNAMIC_QUANTIZERS = frozenset({("", "DynamicQuantizeLinear"),
                                ("com.microsoft", "DynamicQuantizeLSTM")})  # fmt: skip


def quantizer_inputs(model: Model, produced: set[str]) -> list[str]:
    """The float inputs (input 0) of the model's dynamic quantizations that are in
    `produced`."""
    names = [node.inputs[0] for node in model.graph.nodes
             if (node.domain, node.op_type) in DYNAMIC_QUANTIZERS and node.inputs]  # fmt: skip
    return [name for name in dict.fromkeys(names) if name in produced]


def float_rounding_explains(
    data: bytes,
    base_dir: str | os.PathLike[str],
    model: Model,
    inputs: Mapping[str, np.ndarray],
    *,
    optimized: bool,
) -> bool:
    """True when onnxruntime's session (`optimized` or not) on the serialized model `data`
    differs from our reference running `model` (the same graph, or what the passes made of it)
    only by float rounding upstream of dynamic quantizations (module docstring)."""
    proto = ModelProto()
    proto.ParseFromString(data)
    names = quantizer_inputs(model, {name for node in proto.graph.node for name in node.output})
    if not names:
        return False  # no dynamic quantization of a computed value: nothing to blame
    return replay_explains(proto, base_dir, model, inputs, names, optimized=optimized,
                           within=_within)


Within = Callable[[np.ndarray, np.ndarray], bool]


def replay_explains(
    proto: ModelProto,
    base_dir: str | os.PathLike[str],
    model: Model,
    inputs: Mapping[str, np.ndarray],
    names: list[str],
    *,
    optimized: bool,
    within: Within,
) -> bool:
    """True when onnxruntime's session on `proto` gives values `names` that are each `within`
    ours (ours, theirs) and our reference of `model`, replayed with them in place of ours,
    gives onnxruntime's outputs: nothing but those values differs."""
    try:
        theirs = run_onnxruntime(_with_outputs(proto, names), inputs, optimized=optimized,
                                 base_dir=base_dir)  # fmt: skip
    except SimulationError:
        return False
    constants = [np.asarray(tensor.data) for tensor in model.graph.initializers]
    replay = _Replay({name: theirs[name] for name in names if name in theirs}, constants,
                     within)
    if len(replay.theirs) < len(names):
        return False
    copies = {name: np.array(value, copy=True) for name, value in inputs.items()}
    replayed = run_model(model, copies, on_node=replay)
    if not replay.close or set(replay.ours) != set(names):
        return False
    return all(name in theirs and _outputs_match(value, theirs[name])
               for name, value in replayed.items())  # fmt: skip


class _Replay:
    """Reference hook: put onnxruntime's values in place of ours where it gave them, keeping
    ours; `close` turns False when one is more than float rounding away or cannot be put (a
    view of an initializer: not proven rather than changing it)."""

    def __init__(self, theirs: Mapping[str, np.ndarray], constants: list[np.ndarray],
                 within: Within) -> None:
        self.theirs = dict(theirs)
        self.within = within
        self.constants = constants
        self.ours: dict[str, np.ndarray] = {}
        self.close = True

    def __call__(self, node: Node, _: list[np.ndarray | None], results: list[np.ndarray]) -> None:
        for name, value in zip(node.outputs, results, strict=False):
            other = self.theirs.get(name)
            if other is None:
                continue
            other = np.asarray(other)
            self.ours[name] = value.copy()
            if (other.shape != value.shape or not self._writable(value)
                    or not self.within(value, other)):
                self.close = False
                continue
            np.copyto(value, other.astype(value.dtype))

    def _writable(self, value: np.ndarray) -> bool:
        """True when `value` can be overwritten without changing an initializer (the inputs
        are copies)."""
        return value.flags.writeable and not any(
            np.may_share_memory(value, constant) for constant in self.constants)  # fmt: skip


def _within(ours: np.ndarray, theirs: np.ndarray) -> bool:
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return bool(np.array_equal(a, b, equal_nan=True))
    if not a.size:
        return True
    return float(np.max(np.abs(a - b))) <= RELATIVE * float(np.max(np.abs(a)))


def _outputs_match(ours: np.ndarray, theirs: np.ndarray) -> bool:
    theirs = np.asarray(theirs)
    if ours.shape != theirs.shape:
        return False
    if np.issubdtype(ours.dtype, np.floating):
        return _within(ours, theirs)
    return bool(np.array_equal(ours, theirs))


def _with_outputs(model: ModelProto, names: list[str]) -> bytes:
    """`model` serialized with `names` added as graph outputs (onnxruntime infers their
    types)."""
    present = {info.name for info in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(ValueInfoProto(name=name))
    return model.SerializeToString()
