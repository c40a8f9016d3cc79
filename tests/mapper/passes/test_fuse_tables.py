import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes

from .table_models import make, node, op_types, steps

XS, XZ = np.float32(0.05), np.uint8(128)
YS, YZ = np.float32(0.02), np.uint8(20)


def region_model(body, extra=None, *, opset=20, x_type=np.uint8, y_type=np.uint8,
                 shape=(1, 4, 8, 8)):
    """xq (8-bit input) -> DQ -> body (reads 'xd', writes 'f') -> Q -> yq (8-bit output)."""
    constants = {"xs": XS, "xz": np.array(XZ if x_type == np.uint8 else 3, x_type),
                 "ys": YS, "yz": np.array(YZ if y_type == np.uint8 else -5, y_type),
                 **(extra or {})}
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq"), *body,
             node("QuantizeLinear", ["f", "ys", "yz"], ["y"], name="q")]
    return make(nodes, [("xq", x_type, list(shape))], [("y", y_type, list(shape))], constants,
                opset=opset)


def all_values(x_type, shape=(1, 4, 8, 8)):
    info = np.iinfo(x_type)
    return np.resize(np.arange(info.min, info.max + 1), shape).astype(x_type)


def check(proto, model, x_type=np.uint8, onnx_steps=0):
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable"], op_types(fused)
    feed = {"xq": all_values(x_type)}
    vs_onnx, vs_ours = steps(proto, model, fused, feed)
    assert not np.any(vs_ours)  # bit-exact with the float chain as the reference runs it
    assert np.abs(vs_onnx).max() <= onnx_steps
    return fused, report


SILU = [node("Sigmoid", ["xd"], ["s"], name="sig"), node("Mul", ["xd", "s"], ["f"], name="mul")]
GELU_ERF = [node("Div", ["xd", "sqrt2"], ["d"], name="div"), node("Erf", ["d"], ["e"]),
            node("Add", ["e", "one"], ["a"]), node("Mul", ["xd", "a"], ["m"]),
            node("Mul", ["m", "half"], ["f"], name="last")]
GELU_TANH = [node("Pow", ["xd", "three"], ["p"], name="pow"), node("Mul", ["p", "c"], ["pc"]),
             node("Add", ["xd", "pc"], ["inner"]), node("Mul", ["inner", "k"], ["ik"]),
             node("Tanh", ["ik"], ["t"]), node("Add", ["t", "one"], ["t1"]),
             node("Mul", ["xd", "t1"], ["m"]), node("Mul", ["m", "half"], ["f"])]
GELU_CONSTANTS = {"sqrt2": np.float32(np.sqrt(2.0)), "one": np.float32(1.0),
                  "half": np.float32(0.5), "three": np.float32(3.0),
                  "c": np.float32(0.044715), "k": np.float32(np.sqrt(2.0 / np.pi))}


@pytest.mark.parametrize(("body", "opset"), [
    (SILU, 20),
    (GELU_ERF, 20),
    (GELU_TANH, 20),
    ([node("Gelu", ["xd"], ["f"], name="gelu")], 20),
    ([node("Mish", ["xd"], ["f"], name="mish")], 20),
    ([node("HardSwish", ["xd"], ["f"], name="hs")], 20),
    ([node("LeakyRelu", ["xd"], ["f"], alpha=0.1, name="lr")], 20),
    ([node("Tanh", ["xd"], ["f"], name="tanh")], 20),
    ([node("Sigmoid", ["xd"], ["f"], name="sig")], 20),
    ([node("Elu", ["xd"], ["f"], name="elu")], 20),
    ([node("Softplus", ["xd"], ["f"], name="sp")], 20),
    ([node("Clip", ["xd", "", "one"], ["f"], name="clip")], 20),
])
def test_region_becomes_one_table_bit_exact(body, opset):
    proto, model = region_model(body, GELU_CONSTANTS, opset=opset)
    # onnx's evaluator computes the functions in its own order and precision; a value
    # within an ulp of a rounding boundary could land one step away: at most 1 is allowed
    # (measured on all 256 inputs of every case here: 0).
    fused, report = check(proto, model, onnx_steps=1)
    first = body[0].name or "sig"
    assert report.fate(first).action == "fused"
    assert report.fate(first).into.startswith("systolic.QTable")
    assert report.fate("q").action == "fused"
    table = fused.graph.initializer(fused.graph.nodes[0].inputs[1]).data
    assert table.dtype == np.int8 and table.shape == (256,)


@pytest.mark.parametrize(("x_type", "y_type"), [(np.int8, np.int8), (np.int8, np.uint8),
                                                (np.uint8, np.int8)])
def test_signed_inputs_and_outputs(x_type, y_type):
    proto, model = region_model(SILU, x_type=x_type, y_type=y_type)
    fused, _ = check(proto, model, x_type=x_type, onnx_steps=1)
    assert fused.graph.nodes[0].attrs["to"] == (2 if y_type == np.uint8 else 3)


def test_table_holds_the_quantized_function_in_the_int8_domain():
    _proto, model = region_model([node("Relu", ["xd"], ["f"], name="relu")])
    fused, _ = run_passes(model)
    table = fused.graph.initializer(fused.graph.nodes[0].inputs[1]).data
    q = np.arange(256)
    real = np.maximum(np.float32(XS) * (q - 128).astype(np.float32), 0)
    want = np.clip(np.rint(real / YS) + YZ, 0, 255) - 128
    np.testing.assert_array_equal(table, want.astype(np.int8))


def test_bare_requantization_becomes_a_table():
    proto, model = region_model([node("Identity", ["xd"], ["f"])])
    fused, _report = run_passes(model)
    assert op_types(fused) == ["QTable"]
    vs_onnx, vs_ours = steps(proto, model, fused, {"xq": all_values(np.uint8)})
    assert not np.any(vs_onnx) and not np.any(vs_ours)


def test_per_channel_constant_is_not_one_table_but_a_per_channel_product():
    """A per-channel constant is not one table; since session 9 (the quantized model's
    per-channel Mul quantized after training) it is a QMul of a per-channel B."""
    body = [node("Mul", ["xd", "w"], ["f"], name="mul")]
    _proto, model = region_model(body, {"w": np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1,
                                                                                       1)})
    fused, report = run_passes(model)
    assert op_types(fused) == ["QMul"]
    assert report.fate("mul").action == "fused"


def test_region_value_read_outside_stays_on_the_host():
    constants = {"xs": XS, "xz": XZ, "ys": YS, "yz": YZ}
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Sigmoid", ["xd"], ["s"], name="sig"),
             node("Mul", ["xd", "s"], ["f"], name="mul"),
             node("QuantizeLinear", ["f", "ys", "yz"], ["y"], name="q")]
    _, model = make(nodes, [("xq", np.uint8, [4])],
                    [("y", np.uint8, [4]), ("s", np.float32, [4])], constants)
    fused, report = run_passes(model)
    assert "QTable" not in op_types(fused)
    assert report.fate("mul").reason == "'s', inside the region, is a graph output"


def test_two_quantized_inputs_are_not_one_table():
    constants = {"xs": XS, "xz": XZ, "ys": YS, "yz": YZ}
    nodes = [node("DequantizeLinear", ["aq", "xs", "xz"], ["ad"]),
             node("DequantizeLinear", ["bq", "xs", "xz"], ["bd"]),
             node("Sigmoid", ["bd"], ["s"], name="sig"),
             node("Add", ["ad", "s"], ["f"], name="add"),
             node("QuantizeLinear", ["f", "ys", "yz"], ["y"], name="q")]
    _, model = make(nodes, [("aq", np.uint8, [4]), ("bq", np.uint8, [4])],
                    [("y", np.uint8, [4])], constants)
    fused, report = run_passes(model)
    assert "QTable" not in op_types(fused)
    assert "reads two quantized tensors" in report.fate("add").reason


def test_a_dequantized_scalar_constant_is_a_constant_of_the_region():
    # onnxruntime's QDQ quantizer writes GELU's 0.5 as DequantizeLinear(127, 1/254, 0)
    body = [node("DequantizeLinear", ["hq", "hs", "hz"], ["h"], name="dq_half"),
            node("Mul", ["xd", "h"], ["f"], name="mul")]
    extra = {"hq": np.uint8(127), "hs": np.float32(1 / 254), "hz": np.uint8(0)}
    proto, model = region_model(body, extra)
    _, report = check(proto, model)
    assert report.fate("mul").into == "systolic.QTable 'mul'"


def test_function_whose_result_stays_float_says_so():
    constants = {"xs": XS, "xz": XZ}
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Mish", ["xd"], ["m"], name="mish"),
             node("Flatten", ["m"], ["y"], name="flatten")]
    _, model = make(nodes, [("xq", np.uint8, [1, 4, 2, 2])], [("y", np.float32, [1, 16])],
                    constants)
    _, report = run_passes(model)
    assert report.fate("mish").reason == ("its result is not quantized (read by Flatten, not a "
                                          "QuantizeLinear): the model keeps it float, on the "
                                          "host")


def test_a_function_that_is_nan_somewhere_has_no_table():
    _, model = region_model([node("Sqrt", ["xd"], ["f"], name="sqrt")])
    fused, report = run_passes(model)
    assert "QTable" not in op_types(fused)
    # q < 128 dequantizes below 0: 128 NaN inputs
    assert report.fate("sqrt").reason == ("the function is NaN for 128 input value(s) (0, 1, "
                                          "2, 3 ...): no defined table")


def test_infinities_saturate():
    _, model = region_model([node("Reciprocal", ["xd"], ["f"], name="rcp")])
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QTable"]
    table = fused.graph.initializer(fused.graph.nodes[0].inputs[1]).data
    assert table[128] == 127  # 1 / 0 = +inf -> 255 (uint8) -> 127 in the int8 domain
