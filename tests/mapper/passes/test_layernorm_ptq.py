"""layernorm_ptq: a float layer normalization's plan (input, normalized result, gamma's and
beta's results quantized; gamma and beta read through int8 per-tensor vectors) and the
vectors' quantization."""

import numpy as np

from systolic.mapper.passes.layernorm_ptq import layernorm_plans, quantize_vector

from .table_models import make, node

H = 8


def _graph(gamma_shape: tuple[int, ...] = (H,), out_shape=(1, 3, H)):  # type: ignore[no-untyped-def]
    nodes = [node("ReduceMean", ["x"], ["mean"], axes=[-1]), node("Sub", ["x", "mean"], ["d"]),
             node("Mul", ["d", "d"], ["sq"]), node("ReduceMean", ["sq"], ["var"], axes=[-1]),
             node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
             node("Div", ["d", "sd"], ["n"]), node("Mul", ["gamma", "n"], ["g"]),
             node("Add", ["g", "beta"], ["y"])]  # fmt: skip
    constants = {"eps": np.float32(1e-5), "gamma": np.full(gamma_shape, 1.5, np.float32),
                 "beta": np.linspace(-1, 1, H).astype(np.float32)}  # fmt: skip
    _, model = make(nodes, [("x", np.float32, (1, 3, H))], [("y", np.float32, out_shape)],
                    constants, opset=13)  # fmt: skip
    return model.graph


def test_the_plan_quantizes_input_normalized_gamma_and_beta_results():  # type: ignore[no-untyped-def]
    graph = _graph()
    (plan,) = layernorm_plans(graph, set()).values()
    assert plan.values == ("x", "n", "g", "y")
    assert plan.vectors == {graph.nodes[7].name: 0,
                            graph.nodes[8].name: 1}  # fmt: skip
    assert plan.chain.eps == np.float32(1e-5) and plan.chain.length == H
    assert {id(n) for n in plan.nodes} == {id(n) for n in graph.nodes}


def test_a_constant_with_more_axes_than_the_tensor_is_left_float():  # type: ignore[no-untyped-def]
    graph = _graph((1, 1, 1, H), (1, 1, 3, H))
    (plan,) = layernorm_plans(graph, set()).values()
    assert plan.values == ("x", "n")


def test_taken_nodes_are_left_alone():  # type: ignore[no-untyped-def]
    graph = _graph()
    assert layernorm_plans(graph, {id(graph.nodes[2])}) == {}


def test_quantize_vector_is_symmetric_per_tensor():  # type: ignore[no-untyped-def]
    q, scale = quantize_vector(np.array([0.5, -1.27, 0.01], np.float32))
    assert scale == np.float32(0.01) and q.dtype == np.int8
    np.testing.assert_array_equal(q, [50, -127, 1])
    q, scale = quantize_vector(np.zeros(4, np.float32))
    assert scale == 1 and not q.any()
