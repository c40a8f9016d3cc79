"""merge_dynamic_products: the dynamic products of one DynamicQuantizeLinear's result become
one product of all their columns and a Gather per product, computing exactly (bit for bit)
what the separate products compute."""

from pathlib import Path

import numpy as np
import pytest

from systolic.mapper.importer import load_model
from systolic.mapper.passes.merge_dynamic_products import merge_dynamic_products
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

REALISTIC = Path(__file__).resolve().parents[2] / "models" / "realistic"
ROWS, K = 3, 8


def _products(widths, *, biased=(True, True, True), per_column=(False, True, False),
              sources=("x", "x", "x")):
    """DynamicQuantizeLinear of each distinct source, then one product per width (onnxruntime's
    quantize_dynamic form: scales' Mul, MatMulInteger, Cast, Mul [, Add of a bias]); output
    y{k} per product."""
    r = np.random.default_rng(0)
    constants: dict[str, np.ndarray] = {}
    nodes, quantized = [], {}
    for source in dict.fromkeys(sources):
        outs = [f"{source}_q", f"{source}_s", f"{source}_z"]
        nodes.append(node("DynamicQuantizeLinear", [source], outs, name=f"dql_{source}"))
        quantized[source] = outs
    for k, (width, source) in enumerate(zip(widths, sources, strict=True)):
        q, scale, zero = quantized[source]
        shape = (width,) if per_column[k] else ()
        constants[f"w{k}"] = r.integers(-127, 128, (K, width)).astype(np.int8)
        constants[f"z{k}"] = r.integers(-3, 4, shape).astype(np.int8)
        constants[f"s{k}"] = (0.001 + 0.01 * r.random(shape)).astype(np.float32)
        nodes += [node("Mul", [scale, f"s{k}"], [f"scales{k}"], name=f"scales{k}"),
                  node("MatMulInteger", [q, f"w{k}", zero, f"z{k}"], [f"i{k}"], name=f"mmi{k}"),
                  node("Cast", [f"i{k}"], [f"f{k}"], to=1, name=f"cast{k}"),
                  node("Mul", [f"f{k}", f"scales{k}"], [f"m{k}" if biased[k] else f"y{k}"],
                       name=f"scale{k}")]
        if biased[k]:
            constants[f"b{k}"] = r.standard_normal(width).astype(np.float32)
            nodes.append(node("Add", [f"b{k}", f"m{k}"], [f"y{k}"], name=f"bias{k}"))
    inputs = [(source, np.float32, [ROWS, K]) for source in dict.fromkeys(sources)]
    outputs = [(f"y{k}", np.float32, [ROWS, width]) for k, width in enumerate(widths)]
    return build(nodes, inputs, outputs, constants)


def _merged(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(merge_dynamic_products(model, report)), report


def _feeds(model, seed=1):
    r = np.random.default_rng(seed)
    return {info.name: (r.standard_normal((ROWS, K)) * 3).astype(np.float32)
            for info in model.graph.inputs}


def test_products_of_one_input_become_one_and_compute_the_same_bits():
    model = _products((4, 6, 5))
    merged, report = _merged(model)
    ops = [n.op_type for n in merged.graph.nodes]
    assert ops.count("MatMulInteger") == 1 and ops.count("Gather") == 3
    assert ops.count("Add") == 1 and ops.count("Cast") == 1 and ops.count("Mul") == 2
    product = next(n for n in merged.graph.nodes if n.op_type == "MatMulInteger")
    assert product.name == "mmi0"  # the first product's names: the report follows them
    fate = report.fate("mmi2")
    assert fate is not None and fate.action == "fused" and "'mmi0'" in fate.into
    for seed in range(3):
        feeds = _feeds(model, seed)
        expected, got = run_model(model, feeds), run_model(merged, feeds)
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize(("options", "products"), [
    ({"sources": ("x", "x", "v")}, 2),  # the third reads another input
    ({"biased": (True, False, True)}, 3),  # a bias on some only: not merged
])  # fmt: skip
def test_only_products_of_the_same_input_and_form_merge(options, products):
    model = _products((4, 6, 5), **options)
    merged, _ = _merged(model)
    ops = [n.op_type for n in merged.graph.nodes]
    assert ops.count("MatMulInteger") == products
    feeds = _feeds(model)
    expected, got = run_model(model, feeds), run_model(merged, feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_lone_product_is_left_as_it_is():
    model = _products((4,), biased=(True,), per_column=(False,), sources=("x",))
    assert merge_dynamic_products(model, PassReport()) is model


def test_bert_tiny_dynamic_merges_q_k_v_exactly():
    """Each layer's Q, K and V projections read one DynamicQuantizeLinear: 12 products
    become 8, the encoder's output unchanged bit for bit on its first test input."""
    model = load_model(REALISTIC / "bert_tiny_dynamic.onnx")
    merged, _ = _merged(model)
    count = sum(n.op_type == "MatMulInteger" for n in merged.graph.nodes)
    assert count == 8
    inputs = np.load(REALISTIC / "bert_tiny_inputs.npz")
    feeds = {k: inputs[f"{k}_0"] for k in ("input_ids", "attention_mask")}
    expected, got = run_model(model, feeds), run_model(merged, feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
