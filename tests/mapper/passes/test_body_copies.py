"""unroll_each, the walk that unroll_loop and unroll_scan share (their own tests cover the
body copies and the stacking)."""

import numpy as np

from systolic.ir import Node
from systolic.mapper.passes.body_copies import Unrolled, unroll_each
from systolic.mapper.passes.graph_tools import Namer, make_node, tensor
from systolic.mapper.passes.report import PassReport

from .model_builder import build, node


def _model():
    nodes = [node("Relu", ["x"], ["a"], name="first"),
             node("Neg", ["a"], ["b"], name="second"),
             node("Relu", ["b"], ["y"], name="third")]
    return build(nodes, [("x", np.float32, [3])], [("y", np.float32, [3])])


def _report(model):
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def test_unrolled_nodes_are_replaced_recorded_and_refusals_noted():
    model = _model()
    report = _report(model)

    def unroll(found: Node, namer: Namer, opset: int) -> Unrolled | str | None:
        if found.op_type == "Neg":
            return "not this one"
        if found.label != "first":
            return None
        zero = tensor(namer("zero"), np.zeros(3, np.float32))
        copy = make_node("Max", [found.inputs[0], zero.name], found.outputs,
                         name=namer("first/0"))
        return [copy], [zero], f"opset {opset}: one copy"

    out = unroll_each(model, report, unroll)
    assert [n.op_type for n in out.graph.nodes] == ["Max", "Neg", "Relu"]
    assert out.graph.initializer("zero") is not None
    assert report.fate("first").action == "folded"
    assert report.fate("first").reason == "opset 13: one copy"
    assert report.note_of("second") == "not this one"
    assert report.fate("second") is None


def test_nothing_unrolled_gives_the_model_itself():
    model = _model()
    assert unroll_each(model, _report(model), lambda found, namer, opset: None) is model
