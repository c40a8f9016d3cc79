import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import Attrs, DataType, Graph, Model, Node, Tensor, TensorType, ValueInfo
from systolic.reference.executor import (
    DEFAULT_MAX_LIVE_BYTES,
    current_budget,
    memory_budget,
    release_schedule,
    run_graph,
    run_model,
)

R = np.random.default_rng(70)
W = R.standard_normal((4, 3, 3, 3)).astype(np.float32)
B = R.standard_normal(4).astype(np.float32)
FC = R.standard_normal((5, 64)).astype(np.float32)
X = R.standard_normal((1, 3, 8, 8)).astype(np.float32)

# Conv -> Relu -> MaxPool -> Flatten -> Gemm(transB), with a Dropout whose mask nobody reads.
NODES = [
    ("Conv", ["x", "w", "b"], ["c"], {"pads": [1, 1, 1, 1]}),
    ("Relu", ["c"], ["r"], {}),
    ("MaxPool", ["r"], ["p"], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("Dropout", ["p"], ["d", "mask"], {}),
    ("Flatten", ["d"], ["f"], {}),
    ("Gemm", ["f", "fc"], ["y"], {"transB": 1}),
]
OPSET = 13


X_TYPE = TensorType(DataType.FLOAT, (1, 3, 8, 8))


def _ir_model(x_type: TensorType = X_TYPE, w_is_input: bool = False) -> Model:
    inits = (Tensor("w", DataType.FLOAT, W), Tensor("b", DataType.FLOAT, B),
             Tensor("fc", DataType.FLOAT, FC))
    inputs = [ValueInfo("x", x_type)]
    if w_is_input:
        inputs.append(ValueInfo("w", TensorType(DataType.FLOAT, W.shape)))
    graph = Graph(
        name="net",
        inputs=tuple(inputs),
        outputs=(ValueInfo("y", TensorType(DataType.FLOAT, (1, 5))),),
        nodes=tuple(
            Node(op, tuple(ins), tuple(outs), name=f"n{i}",
                 attrs=Attrs({k: tuple(v) if isinstance(v, list) else v for k, v in a.items()}))
            for i, (op, ins, outs, a) in enumerate(NODES)
        ),
        initializers=inits,
    )
    return Model(ir_version=8, opsets=(("", OPSET),), graph=graph)


def _oracle(feeds):
    nodes = [helper.make_node(op, ins, outs, **a) for op, ins, outs, a in NODES]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 5))],
        initializer=[numpy_helper.from_array(a, n) for n, a in (("w", W), ("b", B), ("fc", FC))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


def test_run_model_matches_oracle():
    got = run_model(_ir_model(), {"x": X})
    assert list(got) == ["y"]
    np.testing.assert_allclose(got["y"], _oracle({"x": X}), rtol=1e-5, atol=1e-5)


def test_hook_sees_every_node_in_order():
    seen = []
    run_model(_ir_model(), {"x": X},
              on_node=lambda node, ins, outs: seen.append((node.op_type, [o.shape for o in outs])))
    assert [op for op, _ in seen] == [n[0] for n in NODES]
    assert seen[2][1] == [(1, 4, 4, 4)]


def test_initializer_listed_as_input_can_be_overridden():
    other = np.zeros_like(W)
    default = run_model(_ir_model(w_is_input=True), {"x": X})["y"]
    overridden = run_model(_ir_model(w_is_input=True), {"x": X, "w": other})["y"]
    np.testing.assert_allclose(default, _oracle({"x": X}), rtol=1e-5, atol=1e-5)
    # With zero weights the conv output is the bias alone, so the result no longer depends on x.
    again = run_model(_ir_model(w_is_input=True), {"x": 2 * X, "w": other})["y"]
    np.testing.assert_array_equal(overridden, again)


def test_intermediates_are_released_after_their_last_reader():
    schedule = release_schedule(_ir_model().graph)
    assert schedule == [["b", "w", "x"], ["c"], ["r"], ["mask", "p"], ["d"], ["f", "fc"]]


def test_symbolic_input_dims_accept_any_size():
    model = _ir_model(x_type=TensorType(DataType.FLOAT, ("batch", 3, 8, 8)))
    x2 = np.concatenate([X, X])
    assert run_model(model, {"x": x2})["y"].shape == (2, 5)


@pytest.mark.parametrize(("feeds", "message"), [
    ({}, r"^graph input 'x' is missing: pass it to run the graph$"),
    ({"x": X.astype(np.float64)}, r"^input 'x' has dtype float64; the graph expects float32"),
    ({"x": X[:, :2]}, r"^input 'x' has shape \[1, 2, 8, 8\]; the graph expects f32\[1,3,8,8\]$"),
    ({"x": X, "z": X}, r"^'z' is not an input of graph 'net'"),
])
def test_bad_inputs_are_model_errors(feeds, message):
    with pytest.raises(ModelError, match=message):
        run_model(_ir_model(), feeds)


def test_unimplemented_output_is_reported():
    graph = Graph("g", (ValueInfo("x", TensorType(DataType.FLOAT, (1, 1, 4))),),
                  (ValueInfo("y", TensorType(DataType.FLOAT, None)),),
                  (Node("MaxPool", ("x",), ("y", "idx"), name="pool",
                        attrs=Attrs({"kernel_shape": (2,)})),))
    with pytest.raises(UnsupportedError, match=r"node 'pool' \(MaxPool\): output 1 \('idx'\)"):
        run_graph(graph, {"x": np.zeros((1, 1, 4), np.float32)}, opsets={"": 12})


def test_unknown_operator_is_unsupported():
    graph = Graph("g", (ValueInfo("x", TensorType(DataType.FLOAT, (2,))),),
                  (ValueInfo("y", TensorType(DataType.FLOAT, (2,))),),
                  (Node("Frobnicate", ("x",), ("y",), name="f"),))
    with pytest.raises(UnsupportedError, match=r"node 'f': operator Frobnicate"):
        run_graph(graph, {"x": np.zeros(2, np.float32)}, opsets={"": 13})


def test_the_bytes_held_at_once_are_limited() -> None:
    model = _ir_model()
    constants = W.nbytes + B.nbytes + FC.nbytes
    # x (768 bytes) and the constants are held before any node; Conv's output c adds 1024 bytes
    start = constants + X.nbytes
    with pytest.raises(ResourceError, match=rf"^running the graph holds {start + 1024} bytes of "
                       rf"tensors at once after node 'n0', more than the limit of {start + 1000} "
                       r"\(--max-memory\); the largest: 'fc' \(1280 bytes\), 'c' \(1024 bytes\)"):
        run_model(model, {"x": X}, max_bytes=start + 1000)
    with pytest.raises(ResourceError, match=r"at once before the first node"):
        run_model(model, {"x": X}, max_bytes=start - 1)
    expected = run_model(model, {"x": X}, max_bytes=None)["y"]
    np.testing.assert_array_equal(run_model(model, {"x": X}, max_bytes=2 * start)["y"], expected)


def test_the_memory_budget_is_the_default_limit_of_every_run_inside_it() -> None:
    """`memory_budget` sets the limit of runs that pass no `max_bytes`; an explicit
    `max_bytes` still wins; leaving the block restores the previous budget."""
    model = _ir_model()
    start = W.nbytes + B.nbytes + FC.nbytes + X.nbytes
    assert current_budget() == DEFAULT_MAX_LIVE_BYTES
    with memory_budget(start + 1000):
        assert current_budget() == start + 1000
        with pytest.raises(ResourceError, match=rf"holds {start + 1024} bytes of tensors at "
                           r"once after node 'n0', more than the limit of "
                           rf"{start + 1000} \(--max-memory\); the largest: 'fc'"):
            run_model(model, {"x": X})
        run_model(model, {"x": X}, max_bytes=None)
        with memory_budget(None):
            run_model(model, {"x": X})
        assert current_budget() == start + 1000
    assert current_budget() == DEFAULT_MAX_LIVE_BYTES
    run_model(model, {"x": X})
