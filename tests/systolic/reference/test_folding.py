"""Shape sub-graphs fold during inference: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
gets a static output shape, as exporters emit for `x.view(x.size(0), -1)`."""

import numpy as np

from systolic.ir import Attrs, DataType, Node
from systolic.reference.executor import make_op
from systolic.reference.ops.base import TensorInfo


def _infer(nodes, values):
    for node in nodes:
        op = make_op(node, {"": 13})
        outs = op.infer([values[name] if name else None for name in node.inputs])
        values.update(zip(node.outputs, outs, strict=False))
    return values


def test_flatten_by_shape_arithmetic_folds():
    nodes = [
        Node("Shape", ("x",), ("s",)),
        Node("Constant", (), ("zero",), attrs=Attrs({"value_int": 0})),
        Node("Gather", ("s", "zero"), ("n",)),
        Node("Constant", (), ("axes",), attrs=Attrs({"value_ints": (0,)})),
        Node("Unsqueeze", ("n", "axes"), ("n1",)),
        Node("Constant", (), ("minus_one",), attrs=Attrs({"value_ints": (-1,)})),
        Node("Concat", ("n1", "minus_one"), ("shape",), attrs=Attrs({"axis": 0})),
        Node("Reshape", ("x", "shape"), ("y",)),
    ]
    values = _infer(nodes, {"x": TensorInfo(DataType.FLOAT, (2, 3, 4, 5))})
    np.testing.assert_array_equal(values["shape"].value, [2, -1])
    assert values["y"].shape == (2, 60)
    assert values["y"].value is None  # data values are never folded from unknown inputs
