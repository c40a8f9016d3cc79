"""Unroll com.microsoft DynamicQuantizeLSTM: the LSTM of recurrent_unroller.py with its two
products as onnxruntime computes them (systolic/reference/ops/op_dynamic_quantize_lstm.py):

- X·W: DynamicQuantizeLinear of X (once, every step: uint8, scale, zero point),
  MatMulInteger(X_q, W[d] [input, 4·hidden], x_zp, w_zp), Cast to float32, Mul by
  x_scale·w_scale (a float32 Mul of the scalar and the scales), + B (Wb + Rb of every gate),
  then each gate's columns by a Gather along the last axis: one product, one zero point
  correction and one scaling Mul on the host for the four gates;
- H·R: the same with DynamicQuantizeLinear of H_{t-1} (once per step, shared by the gates),
  one product of all the gates' columns R[d] [hidden, 4·hidden] per step (one MatMulInteger,
  one zero point correction and one Mul on the host instead of four), each gate's columns
  then taken by a Gather of constant indices along the last axis (which the island's
  quantization keeps as a layout op on the integers: every element is the same int32 sum and
  the same float32 product as in a gate's own product); a zero state has no product
  (onnxruntime's adds exactly 0);
- the scale product a_scale·w_scale is one Mul per activation scale and weight scale: the
  four gates of a per-tensor W (R) share it.

W is [directions, input, 4·hidden] and R [directions, hidden, 4·hidden] (8-bit); scales and
zero points per direction or per column. The float additions group as (X·W_k + B_k) + H·R_k
where onnxruntime adds (X·W_k + H·R_k) + B_k: float32 rounding apart.
"""

import numpy as np

from systolic.mapper.passes.graph_tools import make_node
from systolic.mapper.passes.recurrent_unroller import State, Unroller

__all__ = ["DynamicUnroller"]


class DynamicUnroller(Unroller):
    """Writes one DynamicQuantizeLSTM's unrolled nodes (integer products, float gates)."""

    def _load_weights(self, constants: dict[str, np.ndarray]) -> tuple[int, int]:
        inputs = self.node.inputs
        self.w_q, self.r_q = constants[inputs[1]], constants[inputs[2]]
        self.w_scale, self.w_zp = constants[inputs[8]], constants[inputs[9]]
        self.r_scale, self.r_zp = constants[inputs[10]], constants[inputs[11]]
        self.x_quantized: tuple[str, str, str] | None = None
        self.h_quantized: dict[str, tuple[str, str, str]] = {}
        self.h_products: dict[tuple[str, int], str] = {}
        self.multipliers: dict[tuple[str, bytes, tuple[int, ...]], str] = {}
        return self.w_q.shape[0], self.r_q.shape[1]

    def _projections(self, d: int, wb: np.ndarray, rb: np.ndarray) -> list[str]:
        """X·W[d] + (Wb + Rb) over every step and all the gates' columns at once, then each
        gate's columns (a Gather along the last axis)."""
        if self.x_quantized is None:
            self.x_quantized = self._quantize(self.node.inputs[0])
        product = self._product(self.x_quantized, self.w_q, self.w_scale, self.w_zp, d,
                                slice(None))
        biased = self.b.op("Add", [product, self.b.const(wb + rb)])
        n = self.hidden
        return [self._columns(biased, slice(k * n, (k + 1) * n)) for k in range(self.gates)]

    def _columns(self, value: str, rows: slice) -> str:
        """The gate's columns `rows` of `value` (a Gather along the last axis)."""
        columns = np.arange(rows.start, rows.stop, dtype=np.int64)
        return self.b.op("Gather", [value, self.b.const(columns, np.dtype(np.int64))], axis=-1)

    def _recurrent_product(self, d: int, rows: slice, h: State) -> State:
        if h is None:
            return None
        name = self.b.value(h)
        if (name, d) not in self.h_products:
            if name not in self.h_quantized:
                self.h_quantized[name] = self._quantize(name)
            self.h_products[name, d] = self._product(self.h_quantized[name], self.r_q,
                                                     self.r_scale, self.r_zp, d, slice(None))
        return self._columns(self.h_products[name, d], rows)

    def _quantize(self, value: str) -> tuple[str, str, str]:
        """DynamicQuantizeLinear of `value`: (quantized, scale, zero point)."""
        outputs = [self.b.namer(f"{self.b.base}_{part}") for part in ("q", "scale", "zp")]
        self.b.nodes.append(make_node("DynamicQuantizeLinear", [value], outputs,
                                      name=self.b.namer(outputs[0])))
        return outputs[0], outputs[1], outputs[2]

    def _product(self, a: tuple[str, str, str], weights: np.ndarray, scales: np.ndarray,
                 zero_points: np.ndarray, d: int, rows: slice) -> str:
        a_q, a_scale, a_zp = a
        columns = weights.shape[2]
        zp = np.broadcast_to(zero_points[d], (columns,))[rows]
        zp_value = zp[:1].reshape(()) if np.all(zp == zp[0]) else zp
        scale = np.broadcast_to(scales[d], (columns,))[rows].astype(np.float32)
        scale_value = scale[:1].reshape(()) if np.all(scale == scale[0]) else scale
        b = self.b
        product = b.op("MatMulInteger", [a_q, b.const(weights[d][:, rows], weights.dtype), a_zp,
                                         b.const(zp_value, weights.dtype)])
        as_float = b.op("Cast", [product], to=1)
        return b.op("Mul", [as_float, self._multiplier(a_scale, scale_value)])

    def _multiplier(self, a_scale: str, scale: np.ndarray) -> str:
        """a_scale · scale (float32), one Mul per activation scale and weight scale: the
        gates of a per-tensor W or R share it."""
        key = (a_scale, scale.tobytes(), scale.shape)
        if key not in self.multipliers:
            constant = self.b.const(scale, np.dtype(np.float32))
            self.multipliers[key] = self.b.op("Mul", [a_scale, constant])
        return self.multipliers[key]
