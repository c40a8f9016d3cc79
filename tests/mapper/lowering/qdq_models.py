"""Small QDQ ONNX models built by hand for the lowering tests (issue 13's activation tables)."""

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper


def conv_sigmoid_qdq(seed: int = 0) -> ModelProto:
    """x (float [1, 3, 6, 6]) -> Q/DQ -> Conv 3x3 (int8 weights, int32 bias, through DQ) ->
    Q/DQ -> Sigmoid -> Q/DQ -> y: the QDQ form of a convolution with a Sigmoid after it."""
    rng = np.random.default_rng(seed)
    s_x, s_w, s_c, s_y = 0.05, 0.02, 0.08, 1 / 256
    inits = [
        numpy_helper.from_array(np.array(s_x, np.float32), "s_x"),
        numpy_helper.from_array(np.array(128, np.uint8), "z_x"),
        numpy_helper.from_array(rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), "w_q"),
        numpy_helper.from_array(np.array(s_w, np.float32), "s_w"),
        numpy_helper.from_array(np.array(0, np.int8), "z_w"),
        numpy_helper.from_array(rng.integers(-500, 500, 4).astype(np.int32), "b_q"),
        numpy_helper.from_array(np.array(s_x * s_w, np.float32), "s_b"),
        numpy_helper.from_array(np.array(0, np.int32), "z_b"),
        numpy_helper.from_array(np.array(s_c, np.float32), "s_c"),
        numpy_helper.from_array(np.array(120, np.uint8), "z_c"),
        numpy_helper.from_array(np.array(s_y, np.float32), "s_y"),
        numpy_helper.from_array(np.array(0, np.uint8), "z_y"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_x", "z_x"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s_x", "z_x"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w_q", "s_w", "z_w"], ["w"], name="dq_w"),
        helper.make_node("DequantizeLinear", ["b_q", "s_b", "z_b"], ["b"], name="dq_b"),
        helper.make_node("Conv", ["xd", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "s_c", "z_c"], ["cq"], name="q_c"),
        helper.make_node("DequantizeLinear", ["cq", "s_c", "z_c"], ["cd"], name="dq_c"),
        helper.make_node("Sigmoid", ["cd"], ["s"], name="sigmoid"),
        helper.make_node("QuantizeLinear", ["s", "s_y", "z_y"], ["sq"], name="q_s"),
        helper.make_node("DequantizeLinear", ["sq", "s_y", "z_y"], ["y"], name="dq_s"),
    ]
    graph = helper.make_graph(
        nodes, "conv_sigmoid",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
