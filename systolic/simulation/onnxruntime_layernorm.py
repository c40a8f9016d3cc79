"""Prove that a difference from onnxruntime comes from the model's layer normalizations.

A QDQ or QOperator model's decomposed LayerNorm quantizes its steps to 8 bits (the centred
values, their squares, the variance, ...); the accelerator's LAYERNORM (systolic.QLayerNorm)
sums exactly and rounds once, so its normalized values differ from onnxruntime's there by a
few steps (and lie closer to the float model's: docs/mapper.md, "Layer normalization").
`layernorm_explains` runs onnxruntime with the value each QLayerNorm writes (the chain's
final QuantizeLinear output, a value of the file) as an extra output, then replays our
reference with onnxruntime's values in place of ours. It holds when (1) each differs from ours
by at most `LAYERNORM_STEPS` steps and (2) the replayed outputs then equal onnxruntime's:
nothing but the normalizations differs. A model without QLayerNorm is never explained so.
"""

import os
from collections.abc import Mapping

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Model
from systolic.proto import ModelProto
from systolic.simulation.onnxruntime_float_rounding import replay_explains

__all__ = ["LAYERNORM_STEPS", "layernorm_explains", "layernorm_outputs"]

LAYERNORM_STEPS = 8
"""How far (in steps of the normalized value's quantization) onnxruntime's run of a chain
that quantizes its steps may land from the exact LAYERNORM (bert_tiny_qdq/qop: at most 5 in
the replay)."""


def layernorm_outputs(model: Model, produced: set[str]) -> list[str]:
    """The values the model's QLayerNorm nodes write that are in `produced`."""
    names = [node.outputs[0] for node in model.graph.nodes
             if node.domain == SYSTOLIC_DOMAIN and node.op_type == "QLayerNorm"]
    return [name for name in dict.fromkeys(names) if name in produced]


def layernorm_explains(
    data: bytes,
    base_dir: str | os.PathLike[str],
    model: Model,
    inputs: Mapping[str, np.ndarray],
    *,
    optimized: bool = True,
) -> bool:
    """True when onnxruntime's session on the serialized model `data` differs from our
    reference running `model` only in the values its layer normalizations write (module
    docstring)."""
    proto = ModelProto()
    proto.ParseFromString(data)
    names = layernorm_outputs(model, {name for node in proto.graph.node for name in node.output})
    if not names:
        return False
    return replay_explains(proto, base_dir, model, inputs, names, optimized=optimized,
                           within=_within_steps)


def _within_steps(ours: np.ndarray, theirs: np.ndarray) -> bool:
    if not np.issubdtype(ours.dtype, np.integer):
        return False
    difference = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
    return not difference.size or int(difference.max()) <= LAYERNORM_STEPS
