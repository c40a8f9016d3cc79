import numpy as np
import pytest

from systolic.mapper.passes import pipeline
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .table_models import make, node, op_types, steps

XS, XZ = np.float32(0.05), np.uint8(128)
SS, SZ = np.float32(1 / 255), np.uint8(0)
YS, YZ = np.float32(0.03), np.uint8(30)
CONSTANTS = {"xs": XS, "xz": XZ, "ss": SS, "sz": SZ, "ys": YS, "yz": YZ}


def two_step(binary):
    """onnxruntime's QDQ SiLU form: DQ(x) -> Sigmoid -> Q (s); DQ(x) (op) DQ(s) -> Q (y)."""
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
             node("Sigmoid", ["xd"], ["s"], name="sig"),
             node("QuantizeLinear", ["s", "ss", "sz"], ["sq"], name="q_sig"),
             node("DequantizeLinear", ["xq", "xs", "xz"], ["xd2"], name="dq_x2"),
             node("DequantizeLinear", ["sq", "ss", "sz"], ["sd"], name="dq_sig"),
             node(binary, ["xd2", "sd"], ["m"], name="op"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    return make(nodes, [("xq", np.uint8, [1, 4, 8, 8])], [("y", np.uint8, [1, 4, 8, 8])],
                CONSTANTS)


def chained_tables():
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Sigmoid", ["xd"], ["s"], name="sig"),
             node("QuantizeLinear", ["s", "ss", "sz"], ["sq"], name="q_sig"),
             node("DequantizeLinear", ["sq", "ss", "sz"], ["sd"]),
             node("Tanh", ["sd"], ["t"], name="tanh"),
             node("QuantizeLinear", ["t", "ys", "yz"], ["y"], name="q")]
    return make(nodes, [("xq", np.uint8, [1, 4, 8, 8])], [("y", np.uint8, [1, 4, 8, 8])],
                CONSTANTS)


def unfused(model, monkeypatch):
    """The integer graph without composition (the reference of exactness)."""
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "compose_tables", lambda m, _report: m)
        return run_passes(model)[0]


def all_values():
    return np.resize(np.arange(256), (1, 4, 8, 8)).astype(np.uint8)


@pytest.mark.parametrize(("build", "before"), [
    (lambda: two_step("Mul"), ["QTable", "QMul"]),
    (lambda: two_step("Add"), ["QTable", "QAdd"]),
    (chained_tables, ["QTable", "QTable"]),
])
def test_functions_of_one_tensor_become_one_table_bit_exact(build, before, monkeypatch):
    proto, model = build()
    integer = unfused(model, monkeypatch)
    assert op_types(integer) == before
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable"]
    feed = {"xq": all_values()}
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(integer, feed)["y"])
    # against the float QDQ graph: the unfused integer ops round as QMul/QAdd do (once, exact)
    vs_onnx, _ = steps(proto, model, fused, feed)
    assert np.abs(vs_onnx).max() <= 1
    last = fused.graph.nodes[0].name
    assert report.fate("sig").into == f"systolic.QTable {last!r}"
    assert report.fate("q_sig").into == f"systolic.QTable {last!r}"


def test_table_read_elsewhere_stays_for_its_other_reader():
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Sigmoid", ["xd"], ["s"], name="sig"),
             node("QuantizeLinear", ["s", "ss", "sz"], ["sq"], name="q_sig"),
             node("DequantizeLinear", ["sq", "ss", "sz"], ["sd"]),
             node("Tanh", ["sd"], ["t"], name="tanh"),
             node("QuantizeLinear", ["t", "ys", "yz"], ["y"], name="q")]
    _, model = make(nodes, [("xq", np.uint8, [4])],
                    [("y", np.uint8, [4]), ("sq", np.uint8, [4])], CONSTANTS)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable", "QTable"]
    assert [n.inputs[0] for n in fused.graph.nodes] == ["xq", "xq"]
    assert report.fate("sig").into == "systolic.QTable 'sig'"


def test_per_channel_product_is_not_composed():
    constants = {**CONSTANTS}
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("DequantizeLinear", ["gq", "xs", "xz"], ["gd"]),
             node("Mul", ["xd", "gd"], ["m"], name="mul"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    _, model = make(nodes, [("xq", np.uint8, [1, 4, 2, 2]), ("gq", np.uint8, [1, 4, 1, 1])],
                    [("y", np.uint8, [1, 4, 2, 2])], constants)
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QMul"]


def test_gelu_as_onnxruntime_quantizes_it_composes_over_rounds(monkeypatch):
    """DQ(x) -> Div -> Erf -> Add -> Q (p); DQ(x) * DQ(p) -> Q (m); DQ(m) * 0.5 -> Q (y): the
    product becomes a table in the first round, the table after it in the second."""
    constants = {**CONSTANTS, "ps": np.float32(2 / 255), "pz": np.uint8(0),
                 "ms": np.float32(0.05), "mz": np.uint8(10), "sqrt2": np.float32(np.sqrt(2)),
                 "one": np.float32(1), "half": np.float32(0.5)}
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Div", ["xd", "sqrt2"], ["d"], name="div"), node("Erf", ["d"], ["e"]),
             node("Add", ["e", "one"], ["p"]),
             node("QuantizeLinear", ["p", "ps", "pz"], ["pq"]),
             node("DequantizeLinear", ["pq", "ps", "pz"], ["pd"]),
             node("Mul", ["xd", "pd"], ["m"], name="mul"),
             node("QuantizeLinear", ["m", "ms", "mz"], ["mq"]),
             node("DequantizeLinear", ["mq", "ms", "mz"], ["md"]),
             node("Mul", ["md", "half"], ["h"], name="half_mul"),
             node("QuantizeLinear", ["h", "ys", "yz"], ["y"])]
    proto, model = make(nodes, [("xq", np.uint8, [1, 4, 8, 8])], [("y", np.uint8, [1, 4, 8, 8])],
                        constants)
    integer = unfused(model, monkeypatch)
    assert op_types(integer) == ["QTable", "QMul", "QTable"]
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable"]
    feed = {"xq": all_values()}
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(integer, feed)["y"])
    assert {report.fate(n).into for n in ("div", "mul", "half_mul")} == {
        f"systolic.QTable {fused.graph.nodes[0].name!r}"}
    vs_onnx, _ = steps(proto, model, fused, feed)
    assert np.abs(vs_onnx).max() <= 1
