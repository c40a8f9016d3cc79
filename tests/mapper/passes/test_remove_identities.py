import numpy as np

from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.remove_identities import remove_identities
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def test_identity_and_dropout_are_removed_and_outputs_kept():
    nodes = [node("Relu", ["x"], ["a"], name="relu"),
             node("Identity", ["a"], ["b"], name="identity"),
             node("Dropout", ["b"], ["c"], name="dropout"),
             node("Neg", ["c"], ["d"], name="neg"),
             node("Identity", ["d"], ["y"], name="last")]
    model = build(nodes, [("x", np.float32, [4])], [("y", np.float32, [4])])
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    cleaned = finalize(remove_identities(model, report))
    assert [n.op_type for n in cleaned.graph.nodes] == ["Relu", "Neg"]
    assert cleaned.graph.nodes[-1].outputs == ("y",)
    assert {f.node for f in report.fates if f.action == "removed"} == {
        "identity", "dropout", "last"}
    x = np.array([-1, 2, -3, 4], np.float32)
    np.testing.assert_array_equal(run_model(cleaned, {"x": x})["y"], -np.maximum(x, 0))


def test_dropout_with_a_used_mask_stays():
    nodes = [node("Dropout", ["x"], ["y", "mask"], name="dropout")]
    model = build(nodes, [("x", np.float32, [4])], [("y", np.float32, [4]),
                                                     ("mask", np.bool_, [4])])
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert [n.op_type for n in remove_identities(model, report).graph.nodes] == ["Dropout"]


def test_a_cast_to_its_own_type_is_removed_and_a_real_cast_stays():
    nodes = [node("Relu", ["x"], ["a"], name="relu"),
             node("Cast", ["a"], ["b"], name="same", to=1),  # float -> float
             node("Cast", ["b"], ["c"], name="half", to=10),  # float -> float16
             node("Cast", ["c"], ["y"], name="back", to=1)]
    model = build(nodes, [("x", np.float32, [4])], [("y", np.float32, [4])])
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    cleaned = finalize(remove_identities(model, report))
    assert [(n.op_type, n.name) for n in cleaned.graph.nodes] == [
        ("Relu", "relu"), ("Cast", "half"), ("Cast", "back")]
    assert report.fate("same").reason == "Cast is the identity at inference"
    x = np.array([-1.5, 2.25, -3, 4.125], np.float32)
    np.testing.assert_array_equal(run_model(cleaned, {"x": x})["y"], np.maximum(x, 0))
