import numpy as np

from systolic.mapper.passes.eliminate_dead import eliminate_dead
from systolic.mapper.passes.report import PassReport

from .model_builder import build, node


def test_unread_nodes_and_constants_are_dropped():
    nodes = [node("Add", ["x", "c"], ["a"], name="used"),
             node("Mul", ["x", "d"], ["dead1"], name="dead1"),
             node("Neg", ["dead1"], ["dead2"], name="dead2")]
    model = build(nodes, [("x", np.float32, [2])], [("a", np.float32, [2])],
                  {"c": np.ones(2, np.float32), "d": np.ones(2, np.float32)})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    cleaned = eliminate_dead(model, report)
    assert [n.name for n in cleaned.graph.nodes] == ["used"]
    assert [t.name for t in cleaned.graph.initializers] == ["c"]
    assert {f.node: f.action for f in report.fates} == {"dead1": "removed", "dead2": "removed"}
