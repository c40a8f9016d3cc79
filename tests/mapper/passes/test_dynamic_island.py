"""dynamic_island: the float part of a dynamically quantized model (attention products,
Softmax, GELU, residual Adds between the DynamicQuantizeLinear -> MatMulInteger products) is
quantized after training and runs on integers; the dynamic products keep their dynamic
semantics, and the result stays close to the model as written."""

import json
from pathlib import Path

import numpy as np
import pytest

from systolic.commands.cli import main
from systolic.mapper.importer import load_model
from systolic.mapper.passes.dynamic_island import (
    dynamic_island,
    fusion_entries,
    quantizes_dynamic_island,
)
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import DYNAMIC_SCALING
from systolic.reference.executor import run_model

from .model_builder import build, node

REALISTIC = Path(__file__).resolve().parents[2] / "models" / "realistic"
ROWS, WIDTH = 4, 8


def _product(k, source, quantized, constants):
    """The nodes of onnxruntime's dynamic product number `k` of `quantized` (the outputs of
    the DynamicQuantizeLinear of `source`), with a bias Add when `constants` gets a bias."""
    r = np.random.default_rng(k)
    q, scale, zero = quantized
    constants[f"w{k}"] = r.integers(-127, 128, (WIDTH, WIDTH)).astype(np.int8)
    constants[f"w{k}_zero"] = np.int8(0)
    constants[f"w{k}_scale"] = np.float32(0.004)
    nodes = [node("Mul", [scale, f"w{k}_scale"], [f"s{k}"], name=f"scales{k}"),
             node("MatMulInteger", [q, f"w{k}", zero, f"w{k}_zero"], [f"i{k}"], name=f"mmi{k}"),
             node("Cast", [f"i{k}"], [f"f{k}"], to=1, name=f"cast{k}"),
             node("Mul", [f"f{k}", f"s{k}"], [f"m{k}"], name=f"scale{k}")]
    return nodes


def _quantize(value, tag):
    outs = [f"{tag}_q", f"{tag}_s", f"{tag}_z"]
    return node("DynamicQuantizeLinear", [value], outs, name=f"dql_{tag}"), tuple(outs)


def attention_model():
    """x -> DynamicQuantizeLinear -> two dynamic products (+ bias) h1, h2 ->
    Softmax(h1 . h2^T + (1 - Cast(mask)) * -10000) . h1 -> GELU (erf chain) -> + h1 ->
    DynamicQuantizeLinear -> a third dynamic product -> out (m3)."""
    constants = {"b1": np.linspace(-0.3, 0.3, WIDTH, dtype=np.float32),
                 "b2": np.linspace(0.2, -0.2, WIDTH, dtype=np.float32),
                 "sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1),
                 "half": np.float32(0.5), "big": np.float32(-10000)}
    dql_x, xq = _quantize("x", "x")
    nodes = [dql_x, *_product(1, "x", xq, constants),
             node("Add", ["m1", "b1"], ["h1"], name="bias1"),
             *_product(2, "x", xq, constants),
             node("Add", ["b2", "m2"], ["h2"], name="bias2"),
             node("Transpose", ["h2"], ["h2t"], perm=[1, 0], name="transpose"),
             node("MatMul", ["h1", "h2t"], ["scores"], name="qk"),
             node("Cast", ["mask"], ["mask_f"], to=1, name="mask_cast"),
             node("Sub", ["one", "mask_f"], ["mask_off"], name="mask_sub"),
             node("Mul", ["mask_off", "big"], ["mask_add"], name="mask_mul"),
             node("Add", ["scores", "mask_add"], ["masked"], name="mask"),
             node("Softmax", ["masked"], ["p"], axis=-1, name="softmax"),
             node("MatMul", ["p", "h1"], ["ctx"], name="pv"),
             node("Div", ["ctx", "sqrt2"], ["d"], name="gelu_div"),
             node("Erf", ["d"], ["e"], name="gelu_erf"),
             node("Add", ["e", "one"], ["e1"], name="gelu_add"),
             node("Mul", ["ctx", "e1"], ["g0"], name="gelu_mul"),
             node("Mul", ["g0", "half"], ["g"], name="gelu_half"),
             node("Add", ["g", "h1"], ["res"], name="residual")]
    dql_r, rq = _quantize("res", "r")
    nodes += [dql_r, *_product(3, "res", rq, constants)]
    return build(nodes, [("x", np.float32, [ROWS, WIDTH]), ("mask", np.int64, [1, ROWS])],
                 [("m3", np.float32, [ROWS, WIDTH])], constants)


def product_only_model():
    """x -> DynamicQuantizeLinear -> one dynamic product -> out: nothing float to quantize."""
    constants: dict[str, np.ndarray] = {}
    dql_x, xq = _quantize("x", "x")
    return build([dql_x, *_product(1, "x", xq, constants)], [("x", np.float32, [ROWS, WIDTH])],
                 [("m1", np.float32, [ROWS, WIDTH])], constants)


def conv_model():
    """x -> DynamicQuantizeLinear -> ConvInteger (int8 weights) -> Cast -> Mul by the scales
    -> Add of a per-channel bias [1, C, 1, 1] -> SiLU (x * Sigmoid(x)) -> out, as
    quantize_dynamic writes a convolution."""
    r = np.random.default_rng(5)
    constants = {"w": r.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                 "w_zero": np.int8(0), "w_scale": np.float32(0.003),
                 "b": np.linspace(-0.2, 0.2, 4, dtype=np.float32).reshape(1, 4, 1, 1)}
    nodes = [node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             node("Mul", ["xs", "w_scale"], ["s"], name="scales"),
             node("ConvInteger", ["xq", "w", "xz", "w_zero"], ["i"], pads=[1, 1, 1, 1],
                  name="conv"),
             node("Cast", ["i"], ["f"], to=1, name="cast"),
             node("Mul", ["f", "s"], ["m"], name="scale"),
             node("Add", ["m", "b"], ["c"], name="bias"),
             node("Sigmoid", ["c"], ["g"], name="sigmoid"),
             node("Mul", ["c", "g"], ["y"], name="silu")]
    return build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 4, 6, 6])],
                 constants)


def test_a_per_channel_bias_stays_with_the_epilogue():
    """A ConvInteger's bias [1, C, 1, 1] is not along the last axis: it stays on the host
    with the epilogue, the island's entry is its result, and SiLU becomes one QTable."""
    island = dynamic_island(conv_model())
    assert island is not None
    assert island.nodes == {"sigmoid", "silu"} and island.entries == ("c",)
    assert not island.biases
    r = np.random.default_rng(6)
    calibration = [{"x": r.standard_normal((1, 3, 6, 6)).astype(np.float32)}
                   for _ in range(8)]
    integer, _ = run_passes(conv_model(), calibration=calibration)
    ops = [n.op_type for n in integer.graph.nodes]
    assert {"QConvInt", "QTable"} <= set(ops) and "Sigmoid" not in ops


ISLAND = {"bias1", "bias2", "transpose", "qk", "mask_sub", "mask_mul", "mask", "softmax", "pv", "gelu_div",
          "gelu_erf", "gelu_add", "gelu_mul", "gelu_half", "residual"}


def test_island_is_the_float_part_between_the_products():
    island = dynamic_island(attention_model())
    assert island is not None
    assert island.nodes == ISLAND
    # the products' results read by the island, the bias Adds' results, the Cast mask (-> a
    # table), the broadcast Add's inputs and result
    assert island.entries == ("m1", "m2", "h1", "h2", "mask_f", "scores", "mask_add",
                              "masked")
    assert island.biases == {"bias1": 1, "bias2": 0}  # the constant vector's input
    assert {name for name, why in island.host.items() if why.startswith(f"{DYNAMIC_SCALING}: scales")} == {
        "scale1", "scale2", "scale3"}
    assert set(island.host) == {"scale1", "scale2", "scale3", "scales1", "scales2", "scales3",
                                "cast1", "cast2", "cast3"}


def test_done_nodes_stay_out_of_the_island():
    island = dynamic_island(attention_model(), done={"residual"})
    assert island is not None and island.nodes == ISLAND - {"residual"}


def test_no_island_without_a_float_part_or_a_dynamic_quantization():
    assert dynamic_island(product_only_model()) is None
    assert not quantizes_dynamic_island(product_only_model())
    assert quantizes_dynamic_island(attention_model())


@pytest.mark.parametrize(("name", "expected"), [
    ("bert_tiny_dynamic", True), ("lstm2_dynamic", True), ("bert_tiny_qdq", False),
    ("lstm2_qdq", False), ("bert_tiny_float", False)])
def test_quantizes_dynamic_island_of_the_realistic_models(name, expected):
    assert quantizes_dynamic_island(load_model(REALISTIC / f"{name}.onnx")) is expected


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def feed(r):
    """Random x and a mask hiding the last column."""
    return {"x": r.standard_normal((ROWS, WIDTH)).astype(np.float32),
            "mask": np.array([[1] * (ROWS - 1) + [0]], np.int64)}


def test_pipeline_runs_the_island_on_integers_and_keeps_the_dynamic_products():
    """The attention products become QMatMul, Softmax a QSoftmax, GELU and the mask's
    (1 - m) * -10000 QTables, the (merged) bias Adds, the mask's Add and the residual QAdds
    (no float Add or Sub left but the zero points' corrections); the epilogue Muls stay on the
    host with their reason; the two products of x are merged into one
    (`merge_dynamic_products`); the dynamic products stay QMatMulInt after their
    DynamicQuantizeLinear (host); calibrated on 16 random inputs, the integer graph stays
    within cosine 0.995 of the model as written on 4 others (measured 0.9979 to 0.99986:
    random 8-bit weights, 8-wide rows)."""
    model = attention_model()
    r = np.random.default_rng(3)
    calibration = [feed(r) for _ in range(16)]
    integer, report = run_passes(model, calibration=calibration)
    ops = [n.op_type for n in integer.graph.nodes]
    assert not {"MatMul", "Softmax", "Erf", "MatMulInteger"} & set(ops), report.text()
    assert ops.count("QMatMul") == 2 and ops.count("QMatMulInt") == 2
    assert ops.count("QSoftmax") == 1 and ops.count("QTable") == 2 and ops.count("QAdd") == 3
    assert ops.count("DynamicQuantizeLinear") == 2
    float_adds = [n for n in integer.graph.nodes if n.op_type in ("Add", "Sub")]
    assert {n.name for n in float_adds} == {"mmi1_zp_add", "mmi3_zp_add"}
    fate = report.fate("scale1")
    assert fate is not None and fate.action == "host"
    assert fate.reason.startswith(
        f"{DYNAMIC_SCALING}: scales MatMulInteger's int32 result by a_scale * w_scale")
    merged = report.fate("scale2")
    assert merged is not None and merged.action == "fused" and "'scale1'" in merged.into
    for _ in range(4):
        inputs = feed(r)
        ours = run_model(integer, inputs)["m3"]
        theirs = run_model(model, inputs)["m3"]
        assert cosine(ours, theirs) >= 0.995


@pytest.mark.parametrize(("network", "least_on_accelerator"), [("bert_tiny", 35),
                                                              ("lstm2", 190)])
def test_realistic_dynamic_models_run_their_float_part_on_the_accelerator(
        tmp_path, network, least_on_accelerator):
    """The realistic dynamic encoder and LSTM at 16x16 (first input, which calibrates):
    every MAC on the array (the encoder's attention products included), bit-exact with the
    reference, within cosine 0.999 of the model as written (measured 0.99941 and 0.99998),
    compared as partly float models (no onnxruntime step comparison); at least
    `least_on_accelerator` element-wise layers on the accelerator (measured 36 of 37 with
    LAYERNORM and 197 of 197, the dynamic products' run-time scaling being conversions; none
    before)."""
    inputs = np.load(REALISTIC / f"{network}_inputs.npz")
    keys = {name.rsplit("_", 1)[0] for name in inputs.files}
    feed, out = tmp_path / "feed.npz", tmp_path / "out.json"
    np.savez(feed, **{k: inputs[f"{k}_0"] for k in keys})
    code = main(["simulate", str(REALISTIC / f"{network}_dynamic.onnx"), "--backend", "model",
                 "--array", "16x16", "--input", str(feed), "--json", str(out), "--quiet"])
    assert code == 0
    result = json.loads(out.read_text())
    assert result["coverage"]["array_mac_fraction"] == 1.0
    assert result["coverage"]["accelerator_elementwise_layers"] >= least_on_accelerator
    # the run-time scaling left on the host is counted as conversions, its reason given (an
    # unrolled DynamicQuantizeLSTM's scaling nodes, made by the passes, included)
    assert result["coverage"]["elementwise_layer_fraction"] >= 0.9
    assert result["checks"]["reference_bit_exact"]
    assert "onnxruntime_explanation" not in result["checks"]
    assert result["checks"]["quantization"]["cosine_similarity"] >= 0.999


def test_a_float_model_quantizes_its_attention_mask_too():
    """fusion_entries serve post-training quantization of float models as well: bert_tiny's
    mask (1 - m) * -10000 becomes a table, its Add to the scores a QAdd of a last-axis B, and
    the Softmax after it a QSoftmax (they stayed float on the host before)."""
    path = Path(__file__).resolve().parents[2] / "models" / "realistic" / "bert_tiny_float.onnx"
    model = load_model(path)
    assert fusion_entries(model.graph)  # the mask's Cast result, the scores, the masked sums
    integer, _ = run_passes(model)
    ops = [node.op_type for node in integer.graph.nodes]
    assert ops.count("QSoftmax") == 2 and "Softmax" not in ops
    float_ops = [node for node in integer.graph.nodes if node.op_type in ("Add", "Sub", "Mul")]
    assert float_ops == []  # the embeddings' sum (the word table's Gather of computed ids plus
    # the positions' constant), float here once, is a QAdd since 0d97409 (constant_operand_ptq)
    producers = integer.graph.producers()  # the host's word rows, quantized, then the QAdd
    words = [producers[name] for node in integer.graph.nodes if node.op_type == "QAdd"
             for name in node.inputs if name in producers
             and producers[name].op_type == "QuantizeLinear"]
    assert [producers[q.inputs[0]].op_type for q in words] == ["Gather"]


@pytest.mark.parametrize(("to", "entries"), [(np.float32, ("m",)), (np.int64, ())])
def test_only_a_float_cast_result_is_an_entry(to, entries):  # type: ignore[no-untyped-def]
    """The mask's Cast to float read by (1 - m) arithmetic is quantized first; an integer
    Cast (RoBERTa's position ids: mask.ne(pad).int() * ...) is not (no QuantizeLinear of
    int64)."""
    from onnx import helper
    code = helper.np_dtype_to_tensor_dtype(np.dtype(to))
    nodes = [node("Cast", ["mask"], ["m"], to=code), node("Mul", ["m", "two"], ["y"])]
    model = build(nodes, [("mask", np.int32, [1, 8])], [("y", to, [1, 8])],
                  {"two": np.array(2, to)})
    assert fusion_entries(model.graph) == entries
