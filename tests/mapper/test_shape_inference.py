"""Shape inference over bound graphs: folding, limits, declared-vs-inferred checks."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import ModelError, ResourceError
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.shape_inference import DeclarationWarning


def _load(
    nodes: list, inputs: list, outputs: list, inits: list = (), value_info: list = (), **kw: object
):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info)
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return load_model_bytes(model.SerializeToString(), **kw)


def test_constant_shape_subgraph_folds_into_static_shapes() -> None:
    shape = numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "shape")
    model = _load(
        [
            helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill"),
            helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
            helper.make_node("Add", ["r", "c"], ["y"], name="add"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        [shape],
    )
    assert [v.text() for v in model.graph.value_info] == ["%c: f32[3,2]", "%r: f32[3,2]"]


def test_huge_intermediate_is_refused_with_name_and_shape() -> None:
    shape = numpy_helper.from_array(np.array([1000, 1000], dtype=np.int64), "shape")
    message = (
        r"^value \(output of node 'fill'\) 'c' of shape \[1000, 1000\] needs 4000000 bytes, "
        r"more than the limit of 65536: raise the limit"
    )
    with pytest.raises(ResourceError, match=message):
        _load(
            [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill")],
            [],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1000, 1000])],
            [shape],
            max_tensor_bytes=65536,
        )


def test_huge_input_is_refused() -> None:
    with pytest.raises(
        ResourceError, match=r"^graph input 'x' of shape \[100, 100\] needs 40000 bytes"
    ):
        _load(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100, 100])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100, 100])],
            max_tensor_bytes=1000,
        )


def test_a_declared_output_shape_that_differs_draws_a_warning_and_the_inferred_shape() -> None:
    """onnxruntime runs a model whose output declaration is stale (ddddocr's recognizer)."""
    with pytest.warns(
        DeclarationWarning,
        match=r"^graph output 'y' is declared f32\[3\] but inference gives f32\[4\]: the "
        r"inferred shape is used",
    ):
        model = _load(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        )
    assert model.graph.outputs[0].type.shape == (4,)


def test_declared_output_element_type_must_match() -> None:
    with pytest.raises(
        ModelError, match=r"^graph output 'y' is declared i64\[4\] but inference gives f32\[4\]"
    ):
        _load(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.INT64, [4])],
        )


def test_declared_value_info_type_must_match() -> None:
    with pytest.raises(
        ModelError, match=r"^value_info entry 't' is declared i64\[4\] but inference gives f32\[4\]"
    ):
        _load(
            [
                helper.make_node("Relu", ["x"], ["t"], name="a"),
                helper.make_node("Relu", ["t"], ["y"], name="b"),
            ],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
            value_info=[helper.make_tensor_value_info("t", TensorProto.INT64, [4])],
        )


def test_output_symbol_binds_once_across_outputs() -> None:
    with pytest.warns(
        DeclarationWarning,
        match=r"^graph output 'z' is declared f32\[M\] with M=4 but inference gives f32\[2\]",
    ):
        _load(
            [
                helper.make_node("Relu", ["x"], ["y"], name="a"),
                helper.make_node("Relu", ["w"], ["z"], name="b"),
            ],
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
            ],
            [
                helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M"]),
                helper.make_tensor_value_info("z", TensorProto.FLOAT, ["M"]),
            ],
        )


def _range(delta: float, start: float = 0.0) -> tuple[list, list, list, list]:  # type: ignore[type-arg]
    inits = [
        numpy_helper.from_array(np.array(value, dtype=np.float32), name)
        for name, value in (("s", start), ("l", 1.0), ("d", delta))
    ]
    node = helper.make_node("Range", ["s", "l", "d"], ["r"], name="range")
    output = helper.make_tensor_value_info("r", TensorProto.FLOAT, [None])
    return [node], [], [output], inits


def test_range_with_a_tiny_step_is_refused_by_the_memory_limit() -> None:
    message = (
        r"^value \(output of node 'range'\) 'r' of shape \[\d{30}\] needs \d+ bytes, more than "
        r"the limit of 8589934592: raise the limit \(--max-memory\) or use smaller inputs$"
    )
    with pytest.raises(ResourceError, match=message):
        _load(*_range(1e-30))


@pytest.mark.parametrize(("delta", "start"), [(np.nan, 0.0), (np.inf, 0.0), (1.0, -np.inf)])
def test_range_with_non_finite_bounds_is_a_model_error(delta: float, start: float) -> None:
    with pytest.raises(
        ModelError,
        match=r"^node 'range' \(ai.onnx.Range:11\): start .* must be "
        r"finite$",
    ):
        _load(*_range(delta, start))


def test_value_info_symbols_are_hints() -> None:
    """Paddle names every unknown size '?', in intermediates of different sizes."""
    model = _load(
        [
            helper.make_node("Relu", ["x"], ["t"], name="a"),
            helper.make_node("Transpose", ["t"], ["u"], name="b", perm=[1, 0]),
            helper.make_node("Relu", ["u"], ["y"], name="c"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, ["?", "?"]),
                    helper.make_tensor_value_info("u", TensorProto.FLOAT, ["?", 2])],
    )
    assert [v.text() for v in model.graph.value_info] == ["%t: f32[2,3]", "%u: f32[3,2]"]


def test_value_info_fixed_sizes_are_still_checked() -> None:
    with pytest.raises(
        ModelError, match=r"^value_info entry 't' is declared f32\[\?,4\] with \?=2 but "
                          r"inference gives f32\[2,3\]"
    ):
        _load(
            [helper.make_node("Relu", ["x"], ["t"], name="a"),
             helper.make_node("Relu", ["t"], ["y"], name="b")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
            value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, ["?", 4])],
        )
