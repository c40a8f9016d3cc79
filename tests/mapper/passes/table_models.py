"""Small QDQ models for the table and element-wise multiply tests: the ONNX proto (for onnx's
ReferenceEvaluator) and the imported model, and how their outputs compare."""

import numpy as np
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import run_model

node = helper.make_node


def make(nodes, inputs, outputs, constants, *, opset=20, ms=False):
    """Return (onnx ModelProto, imported Model); inputs/outputs as (name, dtype, shape)."""
    def info(name, dtype, shape):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)

    graph = helper.make_graph(
        nodes, "test", [info(*i) for i in inputs], [info(*o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    proto = helper.make_model(graph, opset_imports=opsets, ir_version=9)
    return proto, load_model_bytes(proto.SerializeToString())


def op_types(model):
    return [n.op_type for n in model.graph.nodes]


def steps(proto, original, fused, feed, output="y"):
    """Return (fused - onnx ReferenceEvaluator, fused - our reference on the original) in
    output integers (the outputs are 8-bit)."""
    want_onnx = ReferenceEvaluator(proto).run(None, feed)[0]
    want_ours = run_model(original, feed)[output]
    got = run_model(fused, feed)[output]
    assert got.dtype == want_onnx.dtype
    return (got.astype(np.int64) - want_onnx.astype(np.int64),
            got.astype(np.int64) - want_ours.astype(np.int64))
