"""Build small ONNX models for the pass tests with onnx.helper and import them."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from systolic.ir import Model
from systolic.mapper.importer import load_model_bytes


def build(nodes, inputs, outputs, constants=None, *, opset=13, ms=False) -> Model:
    """Return the imported model of `nodes` (onnx NodeProtos), `inputs`/`outputs` as
    (name, numpy dtype, shape) and `constants` {name: array} as initializers."""
    def info(name, dtype, shape):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        return helper.make_tensor_value_info(name, elem, shape)

    graph = helper.make_graph(
        nodes, "test", [info(*i) for i in inputs], [info(*o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (constants or {}).items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    return load_model_bytes(model.SerializeToString())


node = helper.make_node
FLOAT = TensorProto.FLOAT
