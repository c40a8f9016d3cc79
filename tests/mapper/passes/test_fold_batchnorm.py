import numpy as np

from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def bn_constants(r, n):
    return {"gamma": (0.5 + r.random(n)).astype(np.float32),
            "beta": r.standard_normal(n).astype(np.float32),
            "mean": r.standard_normal(n).astype(np.float32),
            "var": (0.2 + r.random(n)).astype(np.float32)}


def fold(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(fold_batchnorm(model, report)), report


def test_conv_bn_folds_exactly():
    r = np.random.default_rng(1)
    constants = {"w": r.standard_normal((4, 3, 3, 3)).astype(np.float32),
                 "b": r.standard_normal(4).astype(np.float32), **bn_constants(r, 4)}
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"],
                  epsilon=1e-3, name="bn")]
    model = build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 4, 6, 6])],
                  constants)
    folded, report = fold(model)
    assert [n.op_type for n in folded.graph.nodes] == ["Conv"]
    assert report.fate("bn").action == "fused"
    x = r.standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(run_model(folded, {"x": x})["y"], run_model(model, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


def test_gemm_bn_folds_exactly():
    r = np.random.default_rng(2)
    constants = {"w": r.standard_normal((5, 8)).astype(np.float32),
                 "c": r.standard_normal(5).astype(np.float32), **bn_constants(r, 5)}
    nodes = [node("Gemm", ["x", "w", "c"], ["g"], transB=1, alpha=0.5, beta=2.0, name="gemm"),
             node("BatchNormalization", ["g", "gamma", "beta", "mean", "var"], ["y"],
                  name="bn")]
    model = build(nodes, [("x", np.float32, [3, 8])], [("y", np.float32, [3, 5])], constants)
    folded, _ = fold(model)
    assert [n.op_type for n in folded.graph.nodes] == ["Gemm"]
    x = r.standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(run_model(folded, {"x": x})["y"], run_model(model, {"x": x})["y"],
                               rtol=1e-5, atol=1e-5)


def test_standalone_bn_stays_with_a_reason():
    r = np.random.default_rng(3)
    nodes = [node("Relu", ["x"], ["a"], name="relu"),
             node("BatchNormalization", ["a", "gamma", "beta", "mean", "var"], ["y"],
                  name="bn")]
    model = build(nodes, [("x", np.float32, [1, 2, 3, 3])], [("y", np.float32, [1, 2, 3, 3])],
                  bn_constants(r, 2))
    folded, report = fold(model)
    assert [n.op_type for n in folded.graph.nodes] == ["Relu", "BatchNormalization"]
    assert report.note_of("bn") == "its input is not produced by a Conv or Gemm"


def test_conv_with_a_second_reader_is_not_folded():
    r = np.random.default_rng(4)
    constants = {"w": r.standard_normal((2, 2, 1, 1)).astype(np.float32), **bn_constants(r, 2)}
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv"),
             node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"], name="bn"),
             node("Relu", ["c"], ["z"], name="relu")]
    model = build(nodes, [("x", np.float32, [1, 2, 2, 2])],
                  [("y", np.float32, [1, 2, 2, 2]), ("z", np.float32, [1, 2, 2, 2])], constants)
    folded, report = fold(model)
    assert "BatchNormalization" in [n.op_type for n in folded.graph.nodes]
    assert report.note_of("bn") == "the output of 'conv' has other readers"
