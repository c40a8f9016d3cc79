"""Unroll RNN, GRU and LSTM over their (static) sequence into plain float ONNX nodes, so that
quantize_float and the fusions put the gate matmuls on the array (QMatMul), the gate functions
in the activation unit (QTable) and the gate products and sums in the vector unit (QMul,
QAdd).

The algebra (systolic/reference/ops/op_recurrent.py states the operators' semantics), per
direction d and gate k (LSTM i, o, f, c; GRU z, r, h; RNN one gate), W_k, R_k the gate's
[hidden, *] rows of W[d], R[d] and Wb_k, Rb_k its biases:

- the input projection of every time step at once: XW_k = X·W_k^T + (Wb_k + Rb_k), one
  MatMul per gate over the whole [seq, batch, input] X (layout 1: [batch, seq, input]);
  GRU's h gate with `linear_before_reset` adds only Wb_h there (Rb_h is inside the reset);
- per step t (the reverse direction from the last step down): a_k = XW_k[t] (a Gather on the
  time axis) + H_{t-1}·R_k^T (a MatMul per gate: no split of a 4H-wide result is needed);
  `clip` is a Clip of the functions' inputs (not of LSTM's h(C_t)); activations are the
  equivalent ONNX ops (Affine: Mul, Add; ScaledTanh: Mul, Tanh, Mul; Softsign: Div(x, Abs(x)
  + 1); ThresholdedRelu: Where(x > alpha, x, 0));
- LSTM: i = f(a_i + P_i·C), f = f(a_f + P_f·C) (`input_forget`: 1 - i), C_t = f·C + i·g(a_c),
  o = f(a_o + P_o·C_t), H_t = o·h(C_t);
- GRU: z = f(a_z), r = f(a_r), h~ = g(XW_h[t] + (r·H)·R_h^T) (`linear_before_reset`:
  g(XW_h[t] + r·(H·R_h^T + Rb_h))), H_t = (1 - z)·h~ + z·H;
- RNN: H_t = f(a);
- Y = Concat over time of the H_t (reshaped to [1, 1, batch, hidden], layout 1 [batch, 1,
  1, hidden]), the directions concatenated; Y_h, Y_c the last states (reshaped, concatenated).

A state that is absent or a constant of zeros is no node at all (the first step has no
recurrent matmul); a nonzero constant state's products are computed here in float64.

Preconditions, else the node stays on the host with the reason noted: a float model (a
quantized model keeps its float recurrent layers on the host: unrolling pays only before
quantize_float), X's shape static with at least one step, W, R, B, P constants,
sequence_lens absent or a constant equal to the full length for every batch entry, and a
known activation.
"""

import dataclasses
from typing import Any

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_int,
    attr_str,
    constants_of,
    make_node,
    replace_graph,
)
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.recurrent_activations import activation_specs
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["RECURRENT_OPS", "unroll_recurrent"]

RECURRENT_OPS = {"RNN": 1, "GRU": 3, "LSTM": 4}
"""The recurrent operators and their number of gates."""

Spec = tuple[str, float, float]
"""An activation: (name, alpha, beta)."""

State = str | np.ndarray | None
"""A value of the unrolled graph: a value name, a constant (float64), or None for zeros."""


def unroll_recurrent(model: Model, report: PassReport) -> Model:
    """Return `model` with every unrollable RNN, GRU and LSTM replaced by per-step nodes."""
    graph = model.graph
    recurrent = [n for n in graph.nodes if n.op_type in RECURRENT_OPS and n.domain == ""]
    if not recurrent:
        return model
    if is_quantized(model):
        for node in recurrent:
            report.note(node.label, "the model is quantized already: its float "
                        f"{node.op_type} runs on the host (unrolled only in float models)")
        return model
    constants = constants_of(graph)
    opset = model.opset("") or 1
    namer = Namer(graph)
    nodes: list[Node] = []
    new_constants: list[Tensor] = []
    for node in graph.nodes:
        why = _why_not(node, model, constants) if node in recurrent else "keep"
        if why is not None:
            if why != "keep":
                report.note(node.label, why)
            nodes.append(node)
            continue
        builder = _Builder(namer, node.label, x_dtype(node, model), opset)
        _Unroller(node, model, constants, builder).run()
        nodes += builder.nodes
        new_constants += builder.constants
        report.record(node.label, FUSED,
                      into=f"{len(builder.nodes)} float nodes unrolled over the sequence")
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, new_constants))


def x_dtype(node: Node, model: Model) -> np.dtype:
    x_type = model.graph.type_of(node.inputs[0])
    assert x_type is not None
    return x_type.dtype.numpy


def _why_not(node: Node, model: Model, constants: dict[str, np.ndarray]) -> str | None:
    x_type = model.graph.type_of(node.inputs[0])
    if x_type is None or not x_type.is_static or x_type.shape is None:
        return "X's shape is not static: the sequence cannot be unrolled"
    if len(x_type.shape) != 3 or x_type.dtype.numpy.kind != "f":
        return "X is not a float tensor of rank 3"
    layout = attr_int(node, "layout", 0)
    seq = int(x_type.shape[1] if layout else x_type.shape[0])  # type: ignore[arg-type]
    if seq < 1:
        return "the sequence is empty"
    for index, what in ((1, "W"), (2, "R"), (3, "B"), (7, "P")):
        name = _input(node, index)
        if name and name not in constants:
            return f"{what} is not a constant"
    lens = _input(node, 4)
    if lens:
        value = constants.get(lens)
        if value is None or not np.all(value == seq):
            return f"sequence_lens is not a constant equal to the full length {seq}"
    try:
        activation_specs(node)
    except ValueError as error:
        return str(error)
    return None


def _input(node: Node, index: int) -> str:
    return node.inputs[index] if index < len(node.inputs) else ""


class _Builder:
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


class _Unroller:
    """Writes one recurrent node's unrolled nodes into a `_Builder`."""

    def __init__(self, node: Node, model: Model, constants: dict[str, np.ndarray],
                 builder: _Builder) -> None:
        self.node, self.b = node, builder
        self.op_type = node.op_type
        self.gates = RECURRENT_OPS[node.op_type]
        self.layout = attr_int(node, "layout", 0)
        self.seq_axis = 1 if self.layout else 0
        self.w = constants[node.inputs[1]].astype(np.float64)
        self.r = constants[node.inputs[2]].astype(np.float64)
        self.directions = self.w.shape[0]
        self.hidden = self.r.shape[-1]
        x_type = model.graph.type_of(node.inputs[0])
        assert x_type is not None and x_type.shape is not None
        self.seq = int(x_type.shape[self.seq_axis])  # type: ignore[arg-type]
        self.batch = int(x_type.shape[1 - self.seq_axis])  # type: ignore[arg-type]
        bias = constants.get(_input(node, 3))
        width = 2 * self.gates * self.hidden
        self.bias = (np.zeros((self.directions, width)) if bias is None
                     else bias.astype(np.float64))
        peep = constants.get(_input(node, 7))
        self.peep = None if peep is None else peep.astype(np.float64)
        self.constants = constants
        clip = node.attrs.get("clip")
        self.clip = None if clip is None else attr_float(node, "clip", 0.0)
        self.specs = activation_specs(node)
        self.input_forget = attr_int(node, "input_forget", 0) != 0
        self.linear_before_reset = attr_int(node, "linear_before_reset", 0) != 0
        direction = attr_str(node, "direction", "forward")
        self.reverse = [direction == "reverse" or d == 1 for d in range(self.directions)]

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
        projections = []
        for k in range(self.gates):
            rows = slice(k * n, (k + 1) * n)
            bias_k = wb[rows] + rb[rows]
            if self.op_type == "GRU" and k == 2 and self.linear_before_reset:
                bias_k = wb[rows]
            product = self.b.op("MatMul", [self.node.inputs[0], self.b.const(self.w[d, rows].T)])
            projections.append(self.b.op("Add", [product, self.b.const(bias_k)]))
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

    def _initial(self, index: int, d: int) -> State:
        name = _input(self.node, index)
        if not name or (index == 6 and self.op_type != "LSTM"):
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
        result = self.b.add(xw[k], self.b.matmul(h, self.r[d, rows].T))
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
