"""channel_tail: the per-channel Add/Sub, BatchNormalization and Relu after a convolution."""

import numpy as np

from systolic.mapper.passes.channel_tail import channel_tail
from systolic.mapper.passes.graph_tools import constants_of

from .model_builder import build, node


def chain(*ops, constant_shape=(1, 3, 1, 1)):
    r = np.random.default_rng(0)
    constants = {"c": r.standard_normal(constant_shape).astype(np.float32),
                 "g": np.array([1.0, 2.0, 0.5], np.float32), "b": np.zeros(3, np.float32),
                 "m": np.array([0.5, 0.0, -1.0], np.float32), "v": np.ones(3, np.float32)}
    nodes, last = [], "z"
    for index, op in enumerate(ops):
        out = f"v{index}"
        inputs = {"Add": [last, "c"], "Sub": ["c", last] if op == "Sub" else [last, "c"],
                  "BatchNormalization": [last, "g", "b", "m", "v"], "Relu": [last],
                  "Sigmoid": [last]}[op]
        nodes.append(node(op, inputs, [out], name=f"n{index}", epsilon=0.0)
                     if op == "BatchNormalization" else node(op, inputs, [out],
                                                             name=f"n{index}"))
        last = out
    model = build(nodes, [("z", np.float32, [1, 3, 2, 2])], [(last, np.float32, [1, 3, 2, 2])],
                  constants)
    return model, constants


def test_add_batchnorm_relu_compose():
    model, constants = chain("Add", "BatchNormalization", "Relu", "Sigmoid")
    tail = channel_tail(model.graph, "z", 3, constants_of(model.graph))
    assert [n.name for n in tail.nodes] == ["n0", "n1", "n2"] and tail.relu
    assert tail.output == "v2"
    c = constants["c"].reshape(-1).astype(np.float64)
    np.testing.assert_allclose(tail.scale, [1.0, 2.0, 0.5])
    np.testing.assert_allclose(tail.offset, (c - [0.5, 0.0, -1.0]) * [1.0, 2.0, 0.5])


def test_constant_minus_the_map_and_spatial_constants_stop_the_chain():
    model, _ = chain("Sub")
    assert channel_tail(model.graph, "z", 3, constants_of(model.graph)).nodes == ()
    model, _ = chain("Add", constant_shape=(1, 1, 2, 2))
    assert channel_tail(model.graph, "z", 3, constants_of(model.graph)).nodes == ()
