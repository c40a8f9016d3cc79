"""l2_normalize: F.normalize(x, dim=-1) as exported (ReduceL2 -> Clip -> Expand -> Div) becomes
Mul(x, Reciprocal(Clip(Sqrt(MatMul(Pow(x, 2), ones))))) with the same values up to float
roundings; once quantized its sum of squares is a QMatMul and no ReduceL2, Div or Expand is left
for the host. Other reductions and shared norms stay."""

import numpy as np

from systolic.mapper.passes.l2_normalize import l2_normalize_to_matmul
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

SHAPE = (1, 2, 4, 16)  # XCiT's q: [batch, heads, channels per head, tokens]


def _normalize(*, axes=(-1,), clip=True, expand=True, shared=False):  # type: ignore[no-untyped-def]
    """x -> ReduceL2(axes) -> [Clip(eps)] -> [Expand(shape of x)] -> Div(x, .) -> y
    (`shared`: the norm is an output too)."""
    nodes = [node("ReduceL2", ["x"], ["n"], axes=list(axes), keepdims=1, name="norm")]
    divisor = "n"
    if clip:
        nodes.append(node("Clip", ["n", "eps"], ["c"]))
        divisor = "c"
    if expand:
        nodes.append(node("Expand", [divisor, "shape"], ["e"]))
        divisor = "e"
    nodes.append(node("Div", ["x", divisor], ["y"], name="div"))
    norm_shape = tuple(1 if i % len(SHAPE) in {a % len(SHAPE) for a in axes} else s
                       for i, s in enumerate(SHAPE))
    outputs = [("y", np.float32, SHAPE)] + ([("n", np.float32, norm_shape)] if shared else [])
    constants = {"eps": np.array(1e-12, np.float32), "shape": np.array(SHAPE, np.int64)}
    return make(nodes, [("x", np.float32, SHAPE)], outputs, constants, opset=13)[1]


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(4).normal(0, 1.5, SHAPE).astype(np.float32)}


def _rewrite(model):  # type: ignore[no-untyped-def]
    return finalize(l2_normalize_to_matmul(model, PassReport()))


def test_the_exported_form_becomes_a_sum_of_squares_and_a_product():  # type: ignore[no-untyped-def]
    model = _normalize()
    rewritten = _rewrite(model)
    kinds = op_types(rewritten)
    assert not {"ReduceL2", "Expand", "Div"} & set(kinds)
    assert {"Pow", "MatMul", "Sqrt", "Clip", "Reciprocal", "Mul"} <= set(kinds)
    matmul = next(n for n in rewritten.graph.nodes if n.op_type == "MatMul")
    ones = next(t.data for t in rewritten.graph.initializers if t.name == matmul.inputs[1])
    assert ones.shape == (SHAPE[-1], 1) and np.all(ones == 1)
    got, want = run_model(rewritten, _feed())["y"], run_model(model, _feed())["y"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, rtol=1e-5)


def test_the_clip_and_the_expand_are_optional():  # type: ignore[no-untyped-def]
    model = _normalize(clip=False, expand=False)
    rewritten = _rewrite(model)
    assert "ReduceL2" not in op_types(rewritten) and "Clip" not in op_types(rewritten)
    np.testing.assert_allclose(run_model(rewritten, _feed())["y"],
                               run_model(model, _feed())["y"], rtol=1e-6, atol=1e-7)


def test_other_axes_and_a_norm_read_elsewhere_stay():  # type: ignore[no-untyped-def]
    for model in (_normalize(axes=(1,), expand=False), _normalize(shared=True)):
        assert l2_normalize_to_matmul(model, PassReport()) is model


def test_quantized_the_sum_of_squares_runs_on_the_array():  # type: ignore[no-untyped-def]
    """The float model through the whole pipeline: the sum of squares is a QMatMul, Pow one
    table, Sqrt -> Clip -> Reciprocal another, the product a QMul (its rank-4 per-row operand
    repeated by an 8-bit Concat, `expand_computed_operand`); no float step is left."""
    fused, _ = run_passes(_normalize())
    kinds = op_types(fused)
    assert kinds.count("QTable") == 2 and "QMatMul" in kinds and "QMul" in kinds
    assert set(kinds) <= {"QuantizeLinear", "QTable", "QMatMul", "Concat", "QMul",
                          "DequantizeLinear"}
