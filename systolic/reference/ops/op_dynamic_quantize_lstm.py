"""com.microsoft DynamicQuantizeLSTM-1: an LSTM whose weights are 8-bit and whose matrix
products quantize their float operand dynamically (what onnxruntime's `quantize_dynamic`
writes for LSTM).

Inputs (onnxruntime's contrib schema): X, W, R, B?, sequence_lens?, initial_h?, initial_c?,
P?, W_scale, W_zero_point, R_scale, R_zero_point. Unlike LSTM, W is [directions, input,
4·hidden] and R [directions, hidden, 4·hidden] (transposed), int8 or uint8; the scales are
float32 and the zero points of W's type, per direction ([directions]) or per column
([directions, 4·hidden]). Attributes and everything else as LSTM-7 (op_recurrent.py): gates
i, o, f, c, activations, clip, input_forget, peepholes, sequence_lens, layout 0 only.

The products, as onnxruntime's CPU kernel computes them (rnn_helpers.cc, ComputeGemm for
quantized weights): the input projection of one direction is one product over all its steps,
X [seq·batch, input] quantized as DynamicQuantizeLinear does (uint8, per tensor, range
widened to include 0, scale 1 when the range is empty); each step's recurrent product
quantizes H_{t-1} [batch, hidden] the same way. A product is the exact int32 sum of
(a_q - a_zp)·(w_q - w_zp), converted to float32 and multiplied by the float32 a_scale·w_scale
(per column when the scales are); the recurrent product is added to the input projection in
float32, then the float32 sum of the biases Wb + Rb. The gate functions and the cell update
run in float64 (the reference's LSTM), each output rounded to float32 once.

Against onnxruntime: onnxruntime computes the gate functions with its own float32
approximations and splits a batch over threads (each thread's rows then get their own
quantization parameters: this reference quantizes all batch rows together, as onnxruntime does
with one thread or batch 1), so results agree to float32 rounding until a value lands on the
other side of a rounding boundary of H's quantization; tests state the tolerance measured.
"""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_dynamic_quantize_linear import DynamicQuantizeLinear
from systolic.reference.ops.op_recurrent import LSTM

__all__ = ["OPS", "DynamicQuantizeLSTM"]

_WEIGHT_TYPES = frozenset({DataType.INT8, DataType.UINT8})


class DynamicQuantizeLSTM(LSTM):
    """See the module docstring."""

    domain = "com.microsoft"
    op_type = "DynamicQuantizeLSTM"
    since_versions: ClassVar[tuple[int, ...]] = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self._quantize = DynamicQuantizeLinear(Attrs(), 11, node_label)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (12 - len(inputs))
        x, w, r = padded[0], padded[1], padded[2]
        assert x is not None and w is not None and r is not None
        check_type(self, x, FLOAT_TYPES, "X")
        for info, name in ((w, "W"), (r, "R")):
            check_type(self, info, _WEIGHT_TYPES, name)
            if len(info.shape) != 3:
                raise self.error(f"{name} must have rank 3, not shape {list(info.shape)}")
        if w.dtype != r.dtype:
            raise self.error(f"W and R must have one type, not {w.dtype.short} and "
                             f"{r.dtype.short}")  # fmt: skip
        for index, name in ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"),
                            (11, "R_zero_point")):  # fmt: skip
            if padded[index] is None:
                raise self.error(f"{name} is required")
        self._check_quantization(padded[8:12], w, r)
        as_lstm = [TensorInfo(x.dtype, (w.shape[0], w.shape[2], w.shape[1])),
                   TensorInfo(x.dtype, (r.shape[0], r.shape[2], r.shape[1]))]  # fmt: skip
        return super().infer([x, *as_lstm, *padded[3:8]])

    def _check_quantization(self, infos: Sequence[TensorInfo | None], w: TensorInfo,
                            r: TensorInfo) -> None:
        for (scale, zero_point), weight, name in (((infos[0], infos[1]), w, "W"),
                                                  ((infos[2], infos[3]), r, "R")):
            assert scale is not None and zero_point is not None
            allowed = ((weight.shape[0],), (weight.shape[0], weight.shape[2]))
            if tuple(scale.shape) not in allowed or tuple(zero_point.shape) not in allowed:
                raise self.error(f"{name}_scale and {name}_zero_point must have shape "
                                 f"{list(allowed[0])} or {list(allowed[1])}")  # fmt: skip
            check_type(self, scale, frozenset({DataType.FLOAT}), f"{name}_scale")
            if zero_point.dtype != weight.dtype:
                raise self.error(f"{name}_zero_point must have {name}'s type "
                                 f"{weight.dtype.short}")  # fmt: skip

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (12 - len(inputs))
        x, w, r, b, lens, h0, c0, p, w_scale, w_zp, r_scale, r_zp = padded
        assert x is not None and w is not None and r is not None
        assert w_scale is not None and w_zp is not None and r_scale is not None
        assert r_zp is not None
        seq, batch, features = x.shape
        hidden = r.shape[1]
        lengths = np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)
        if np.any(lengths < 0) or np.any(lengths > seq):
            raise self.error(f"sequence_lens must be from 0 to {seq}, not {lengths.tolist()}")
        ys, finals = [], []
        for d in range(self.directions):
            w_d = _Weights(w[d], w_scale[d], w_zp[d])
            r_d = _Weights(r[d], r_scale[d], r_zp[d])
            xw = self._product(x.reshape(seq * batch, features), w_d).reshape(seq, batch, -1)
            bias = np.zeros(4 * hidden, np.float32) if b is None else b[d].astype(np.float32)
            bias = bias[: 4 * hidden] + bias[4 * hidden :]
            peep = np.zeros(3 * hidden) if p is None else p[d].astype(np.float64)
            state = [self._initial(s, d, batch, hidden) for s in (h0, c0)]
            y, state = self._loop(xw, r_d, bias, peep, state, lengths, d)
            ys.append(y)
            finals.append(state)
        outs = [np.stack(ys, axis=1), np.stack([f[0] for f in finals]),
                np.stack([f[1] for f in finals])]  # fmt: skip
        return [o.astype(x.dtype) for o in outs][: max(self.num_outputs or 1, 1)]

    def _product(self, a: np.ndarray, weights: "_Weights") -> np.ndarray:
        """a [M, K] (float) times the dequantized weights [K, N], as onnxruntime computes it."""
        a_q, a_scale, a_zp = self._quantize.run([a.astype(np.float32)])
        acc = (a_q.astype(np.int64) - np.int64(a_zp)) @ weights.centered
        scale = (np.float32(a_scale) * weights.scale).astype(np.float32)
        return (acc.astype(np.int32).astype(np.float32) * scale).astype(np.float32)

    def _loop(self, xw: np.ndarray, r_d: "_Weights", bias: np.ndarray, peep: np.ndarray,
              state: list[np.ndarray], lengths: np.ndarray,
              d: int) -> tuple[np.ndarray, list[np.ndarray]]:
        seq, batch, _ = xw.shape
        hidden = r_d.centered.shape[0]
        functions = self.activations[3 * d : 3 * d + 3]
        f, g, act_h = self._clipped(functions[0]), self._clipped(functions[1]), functions[2]
        reverse = self.direction == "reverse" or d == 1
        y = np.zeros((seq, batch, hidden))
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            h, c = state
            gates32 = (xw[t] + self._product(h, r_d)).astype(np.float32) + bias
            gates = gates32.astype(np.float64)
            n = hidden
            i = f(gates[:, :n] + peep[:n] * c)
            forget = 1.0 - i if self.input_forget else f(gates[:, 2 * n : 3 * n]
                                                          + peep[2 * n :] * c)
            cell = forget * c + i * g(gates[:, 3 * n :])
            o = f(gates[:, n : 2 * n] + peep[n : 2 * n] * cell)
            active = (t < lengths)[:, None]
            state = [np.where(active, o * act_h(cell), h), np.where(active, cell, c)]
            y[t] = np.where(active, state[0], 0.0)
        empty = (lengths == 0)[:, None]
        return y, [np.where(empty, 0.0, s) for s in state]


class _Weights:
    """One direction's 8-bit weights [K, N] less their zero points, and their scales [N]."""

    def __init__(self, values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> None:
        columns = values.shape[1]
        zp = np.broadcast_to(zero_point.astype(np.int64), (columns,))
        self.centered = values.astype(np.int64) - zp
        self.scale = np.broadcast_to(scale.astype(np.float32), (columns,))


OPS = (DynamicQuantizeLSTM,)
