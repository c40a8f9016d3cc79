"""Small ONNX models with Loop and Scan nodes, built with onnx.helper and accepted by the ONNX
checker (full check): a counted Loop whose body multiplies a carried row by an outer weight
(a capture) and stacks every step (scan output), a while Loop stopped by its body's condition,
a Scan accumulating the rows of a matrix in either direction along either axis, and the form
torch's TorchScript exporter gives a scripted `for i in range(x.shape[0])` loop."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["OPSET", "counted_loop", "counter_loop", "scan_sum", "sliced_loop", "while_loop"]

OPSET = 17
_F, _B, _I = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def _checked(graph: onnx.GraphProto, opset: int) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _io(name: str, elem: int, shape: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def counted_loop(trips: int = 3, *, opset: int = OPSET, width: int = 4) -> onnx.ModelProto:
    """y0 [1, width], x [1, width] -> Loop(M=trips, cond=true): y = y @ W + x (W an outer
    initializer the body reads by name), scan output Relu(y). Outputs: the final y and the
    stacked [trips, 1, width] scan. Body MACs: width * width per iteration."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["mm"]),
         helper.make_node("Add", ["mm", "x"], ["y_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Relu", ["y_out"], ["step"])],
        "body", [_io("i", _I, []), _io("cond_in", _B, []), _io("y_in", _F, [1, width])],
        [_io("cond_out", _B, []), _io("y_out", _F, [1, width]), _io("step", _F, [1, width])])
    weight = np.random.default_rng(0).standard_normal((width, width)).astype(np.float32) * 0.5
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c", "y0"], ["yf", "steps"], body=body)], "g",
        [_io("x", _F, [1, width]), _io("y0", _F, [1, width])],
        [_io("yf", _F, [1, width]), _io("steps", _F, [trips, 1, width])],
        [numpy_helper.from_array(weight, "W"),
         numpy_helper.from_array(np.array(trips, np.int64), "M"),
         numpy_helper.from_array(np.array(True), "c")])
    return _checked(graph, opset)


def while_loop(*, opset: int = OPSET, with_trips: bool = False) -> onnx.ModelProto:
    """s0 [3] -> Loop(cond=start): s = s * 2 + 1 while sum(s) < limit (an input); with
    `with_trips`, also at most M=2 iterations. Output: the final s and the iteration count
    (a second carried value incremented by the body)."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "two"], ["dbl"]),
         helper.make_node("Add", ["dbl", "one"], ["s_out"]),
         helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"]),
         helper.make_node("Add", ["n_in", "step"], ["n_out"])],
        "body", [_io("i", _I, []), _io("cond_in", _B, []), _io("s_in", _F, [3]),
                 _io("n_in", _I, [])],
        [_io("cond_out", _B, []), _io("s_out", _F, [3]), _io("n_out", _I, [])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
         numpy_helper.from_array(np.array(1.0, np.float32), "one"),
         numpy_helper.from_array(np.array(1, np.int64), "step")])
    constants = [numpy_helper.from_array(np.array(0, np.int64), "n0")]
    if with_trips:
        constants.append(numpy_helper.from_array(np.array(2, np.int64), "M"))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M" if with_trips else "", "start", "s0", "n0"],
                          ["sf", "count"], body=body)], "g",
        [_io("s0", _F, [3]), _io("limit", _F, []), _io("start", _B, [])],
        [_io("sf", _F, [3]), _io("count", _I, [])], constants)
    return _checked(graph, opset)


def scan_sum(*, opset: int = OPSET, rows: int = 5, width: int = 4, input_axis: int = 0,
             reverse_in: bool = False, output_axis: int = 0, reverse_out: bool = False,
             matmul: bool = False) -> onnx.ModelProto:
    """s0 [width], x (rows x width, transposed when input_axis is 1 or -1) -> Scan: s = s + x_t
    (with `matmul`, s = s @ W + x_t: width * width MACs a step), scan output 2 s stacked along
    `output_axis`. Directions and axes are the Scan-9+ attributes."""
    nodes = [helper.make_node("Add", ["s_mid", "xt"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "two"], ["o"])]
    nodes.insert(0, helper.make_node("MatMul", ["s_in", "W"], ["s_mid"]) if matmul
                 else helper.make_node("Identity", ["s_in"], ["s_mid"]))
    body = helper.make_graph(
        nodes, "body", [_io("s_in", _F, [width]), _io("xt", _F, [width])],
        [_io("s_out", _F, [width]), _io("o", _F, [width])])
    x_shape = [rows, width] if input_axis == 0 else [width, rows]
    out_shape = [rows, width] if output_axis == 0 else [width, rows]
    weight = np.random.default_rng(1).standard_normal((width, width)).astype(np.float32) * 0.5
    attrs = {"num_scan_inputs": 1, "scan_input_axes": [input_axis],
             "scan_input_directions": [int(reverse_in)], "scan_output_axes": [output_axis],
             "scan_output_directions": [int(reverse_out)]}
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "x"], ["sf", "os"], body=body, **attrs)], "g",
        [_io("s0", _F, [width]), _io("x", _F, x_shape)],
        [_io("sf", _F, [width]), _io("os", _F, out_shape)],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")]
        + ([numpy_helper.from_array(weight, "W")] if matmul else []))
    return _checked(graph, opset)


def sliced_loop(rows: int = 4, width: int = 8, hidden: int = 16) -> onnx.ModelProto:
    """torch.onnx.export (TorchScript) of `h = tanh(x[i:i+1] @ A + h @ B)` for each row i of
    x [rows, width], h [1, hidden] from an input: M and cond are Constant nodes of the main
    graph, the body slices x by Unsqueeze(i) and Unsqueeze(i + 1), its condition output is an
    Identity of the main graph's true, and the Loop's output has no declared type.
    Body MACs: width * hidden + hidden * hidden."""
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((width, hidden)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((hidden, hidden)) * 0.3).astype(np.float32)
    constant = helper.make_node
    body = helper.make_graph(
        [constant("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
         constant("Constant", [], ["zero_axis"],
                  value=numpy_helper.from_array(np.array([0], np.int64))),
         helper.make_node("Add", ["i", "one"], ["next"]),
         helper.make_node("Unsqueeze", ["i", "zero_axis"], ["start"]),
         helper.make_node("Unsqueeze", ["next", "zero_axis"], ["end"]),
         helper.make_node("Slice", ["x", "start", "end", "zero_axis"], ["row"]),
         helper.make_node("MatMul", ["row", "A"], ["xa"]),
         helper.make_node("MatMul", ["h_in", "B"], ["hb"]),
         helper.make_node("Add", ["xa", "hb"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["keep_going"], ["cond_out"])],
        "body", [_io("i", _I, []), _io("cond_in", _B, []), _io("h_in", _F, None)],
        [_io("cond_out", _B, None), _io("h_out", _F, None)])
    graph = helper.make_graph(
        [constant("Constant", [], ["M"], value=numpy_helper.from_array(np.array(rows, np.int64))),
         constant("Constant", [], ["keep_going"],
                  value=numpy_helper.from_array(np.array(True))),
         helper.make_node("Loop", ["M", "keep_going", "h0"], ["h"], body=body),
         helper.make_node("Relu", ["h"], ["y"])], "g",
        [_io("x", _F, [rows, width]), _io("h0", _F, [1, hidden])],
        [_io("y", _F, [1, hidden])],
        [numpy_helper.from_array(a, "A"), numpy_helper.from_array(b, "B")])
    return _checked(graph, OPSET)


def counter_loop(n: int = 4, *, huge_trip: bool = True, width: int = 4) -> onnx.ModelProto:
    """tf2onnx's form of a TF while loop `while k < n: h = tanh(h @ W); k += 1`: M is int64's
    maximum (or absent), cond a constant true, the counter k a carried value from 0 and the
    body's condition Less(k + 1, n). Outputs: the final h [1, width] and k."""
    rng = np.random.default_rng(3)
    weight = (rng.standard_normal((width, width)) * 0.5).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["k_in", "one"], ["k_out"]),
         helper.make_node("Less", ["k_out", "n"], ["cond_out"]),
         helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
         helper.make_node("Tanh", ["hw"], ["h_out"])],
        "body", [_io("i", _I, []), _io("cond_in", _B, []), _io("k_in", _I, []),
                 _io("h_in", _F, [1, width])],
        [_io("cond_out", _B, []), _io("k_out", _I, []), _io("h_out", _F, [1, width])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    constants = [numpy_helper.from_array(np.array(n, np.int64), "n"),
                 numpy_helper.from_array(np.array(0, np.int64), "k0"),
                 numpy_helper.from_array(np.array(True), "go"),
                 numpy_helper.from_array(weight, "W")]
    if huge_trip:
        constants.append(numpy_helper.from_array(np.array(2**63 - 1, np.int64), "M"))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M" if huge_trip else "", "go", "k0", "h0"], ["kf", "h"],
                          body=body)], "g",
        [_io("h0", _F, [1, width])], [_io("h", _F, [1, width]), _io("kf", _I, [])],
        constants)
    return _checked(graph, OPSET)
