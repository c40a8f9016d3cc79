"""The nodes of one unrolled recurrent layer (see unroll_recurrent.py for the algebra):
`Builder` collects float nodes and constants, `Unroller` writes an RNN/GRU/LSTM into one;
subclasses replace the two products (`_input_product`, `_recurrent_product`)."""

from typing import Any

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, attr_float, attr_int, attr_str, make_node
from systolic.mapper.passes.recurrent_activations import activation_specs

__all__ = ["GATES", "Builder", "Spec", "State", "Unroller", "input_name"]

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4, "DynamicQuantizeLSTM": 4}
"""The recurrent operators and their number of gates."""

Spec = tuple[str, float, float]
"""An activation: (name, alpha, beta)."""

State = str | np.ndarray | None
"""A value of the unrolled graph: a value name, a constant (float64), or None for zeros."""


def input_name(node: Node, index: int) -> str:
    """The node's input `index`, "" when omitted."""
    return node.inputs[index] if index < len(node.inputs) else ""


class Builder:
    """Collects the nodes and constants of one unrolled layer (float, in X's type)."""

    def __init__(self, namer: Namer, base: str, dtype: np.dtype, opset: int) -> None:
        self.namer, self.base, self.dtype, self.opset = namer, base, dtype, opset
        self.nodes: list[Node] = []
        self.constants: list[Tensor] = []

    def const(self, value: np.ndarray | float, dtype: np.dtype | None = None) -> str:
        name = self.namer(f"{self.base}_const")
        data = np.array(value, dtype or self.dtype)  # 0-d stays 0-d (a Gather index)
        data.flags.writeable = False
        self.constants.append(Tensor(name, DataType.from_numpy(data.dtype), data))
        return name

    def op(self, op_type: str, inputs: list[str], output: str = "", **attrs: Any) -> str:
        out = output or self.namer(f"{self.base}_{op_type}")
        self.nodes.append(make_node(op_type, inputs, [out], name=self.namer(out),
                                    attrs=attrs))
        return out

    def value(self, state: State) -> str:
        assert state is not None
        return state if isinstance(state, str) else self.const(state)

    def add(self, a: State, b: State) -> State:
        if a is None or b is None:
            return b if a is None else a
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a + b
        return self.op("Add", [self.value(a), self.value(b)])

    def mul(self, a: State, b: State) -> State:
        if a is None or b is None:
            return None
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a * b
        return self.op("Mul", [self.value(a), self.value(b)])

    def matmul(self, state: State, weight_t: np.ndarray) -> State:
        """state · weight_t (weight_t constant [hidden, hidden])."""
        if state is None or isinstance(state, np.ndarray):
            return None if state is None else state @ weight_t
        return self.op("MatMul", [state, self.const(weight_t)])

    def clip(self, x: str, bound: float) -> str:
        if self.opset >= 11:
            return self.op("Clip", [x, self.const(-bound), self.const(bound)])
        return self.op("Clip", [x], min=-bound, max=bound)

    def activation(self, spec: Spec, x: str) -> str:
        name, alpha, beta = spec
        if name == "Affine":
            return self.op("Add", [self.op("Mul", [x, self.const(alpha)]), self.const(beta)])
        if name == "ScaledTanh":
            inner = self.op("Tanh", [self.op("Mul", [x, self.const(beta)])])
            return self.op("Mul", [inner, self.const(alpha)])
        if name == "Softsign":  # x / (1 + |x|)
            return self.op("Div", [x, self.op("Add", [self.op("Abs", [x]), self.const(1.0)])])
        if name == "ThresholdedRelu":  # x where x > alpha, else 0
            above = self.op("Greater", [x, self.const(alpha)])
            return self.op("Where", [above, x, self.const(0.0)])
        attrs: dict[str, Any] = {}
        if name in ("LeakyRelu", "Elu", "HardSigmoid"):
            attrs["alpha"] = alpha
        if name == "HardSigmoid":
            attrs["beta"] = beta
        return self.op(name, [x], **attrs)


class Unroller:
    """Writes one recurrent node's unrolled nodes into a `Builder`."""

    def __init__(self, node: Node, model: Model, constants: dict[str, np.ndarray],
                 builder: Builder) -> None:
        self.node, self.b = node, builder
        self.op_type = node.op_type
        self.gates = GATES[node.op_type]
        self.layout = attr_int(node, "layout", 0)
        self.seq_axis = 1 if self.layout else 0
        self.directions, self.hidden = self._load_weights(constants)
        x_type = model.graph.type_of(node.inputs[0])
        assert x_type is not None and x_type.shape is not None
        self.seq = int(x_type.shape[self.seq_axis])  # type: ignore[arg-type]
        self.batch = int(x_type.shape[1 - self.seq_axis])  # type: ignore[arg-type]
        bias = constants.get(input_name(node, 3))
        width = 2 * self.gates * self.hidden
        self.bias = (np.zeros((self.directions, width)) if bias is None
                     else bias.astype(np.float64))
        peep = constants.get(input_name(node, 7))
        self.peep = None if peep is None else peep.astype(np.float64)
        self.constants = constants
        clip = node.attrs.get("clip")
        self.clip = None if clip is None else attr_float(node, "clip", 0.0)
        self.specs = activation_specs(node)
        self.input_forget = attr_int(node, "input_forget", 0) != 0
        self.linear_before_reset = attr_int(node, "linear_before_reset", 0) != 0
        direction = attr_str(node, "direction", "forward")
        self.reverse = [direction == "reverse" or d == 1 for d in range(self.directions)]

    def _load_weights(self, constants: dict[str, np.ndarray]) -> tuple[int, int]:
        """Read W and R; return (directions, hidden)."""
        self.w = constants[self.node.inputs[1]].astype(np.float64)
        self.r = constants[self.node.inputs[2]].astype(np.float64)
        return self.w.shape[0], self.r.shape[-1]

    def _input_product(self, d: int, rows: slice) -> str:
        """X·W_k^T over every step (W_k: the gate's `rows` of W[d])."""
        return self.b.op("MatMul", [self.node.inputs[0], self.b.const(self.w[d, rows].T)])

    def _recurrent_product(self, d: int, rows: slice, h: State) -> State:
        """H·R_k^T (None when H is zero)."""
        return self.b.matmul(h, self.r[d, rows].T)

    def run(self) -> None:
        hs, finals = [], []
        for d in range(self.directions):
            h_steps, state = self._direction(d)
            hs.append(h_steps)
            finals.append(state)
        outputs = list(self.node.outputs) + [""] * 3
        if outputs[0]:
            self._write_y(hs, outputs[0])
        for index in (1, 2):
            if outputs[index]:
                self._write_state([f[index - 1] for f in finals], outputs[index])

    # -- one direction -------------------------------------------------------------------------

    def _direction(self, d: int) -> tuple[list[str], tuple[State, State]]:
        n = self.hidden
        specs = self.specs[d * len(self.specs) // self.directions:]
        wb, rb = self.bias[d, : self.gates * n], self.bias[d, self.gates * n :]
        projections = self._projections(d, wb, rb)
        h: State = self._initial(5, d)
        c: State = self._initial(6, d)
        steps = range(self.seq - 1, -1, -1) if self.reverse[d] else range(self.seq)
        h_by_time: dict[int, str] = {}
        for t in steps:
            index = self.b.const(np.array(t, np.int64), np.dtype(np.int64))
            xw = [self.b.op("Gather", [p, index], axis=self.seq_axis) for p in projections]
            h, c = self._step(d, specs, xw, h, c, rb)
            assert isinstance(h, str)
            h_by_time[t] = h
        return [h_by_time[t] for t in range(self.seq)], (h, c)

    def _projections(self, d: int, wb: np.ndarray, rb: np.ndarray) -> list[str]:
        """Per gate k: X·W_k^T + (Wb_k + Rb_k) over every step (GRU's h gate with
        `linear_before_reset`: + Wb_h only)."""
        n = self.hidden
        projections = []
        for k in range(self.gates):
            rows = slice(k * n, (k + 1) * n)
            bias_k = wb[rows] + rb[rows]
            if self.op_type == "GRU" and k == 2 and self.linear_before_reset:
                bias_k = wb[rows]
            product = self._input_product(d, rows)
            projections.append(self.b.op("Add", [product, self.b.const(bias_k)]))
        return projections

    def _initial(self, index: int, d: int) -> State:
        name = input_name(self.node, index)
        if not name or (index == 6 and self.gates != 4):
            return None
        value = self.constants.get(name)
        if value is None:
            axis_index = self.b.const(np.array(d, np.int64), np.dtype(np.int64))
            return self.b.op("Gather", [name, axis_index], axis=self.seq_axis)
        state = value.astype(np.float64)[d] if self.layout == 0 else value.astype(np.float64)[:, d]
        return None if not np.any(state) else state

    def _gate(self, d: int, k: int, xw: list[str], h: State) -> str:
        """xw_k[t] + H·R_k^T."""
        rows = slice(k * self.hidden, (k + 1) * self.hidden)
        result = self.b.add(xw[k], self._recurrent_product(d, rows, h))
        assert isinstance(result, str)
        return result

    def _apply(self, spec: Spec, x: State, clipped: bool = True) -> str:
        value = self.b.value(x)
        if clipped and self.clip is not None:
            value = self.b.clip(value, self.clip)
        return self.b.activation(spec, value)

    def _peephole(self, d: int, which: int, c: State) -> State:
        if self.peep is None:
            return None
        p = self.peep[d, which * self.hidden : (which + 1) * self.hidden]
        return None if not np.any(p) else self.b.mul(c, p)

    def _step(self, d: int, specs: list[Spec], xw: list[str], h: State, c: State,
              rb: np.ndarray) -> tuple[State, State]:
        if self.op_type == "RNN":
            return self._apply(specs[0], self._gate(d, 0, xw, h)), c
        if self.op_type == "GRU":
            return self._gru(d, specs, xw, h, rb), c
        return self._lstm(d, specs, xw, h, c)

    def _lstm(self, d: int, specs: list[Spec], xw: list[str], h: State,
              c: State) -> tuple[State, State]:
        b, f, g, act_h = self.b, specs[0], specs[1], specs[2]
        i = self._apply(f, b.add(self._gate(d, 0, xw, h), self._peephole(d, 0, c)))
        cell = b.mul(i, self._apply(g, self._gate(d, 3, xw, h)))
        if c is not None:
            if self.input_forget:
                forget: State = b.op("Sub", [b.const(1.0), i])
            else:
                forget = self._apply(f, b.add(self._gate(d, 2, xw, h), self._peephole(d, 2, c)))
            cell = b.add(b.mul(forget, c), cell)
        o = self._apply(f, b.add(self._gate(d, 1, xw, h), self._peephole(d, 1, cell)))
        return b.mul(o, self._apply(act_h, cell, clipped=False)), cell

    def _gru(self, d: int, specs: list[Spec], xw: list[str], h: State, rb: np.ndarray) -> State:
        b, f, g, n = self.b, specs[0], specs[1], self.hidden
        z = self._apply(f, self._gate(d, 0, xw, h))
        r = self._apply(f, self._gate(d, 1, xw, h))
        r_h = self.r[d, 2 * n :].T
        if self.linear_before_reset:
            recurrent = b.add(b.matmul(h, r_h), rb[2 * n :] if np.any(rb[2 * n :]) else None)
            candidate_in = b.add(xw[2], b.mul(r, recurrent))
        else:
            candidate_in = b.add(xw[2], b.matmul(b.mul(r, h), r_h))
        candidate = self._apply(g, candidate_in)
        keep = b.op("Sub", [b.const(1.0), z])
        return b.add(b.mul(keep, candidate), b.mul(z, h))

    # -- outputs -------------------------------------------------------------------------------

    def _write_y(self, hs: list[list[str]], output: str) -> None:
        shape = [1, 1, self.batch, self.hidden] if self.layout == 0 else [self.batch, 1, 1,
                                                                            self.hidden]
        shape_name = self.b.const(np.array(shape, np.int64), np.dtype(np.int64))
        per_direction = []
        for steps in hs:
            target = output if self.directions == 1 else ""
            pieces = [self.b.op("Reshape", [h, shape_name]) for h in steps]
            per_direction.append(self.b.op("Concat", pieces, target, axis=self.seq_axis))
        if self.directions > 1:
            self.b.op("Concat", per_direction, output, axis=1 + self.layout)

    def _write_state(self, states: list[State], output: str) -> None:
        shape = [1, self.batch, self.hidden] if self.layout == 0 else [self.batch, 1, self.hidden]
        shape_name = self.b.const(np.array(shape, np.int64), np.dtype(np.int64))
        target = output if self.directions == 1 else ""
        pieces = [self.b.op("Reshape", [self.b.value(self._zero_if_none(s)), shape_name], target)
                  for s in states]
        if self.directions > 1:
            self.b.op("Concat", pieces, output, axis=self.layout)

    def _zero_if_none(self, state: State) -> str | np.ndarray:
        return np.zeros((self.batch, self.hidden)) if state is None else state
