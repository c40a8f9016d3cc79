import numpy as np

from systolic.mapper.passes.name_nodes import name_nodes

from .model_builder import build, node


def test_nodes_get_unique_names():
    nodes = [node("Neg", ["x"], ["a"]), node("Neg", ["a"], ["b"], name="n"),
             node("Neg", ["b"], ["y"], name="n")]
    model = build(nodes, [("x", np.float32, [2])], [("y", np.float32, [2])])
    assert [n.name for n in name_nodes(model).graph.nodes] == ["a", "n", "n_1"]
