"""onnxruntime's int16 saturation inside com.microsoft DynamicQuantizeLSTM (int8 weights).

onnxruntime computes the LSTM's two products with its uint8 x int8 kernels (the saturating
ones on CPUs without VNNI, `onnxruntime_saturation`): per direction, the input projection
DynamicQuantizeLinear(X [seq·batch, input]) @ W [input, 4·hidden], and at each step
DynamicQuantizeLinear(H_{t-1} [batch, hidden]) @ R [hidden, 4·hidden] (the reference op
`op_dynamic_quantize_lstm` computes them the same way, with exact sums). `lstm_overflows`
rebuilds those uint8 activations from the node's inputs and its output Y (each H_t is a step
of Y; a batch row past its sequence length keeps its last state) and tells whether a pair
sum leaves int16. uint8 weights go through onnxruntime's exact uint8 x uint8 kernels.
"""

from collections.abc import Iterator, Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops.op_dynamic_quantize_linear import DynamicQuantizeLinear
from systolic.simulation.onnxruntime_saturation import pair_sums_overflow

__all__ = ["LSTM_WEIGHTS", "lstm_overflows", "previous_states"]

LSTM_WEIGHTS = ((1, 9), (2, 11))
"""DynamicQuantizeLSTM's (weight, weight zero point) input positions: W, then R."""

_QUANTIZE = DynamicQuantizeLinear(Attrs(), 11, "saturation check")


def lstm_overflows(
    args: Sequence[np.ndarray | None], results: Sequence[np.ndarray], direction: str
) -> bool:
    """True when the DynamicQuantizeLSTM with inputs `args`, outputs `results` (Y first, as
    the reference computes it, layout 0) and attribute `direction` has a uint8 x int8 pair sum
    outside int16 in onnxruntime's kernels."""
    x, w, r = args[0], args[1], args[2]
    if x is None or w is None or r is None or w.dtype != np.int8 or not results:
        return False
    y = results[0]
    seq, batch = x.shape[0], x.shape[1]
    projection = _quantized(x.reshape(seq * batch, -1))
    for d in range(w.shape[0]):
        if pair_sums_overflow(projection, w[d]):
            return True
        for h in previous_states(args, y, d, direction):
            if pair_sums_overflow(_quantized(h), r[d]):
                return True
    return False


def _quantized(values: np.ndarray) -> np.ndarray:
    return _QUANTIZE.run([values.astype(np.float32)])[0]


def previous_states(
    args: Sequence[np.ndarray | None], y: np.ndarray, d: int, direction: str
) -> Iterator[np.ndarray]:
    """Yield H_{t-1} [batch, hidden] of direction `d`, step by step in execution order."""
    seq, _, batch, hidden = y.shape
    lens, h0 = _optional(args, 4), _optional(args, 5)
    lengths = np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)
    start = np.zeros((batch, hidden), np.float32) if h0 is None else h0[d].astype(np.float32)
    rows = np.arange(batch)
    reverse = direction == "reverse" or d == 1
    for t in range(seq - 1, -1, -1) if reverse else range(seq):
        if reverse:  # rows start at their last step; before that they hold h0
            source = np.minimum(t + 1, lengths - 1)
            started = (t + 1 < lengths)[:, None]
        else:  # rows stop at their last step and keep its state
            source = np.clip(np.minimum(t - 1, lengths - 1), 0, None)
            started = ((t >= 1) & (lengths >= 1))[:, None]
        yield np.where(started, y[np.clip(source, 0, seq - 1), d, rows], start)


def _optional(args: Sequence[np.ndarray | None], index: int) -> np.ndarray | None:
    return args[index] if index < len(args) else None
