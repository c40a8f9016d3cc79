"""RNN, GRU and LSTM (versions 1, 7, 14, 22; GRU also 3): recurrent layers over a sequence.

Version 1's `output_sequence` only said whether Y may be omitted, and GRU-3 added
`linear_before_reset` (default 0 before): one class serves every version.

Common to the three (the ONNX operator documentation, "RNN", "GRU", "LSTM"):

- inputs `X, W, R, B?, sequence_lens?, initial_h?` (LSTM: then `initial_c?, P?`): X is
  `[seq, batch, input]` (`layout` 1, version 14 on: `[batch, seq, input]`); per direction W is
  `[gates·hidden, input]`, R `[gates·hidden, hidden]`, B the input and the recurrence biases
  `[2·gates·hidden]`; gates are RNN 1 (i), GRU 3 (z, r, h), LSTM 4 (i, o, f, c);
- attributes `hidden_size`, `direction` (forward, reverse, bidirectional), `activations`
  (per direction: RNN f, GRU f g, LSTM f g h; default Tanh; Sigmoid Tanh; Sigmoid Tanh
  Tanh), `activation_alpha`/`activation_beta` (each function that has an alpha, resp. a
  beta, takes the next value of the list, as onnxruntime reads them; missing ones default as
  the activation operators do), `clip` (bounds the gates' inputs to [-clip, clip]; LSTM's h
  of the cell state is not clipped, as in onnxruntime), LSTM `input_forget` (f = 1 - i);
- outputs `Y?` `[seq, directions, batch, hidden]` (layout 1: `[batch, seq, directions,
  hidden]`), `Y_h?` the last hidden state `[directions, batch, hidden]` (layout 1: batch
  first), LSTM `Y_c?` the last cell state likewise;
- `sequence_lens[b]`: batch entry b runs only its first `sequence_lens[b]` steps (the reverse
  direction from step `sequence_lens[b] - 1` down); Y is 0 at later steps and Y_h/Y_c hold the
  state after its last step (0 when its length is 0, as onnxruntime computes).

Computed in float64, each output rounded once to X's type.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, int_attr, str_attr
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["GRU", "LSTM", "OPS", "RNN"]

Activation = Callable[[np.ndarray], np.ndarray]

_DEFAULT_ALPHA = {"LeakyRelu": 0.01, "ThresholdedRelu": 1.0, "HardSigmoid": 0.2, "Elu": 1.0,
                  "ScaledTanh": 1.0, "Affine": 1.0}  # fmt: skip
_DEFAULT_BETA = {"HardSigmoid": 0.5, "ScaledTanh": 1.0, "Affine": 0.0}


def _activation(name: str, alpha: float, beta: float) -> Activation | None:
    """Return the named activation of the recurrent operators, or None if unknown."""
    table: dict[str, Activation] = {
        "Relu": lambda x: np.maximum(x, 0.0),
        "Tanh": np.tanh,
        "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "Affine": lambda x: alpha * x + beta,
        "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
        "ThresholdedRelu": lambda x: np.where(x > alpha, x, 0.0),
        "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0.0, 1.0),
        "Elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1.0)),
        "Softsign": lambda x: x / (1.0 + np.abs(x)),
        "Softplus": lambda x: np.logaddexp(0.0, x),
    }
    return table.get(name)


@dataclasses.dataclass(frozen=True)
class _Direction:
    """One direction's weights (float64) and activations (`f` clipped, `raw` not)."""

    w: np.ndarray
    r: np.ndarray
    wb: np.ndarray
    rb: np.ndarray
    p: np.ndarray
    f: list[Activation]
    raw: list[Activation]


class _Recurrent(Op):
    """What RNN, GRU and LSTM share: attributes, shapes and the loop over time."""

    since_versions: ClassVar[tuple[int, ...]] = (1, 7, 14, 22)
    gates: int
    default_activations: tuple[str, ...]

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.direction = str_attr(self, "direction", "forward")
        if self.direction not in ("forward", "reverse", "bidirectional"):
            raise self.error(f"direction {self.direction!r} is not forward, reverse or "
                             f"bidirectional")  # fmt: skip
        self.directions = 2 if self.direction == "bidirectional" else 1
        self.hidden_size = int_attr(self, "hidden_size", 0)
        self.layout = int_attr(self, "layout", 0) if version >= 14 else 0
        if self.layout not in (0, 1):
            raise self.error(f"layout must be 0 or 1, not {self.layout}")
        clip = self.attr("clip")
        self.clip = None if clip is None else float_attr(self, "clip", 0.0)
        if self.clip is not None and not self.clip > 0:
            raise self.error(f"clip must be positive, not {self.clip}")
        self.activations = self._parse_activations()
        """Per direction, the functions in the operator's order, unclipped (see `_clipped`)."""

    def _list_attr(self, name: str) -> list[str | float]:
        value = self.attr(name)
        if value is None:
            return []
        items = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(v, (str, bytes, int, float)) for v in items):
            raise self.error(f"attribute {name!r} must be a list of strings or floats")
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v  # type: ignore[misc]
                for v in items]  # fmt: skip

    def _parse_activations(self) -> list[Activation]:
        per_direction = len(self.default_activations)
        given = [str(n) for n in self._list_attr("activations")]
        names = given or list(self.default_activations) * self.directions
        if len(names) != per_direction * self.directions:
            raise self.error(f"activations lists {len(names)} functions; {self.op_type} "
                             f"{self.direction} needs {per_direction * self.directions}")
        alphas = [float(a) for a in self._list_attr("activation_alpha")][::-1]
        betas = [float(b) for b in self._list_attr("activation_beta")][::-1]
        functions = []
        for name in names:  # each function that has an alpha (beta) takes the next one
            alpha = _DEFAULT_ALPHA.get(name, 0.0)
            if name in _DEFAULT_ALPHA and alphas:
                alpha = alphas.pop()
            beta = _DEFAULT_BETA.get(name, 0.0)
            if name in _DEFAULT_BETA and betas:
                beta = betas.pop()
            function = _activation(name, alpha, beta)
            if function is None:
                raise self.error(f"activation {name!r} is not one of the recurrent operators' "
                                 f"functions (Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                 f"ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, "
                                 f"Softplus)")  # fmt: skip
            functions.append(function)
        return functions

    def _clipped(self, function: Activation) -> Activation:
        if self.clip is None:
            return function
        bound = self.clip
        return lambda x: function(np.clip(x, -bound, bound))

    # -- shapes --------------------------------------------------------------------------------

    def _dims(self, x: TensorInfo, w: TensorInfo, r: TensorInfo) -> tuple[int, int, int]:
        """Return (seq, batch, hidden) after checking X, W and R."""
        if len(x.shape) != 3:
            raise self.error(f"X must have rank 3, not shape {list(x.shape)}")
        seq, batch, features = x.shape if self.layout == 0 else (x.shape[1], x.shape[0], x.shape[2])
        hidden = self.hidden_size or (r.shape[-1] if len(r.shape) == 3 else 0)
        expect_w = (self.directions, self.gates * hidden, features)
        expect_r = (self.directions, self.gates * hidden, hidden)
        for info, expect, name in ((w, expect_w, "W"), (r, expect_r, "R")):
            if tuple(info.shape) != expect:
                raise self.error(f"{name} has shape {list(info.shape)}, expected {list(expect)} "
                                 f"(directions, {self.gates}·hidden_size, ...)")  # fmt: skip
        return seq, batch, hidden

    def _check_optional(self, inputs: Sequence[TensorInfo | None], batch: int, hidden: int) -> None:
        expected = {3: (self.directions, 2 * self.gates * hidden), 4: (batch,),
                    5: self._state_shape(batch, hidden), 6: self._state_shape(batch, hidden),
                    7: (self.directions, 3 * hidden)}  # fmt: skip
        names = {3: "B", 4: "sequence_lens", 5: "initial_h", 6: "initial_c", 7: "P"}
        for index, info in enumerate(inputs):
            if info is None or index < 3:
                continue
            if tuple(info.shape) != expected[index]:
                raise self.error(f"{names[index]} has shape {list(info.shape)}, expected "
                                 f"{list(expected[index])}")  # fmt: skip
            if index == 4 and info.dtype != DataType.INT32:
                raise self.error(f"sequence_lens must be int32, not {info.dtype.short}")

    def _state_shape(self, batch: int, hidden: int) -> tuple[int, int, int]:
        if self.layout == 0:
            return (self.directions, batch, hidden)
        return (batch, self.directions, hidden)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, r = inputs[0], inputs[1], inputs[2]
        assert x is not None and w is not None and r is not None
        for info, name in ((x, "X"), (w, "W"), (r, "R")):
            check_type(self, info, FLOAT_TYPES, name)
        seq, batch, hidden = self._dims(x, w, r)
        self._check_optional(inputs, batch, hidden)
        if self.layout == 0:
            y_shape = (seq, self.directions, batch, hidden)
        else:
            y_shape = (batch, seq, self.directions, hidden)
        state = self._state_shape(batch, hidden)
        shapes = [y_shape, state, state][: self.max_outputs]
        return [TensorInfo(x.dtype, shape) for shape in shapes][: max(self.num_outputs or 1, 1)]

    max_outputs = 2

    # -- running -------------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (8 - len(inputs))
        x, w, r, b, lens, h0, c0, p = padded
        assert x is not None and w is not None and r is not None
        dtype = x.dtype
        x64 = x.astype(np.float64)
        if self.layout == 1:
            x64 = x64.transpose(1, 0, 2)
        seq, batch, _ = x64.shape
        hidden = r.shape[-1]
        lengths = np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)
        if np.any(lengths < 0) or np.any(lengths > seq):
            raise self.error(f"sequence_lens must be from 0 to {seq}, not {lengths.tolist()}")
        ys, finals = [], []
        for d in range(self.directions):
            state = [self._initial(s, d, batch, hidden) for s in (h0, c0)]
            params = self._direction_params(w, r, b, p, d, hidden)
            reverse = self.direction == "reverse" or d == 1
            y, state = self._scan(x64, lengths, params, state, reverse, d)
            ys.append(y)
            finals.append(state)
        y_all = np.stack(ys, axis=1)  # [seq, dirs, batch, hidden]
        outs = [y_all, np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals])]
        if self.layout == 1:
            outs = [outs[0].transpose(2, 0, 1, 3), outs[1].transpose(1, 0, 2),
                    outs[2].transpose(1, 0, 2)]  # fmt: skip
        return [o.astype(dtype) for o in outs[: self.max_outputs]][: max(self.num_outputs or 1, 1)]

    def _initial(self, state: np.ndarray | None, d: int, batch: int, hidden: int) -> np.ndarray:
        if state is None:
            return np.zeros((batch, hidden))
        state = state.astype(np.float64)
        return state[d] if self.layout == 0 else state[:, d]

    def _direction_params(self, w: np.ndarray, r: np.ndarray, b: np.ndarray | None,
                          p: np.ndarray | None, d: int, hidden: int) -> "_Direction":
        g = self.gates * hidden
        bias = np.zeros(2 * g) if b is None else b[d].astype(np.float64)
        peep = np.zeros(3 * hidden) if p is None else p[d].astype(np.float64)
        raw = self.activations[d * len(self.default_activations):]
        return _Direction(w[d].astype(np.float64), r[d].astype(np.float64), bias[:g], bias[g:],
                          peep, [self._clipped(f) for f in raw], raw)  # fmt: skip

    def _scan(self, x: np.ndarray, lengths: np.ndarray, params: "_Direction", state: list[np.ndarray],
              reverse: bool, d: int) -> tuple[np.ndarray, list[np.ndarray]]:
        seq, batch, _ = x.shape
        y = np.zeros((seq, batch, state[0].shape[1]))
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            active = (t < lengths)[:, None]
            new = self.step(x[t], state, params)
            state = [np.where(active, n, s) for n, s in zip(new, state, strict=True)]
            y[t] = np.where(active, state[0], 0.0)
        empty = (lengths == 0)[:, None]  # no step: onnxruntime's final states are 0
        return y, [np.where(empty, 0.0, s) for s in state]

    def step(self, x: np.ndarray, state: list[np.ndarray], params: "_Direction") -> list[np.ndarray]:
        """Return the states (H, C) after one time step of every batch entry."""
        raise NotImplementedError


class RNN(_Recurrent):
    """RNN-7/14/22: H_t = f(X_t·W^T + H_{t-1}·R^T + Wb + Rb)."""

    op_type = "RNN"
    gates = 1
    default_activations = ("Tanh",)

    def step(self, x: np.ndarray, state: list[np.ndarray], params: "_Direction") -> list[np.ndarray]:
        h, c = state
        f = params.f[0]
        return [f(x @ params.w.T + h @ params.r.T + params.wb + params.rb), c]


class GRU(_Recurrent):
    """GRU-7/14/22: z and r gates (f), the candidate h (g) with `linear_before_reset`,
    H_t = (1 - z)·h + z·H_{t-1}."""

    op_type = "GRU"
    since_versions = (1, 3, 7, 14, 22)
    gates = 3
    default_activations = ("Sigmoid", "Tanh")

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.linear_before_reset = int_attr(self, "linear_before_reset", 0) != 0

    def step(self, x: np.ndarray, state: list[np.ndarray], params: "_Direction") -> list[np.ndarray]:
        h, c = state
        f, g = params.f[0], params.f[1]
        n = h.shape[1]
        xw = x @ params.w.T + params.wb
        wr, rb = params.r, params.rb
        hr = h @ wr[: 2 * n].T + rb[: 2 * n]
        z = f(xw[:, :n] + hr[:, :n])
        r = f(xw[:, n : 2 * n] + hr[:, n:])
        if self.linear_before_reset:
            candidate = g(xw[:, 2 * n :] + r * (h @ wr[2 * n :].T + rb[2 * n :]))
        else:
            candidate = g(xw[:, 2 * n :] + (r * h) @ wr[2 * n :].T + rb[2 * n :])
        return [(1.0 - z) * candidate + z * h, c]


class LSTM(_Recurrent):
    """LSTM-7/14/22: gates i, o, f (f, with peepholes P = [Pi, Po, Pf]) and the cell input c
    (g); C_t = f·C_{t-1} + i·c, H_t = o·h(C_t); `input_forget` couples f = 1 - i."""

    op_type = "LSTM"
    gates = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")
    max_outputs = 3

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.input_forget = int_attr(self, "input_forget", 0) != 0

    def step(self, x: np.ndarray, state: list[np.ndarray], params: "_Direction") -> list[np.ndarray]:
        h, c = state
        f, g, act_h = params.f[0], params.f[1], params.raw[2]  # the cell: not clipped
        n = h.shape[1]
        gates = x @ params.w.T + h @ params.r.T + params.wb + params.rb
        p_i, p_o, p_f = params.p[:n], params.p[n : 2 * n], params.p[2 * n :]
        i = f(gates[:, :n] + p_i * c)
        forget = 1.0 - i if self.input_forget else f(gates[:, 2 * n : 3 * n] + p_f * c)
        cell = forget * c + i * g(gates[:, 3 * n :])
        o = f(gates[:, n : 2 * n] + p_o * cell)
        return [o * act_h(cell), cell]


OPS = (RNN, GRU, LSTM)
