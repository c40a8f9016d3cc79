import numpy as np
import pytest

from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node
from .test_fold_batchnorm import bn_constants

SHAPE = np.array([2, 3, 6], np.int64)


def _linear_bn(r, *, bias: bool, merge: str):  # type: ignore[no-untyped-def]
    """LeViT's LinearNorm: MatMul(x [2, 3, 4], W [4, 6]) [-> Add(b)] -> Flatten or Reshape to
    [6, 6] -> BatchNormalization -> Reshape back to [2, 3, 6], then a Relu."""
    constants = {"w": r.standard_normal((4, 6)).astype(np.float32), "back": SHAPE,
                 "flat": np.array([6, 6], np.int64), **bn_constants(r, 6)}
    nodes = [node("MatMul", ["x", "w"], ["m"], name="matmul")]
    product = "m"
    if bias:
        constants["b"] = r.standard_normal(6).astype(np.float32)
        nodes.append(node("Add", ["m", "b"], ["mb"], name="bias"))
        product = "mb"
    if merge == "Flatten":
        nodes.append(node("Flatten", [product], ["f"], axis=2, name="merge"))
    else:
        nodes.append(node("Reshape", [product, "flat"], ["f"], name="merge"))
    nodes += [node("BatchNormalization", ["f", "gamma", "beta", "mean", "var"], ["n"], name="bn"),
              node("Reshape", ["n", "back"], ["u"], name="unmerge"),
              node("Relu", ["u"], ["y"], name="relu")]
    return build(nodes, [("x", np.float32, [2, 3, 4])], [("y", np.float32, [2, 3, 6])],
                 constants)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("merge", ["Flatten", "Reshape"])
def test_bn_over_a_products_columns_folds_into_the_matmul(bias, merge):
    r = np.random.default_rng(11)
    model = _linear_bn(r, bias=bias, merge=merge)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    folded = finalize(fold_batchnorm(model, report))
    ops = [n.op_type for n in folded.graph.nodes]
    assert ops == ["MatMul", "Add", merge, "Reshape", "Relu"]
    assert report.fate("bn").action == "fused"
    x = r.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(run_model(folded, {"x": x})["y"], run_model(model, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


def test_folded_linear_bn_is_one_qmatmul_on_the_array():
    r = np.random.default_rng(12)
    model = _linear_bn(r, bias=True, merge="Flatten")
    fused, _ = run_passes(model)
    ops = [n.op_type for n in fused.graph.nodes]
    assert ops.count("QMatMul") == 1 and "BatchNormalization" not in ops and "Add" not in ops


def test_product_read_twice_keeps_its_bn_with_the_reason():
    r = np.random.default_rng(13)
    constants = {"w": r.standard_normal((4, 6)).astype(np.float32), **bn_constants(r, 6)}
    nodes = [node("MatMul", ["x", "w"], ["m"], name="matmul"),
             node("BatchNormalization", ["m", "gamma", "beta", "mean", "var"], ["n"], name="bn"),
             node("Add", ["m", "n"], ["y"], name="other_reader")]
    model = build(nodes, [("x", np.float32, [3, 4])], [("y", np.float32, [3, 6])], constants)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert fold_batchnorm(model, report) is model
    assert report.note_of("bn") == "its input is not produced by a Conv or Gemm"
