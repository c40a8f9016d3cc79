"""unroll_recurrent on com.microsoft DynamicQuantizeLSTM: the unrolled graph (DynamicQuantizeLinear,
MatMulInteger, Cast, Mul for X once and for H once per step, all the gates' columns at once,
then a Gather of each gate's columns; float gates) computes what the reference's
DynamicQuantizeLSTM computes, to float32 rounding (1e-5 absolute stated; the float additions
group differently and the gate functions run in float32 instead of float64)."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from systolic.mapper.importer import load_model_bytes
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.unroll_recurrent import unroll_recurrent
from systolic.reference.executor import run_model

SEQ, BATCH, INPUT, HIDDEN = 5, 2, 6, 4
TOLERANCE = 1e-5


def dynamic_lstm(*, direction="forward", per_column=False, initial=None, peepholes=False,
                 uint8=False, seed=0, **attrs):
    """Return (model, feeds) of one DynamicQuantizeLSTM with random 8-bit weights; `initial`
    None, "input" (graph inputs) or "const"."""
    r = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = 4 * HIDDEN
    scale_shape = (dirs, g) if per_column else (dirs,)
    weight_type = np.uint8 if uint8 else np.int8
    constants = {}
    for name, shape in (("W", (dirs, INPUT, g)), ("R", (dirs, HIDDEN, g))):
        low, high = (0, 256) if uint8 else (-127, 128)
        constants[name] = r.integers(low, high, shape).astype(weight_type)
        constants[f"{name}_scale"] = (0.002 + 0.006 * r.random(scale_shape)).astype(np.float32)
        zero = r.integers(100, 156, scale_shape) if uint8 else np.zeros(scale_shape)
        constants[f"{name}_zero_point"] = zero.astype(weight_type)
    constants["B"] = (r.standard_normal((dirs, 2 * g)) * 0.2).astype(np.float32)
    names = ["X", "W", "R", "B", "", "", "", "", "W_scale", "W_zero_point", "R_scale",
             "R_zero_point"]
    state = [dirs, BATCH, HIDDEN]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT])]
    feeds = {"X": r.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)}
    for index, name in ((5, "h0"), (6, "c0")):
        if initial is None:
            continue
        names[index] = name
        value = (r.standard_normal(state) * 0.5).astype(np.float32)
        if initial == "input":
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state))
            feeds[name] = value
        else:
            constants[name] = value
    if peepholes:
        constants["P"] = (r.standard_normal((dirs, 3 * HIDDEN)) * 0.3).astype(np.float32)
        names[7] = "P"
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"],
                            domain="com.microsoft", hidden_size=HIDDEN, direction=direction,
                            name="dqlstm", **attrs)
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
               for n, s in (("Y", [SEQ, dirs, BATCH, HIDDEN]), ("Y_h", state), ("Y_c", state))]
    initializers = [helper.make_tensor(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape,
                                       v.flatten().tolist()) for k, v in constants.items()]
    graph = helper.make_graph([node], "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return load_model_bytes(model.SerializeToString()), feeds


def assert_unrolled_close(model, feeds):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    unrolled = finalize(unroll_recurrent(model, report))
    ops = {n.op_type for n in unrolled.graph.nodes}
    assert "DynamicQuantizeLSTM" not in ops and "MatMulInteger" in ops, report.text()
    assert report.fate("dqlstm").action == "fused"
    expected, got = run_model(model, feeds), run_model(unrolled, feeds)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=0, atol=TOLERANCE, err_msg=name)
    return unrolled


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("initial", [None, "input", "const"])
def test_every_direction_and_initial_state(direction, initial):
    model, feeds = dynamic_lstm(direction=direction, initial=initial)
    assert_unrolled_close(model, feeds)


@pytest.mark.parametrize("uint8", [False, True])
def test_per_column_scales_and_zero_points(uint8):
    model, feeds = dynamic_lstm(direction="bidirectional", per_column=True, uint8=uint8,
                                initial="input", seed=2)
    assert_unrolled_close(model, feeds)


def test_peepholes_clip_input_forget():
    model, feeds = dynamic_lstm(direction="bidirectional", peepholes=True, clip=0.9,
                                input_forget=1, initial="input", seed=4)
    assert_unrolled_close(model, feeds)


def test_one_quantization_of_x_and_one_of_h_per_step():
    """X: one product of every gate's columns over every step; H: one per step; each gate's
    columns a Gather along the last axis."""
    model, feeds = dynamic_lstm(initial="input")
    unrolled = assert_unrolled_close(model, feeds)
    quantizations = [n for n in unrolled.graph.nodes if n.op_type == "DynamicQuantizeLinear"]
    assert len(quantizations) == 1 + SEQ
    products = [n for n in unrolled.graph.nodes if n.op_type == "MatMulInteger"]
    assert len(products) == 1 + SEQ
    columns = [n for n in unrolled.graph.nodes
               if n.op_type == "Gather" and n.attrs.get("axis") == -1]
    assert len(columns) == 4 * (1 + SEQ)


@pytest.mark.parametrize("per_column", [False, True])
def test_one_scale_product_per_quantized_value(per_column):
    """a_scale·w_scale is one Mul per quantized value (X once, H per step), of a scalar or of
    the per-column scales of every gate."""
    model, feeds = dynamic_lstm(initial="input", per_column=per_column)
    unrolled = assert_unrolled_close(model, feeds)
    quantized = [n for n in unrolled.graph.nodes if n.op_type == "DynamicQuantizeLinear"]
    scales = {n.outputs[1] for n in quantized}
    scale_products = [n for n in unrolled.graph.nodes
                      if n.op_type == "Mul" and n.inputs[0] in scales]
    assert len(scale_products) == 1 + SEQ == len(quantized)
