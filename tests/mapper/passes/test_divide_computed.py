"""divide_computed: a Div of two computed float tensors -> Mul(a, Reciprocal(b)) before PTQ;
with quantize_float's reciprocal cut, a QTable of b and a QMul on the accelerator."""

import numpy as np

from systolic.mapper.passes import quantize_float
from systolic.mapper.passes.divide_computed import divide_computed
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

SHAPE = [1, 8, 16]
EPS = np.float32(1e-5)
W = np.random.default_rng(0).uniform(-0.5, 1.0, (16, 16)).astype(np.float32)
V = np.abs(np.random.default_rng(1).uniform(0.2, 1.0, (16, 1))).astype(np.float32)


def linear_attention_model():
    """num = Relu(x @ W), den = Relu(x @ v) + eps, y = num / den: EfficientViT's
    out[..., :-1] / (out[..., -1:] + eps) in small (a row x = 0 gives num 0 and den eps)."""
    nodes = [node("MatMul", ["x", "w"], ["xw"], name="mm_num"),
             node("Relu", ["xw"], ["num"], name="relu_num"),
             node("MatMul", ["x", "v"], ["xv"], name="mm_den"),
             node("Relu", ["xv"], ["rden"], name="relu_den"),
             node("Add", ["rden", "eps"], ["den"], name="den"),
             node("Div", ["num", "den"], ["y"], name="div")]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, SHAPE)],
                 {"w": W, "v": V, "eps": EPS})


def feeds(seed, count):
    """Inputs in [0, 1] with row 0 all zeros (its divisor is eps, its numerator 0)."""
    r = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = r.uniform(0.0, 1.0, SHAPE).astype(np.float32)
        x[0, 0] = 0.0
        out.append({"x": x})
    return out


def test_a_quotient_of_computed_tensors_becomes_a_product_by_the_reciprocal():
    model = linear_attention_model()
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    rewritten = finalize(divide_computed(model, report))
    assert [n.op_type for n in rewritten.graph.nodes][-2:] == ["Reciprocal", "Mul"]
    assert report.note_of("div").startswith("a quotient of two computed tensors")
    feed = feeds(1, 1)[0]
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-6)


def test_a_divisor_of_a_normalization_or_of_the_same_tensor_stays():
    """x / Sqrt(v) is a normalization's (fuse_layernorm); x / (1 + x) one table of x."""
    nodes = [node("Sqrt", ["v"], ["sd"], name="sqrt"), node("Relu", ["x"], ["rx"]),
             node("Div", ["rx", "sd"], ["y"], name="div"),
             node("Add", ["rx", "one"], ["d1"]), node("Div", ["rx", "d1"], ["y2"], name="div2")]
    model = build(nodes, [("x", np.float32, SHAPE), ("v", np.float32, SHAPE)],
                  [("y", np.float32, SHAPE), ("y2", np.float32, SHAPE)],
                  {"one": np.float32(1.0)})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert divide_computed(model, report) is model


def test_a_quotient_of_a_host_reduction_stays():
    """GRN's Gx / (mean(Gx) + eps), Gx = ReduceL2 over H, W (a host op): left with it."""
    nodes = [node("Relu", ["x"], ["rx"]),
             node("ReduceL2", ["rx"], ["gx"], axes=[1, 2], keepdims=1),
             node("ReduceMean", ["gx"], ["mean"], axes=[-1], keepdims=1),
             node("Add", ["mean", "eps"], ["den"]), node("Div", ["gx", "den"], ["y"], name="div")]
    model = build(nodes, [("x", np.float32, [1, 4, 4, 8])], [("y", np.float32, [1, 1, 1, 8])],
                  {"eps": EPS})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert divide_computed(model, report) is model


def _errors(model, integer, seed):
    """Max |integer - float| over the rows but 0, relative to the largest float result."""
    feed = feeds(seed, 1)[0]
    want, got = run_model(model, feed)["y"], run_model(integer, feed)["y"]
    np.testing.assert_array_equal(got[0, 0], 0.0)  # 0 / eps: 0 either way
    return float(np.abs(got[0, 1:] - want[0, 1:]).max() / np.abs(want[0, 1:]).max())


def test_the_reciprocal_is_quantized_within_what_its_divisor_represents(monkeypatch):
    """The divisor reaches eps = 1e-5 in calibration (row 0), so 1 / b alone spans 1e5 and
    every ordinary 1 / b (about 0.2) quantizes to 0. Cut at 1 / (s_b - eps) the Div runs as a
    QTable and a QMul within 25% of the largest float result (1 / b keeps about 2 codes
    here: the divisor spans [eps, 8], the documented limit), against 100% uncut."""
    model = linear_attention_model()
    integer, report = run_passes(model, calibration=feeds(2, 4))
    ops = [n.op_type for n in integer.graph.nodes]
    assert "QTable" in ops and "QMul" in ops and "Div" not in ops
    assert report.fate("div").action != "host"
    assert _errors(model, integer, 3) < 0.25
    monkeypatch.setattr(quantize_float, "_reciprocal_cuts", lambda *args: None)
    uncut, _ = run_passes(model, calibration=feeds(2, 4))
    assert _errors(model, uncut, 3) > 0.9
