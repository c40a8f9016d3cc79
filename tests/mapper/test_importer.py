"""The importer end to end: parsing, versions, binding, metadata, functions, real models."""

import glob
import os
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, TensorType
from systolic.mapper.graph_checks import C90NameWarning, NameWarning
from systolic.mapper.importer import MAX_IR_VERSION, bind_inputs, load_model, load_model_bytes

LIGHT = sorted(
    glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light/*.onnx"))
)


def _relu_model(**model_kwargs: object) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    kwargs: dict[str, object] = {"opset_imports": [helper.make_opsetid("", 14)]}
    kwargs.update(model_kwargs)
    return helper.make_model(graph, **kwargs)


def _load(model: onnx.ModelProto, **kwargs: object) -> object:
    return load_model_bytes(model.SerializeToString(), **kwargs)  # type: ignore[arg-type]


def test_relu_model_reads_with_bound_version_and_shapes() -> None:
    model = _load(_relu_model())
    ir_version = helper.make_model(helper.make_graph([], "g", [], [])).ir_version
    assert model.text() == (
        f"model ir_version={ir_version} opsets=[ai.onnx:14]\n"
        "graph 'g' (\n  %x: f32[2,3]\n) -> (\n  %y: f32[2,3]\n) {\n  %y = Relu:14(%x)\n}"
    )


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", r"empty"),
        (b"hello, this is plain text\n", r"not a valid ONNX model"),
        (_relu_model().SerializeToString()[:25], r"not a valid ONNX model"),
        (b"\x08\x07", r"no graph"),  # decodes (ir_version=7) but is no model
    ],
)
def test_garbage_is_refused_in_one_line(data: bytes, match: str) -> None:
    with pytest.raises(ModelError, match=match) as info:
        load_model_bytes(data)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"^cannot read model file .*nope\.onnx"):
        load_model(tmp_path / "nope.onnx")


@pytest.mark.parametrize("version", [3, 7, MAX_IR_VERSION])
def test_ir_versions_in_range_are_read(version: int) -> None:
    assert _load(_relu_model(ir_version=version)).ir_version == version


def test_supported_ir_range_is_onnx_newest() -> None:
    assert MAX_IR_VERSION == onnx.IR_VERSION


@pytest.mark.parametrize(("version", "word"), [(2, "too old"), (MAX_IR_VERSION + 1, "too new")])
def test_ir_versions_out_of_range_list_the_supported_ones(version: int, word: str) -> None:
    message = (
        rf"^IR version {version} is {word} \(the tool reads IR versions 3 to {MAX_IR_VERSION}\)"
    )
    with pytest.raises(UnsupportedError, match=message):
        _load(_relu_model(ir_version=version))


def test_ai_onnx_spelled_out_is_the_default_domain() -> None:
    model = _load(_relu_model(opset_imports=[helper.make_opsetid("ai.onnx", 13)]))
    assert model.opsets == (("", 13),)
    assert model.graph.nodes[0].op_id == "ai.onnx.Relu:13"


def test_binding_picks_highest_since_version_not_above_the_opset() -> None:
    model = _load(_relu_model(opset_imports=[helper.make_opsetid("", 12)]))
    assert model.graph.nodes[0].version == 6


def test_no_opset_import_is_refused() -> None:
    proto = _relu_model()
    del proto.opset_import[:]
    with pytest.raises(ModelError, match=r"imports no operator set"):
        _load(proto)


def test_ir3_model_without_ai_onnx_import_cannot_bind_default_nodes() -> None:
    proto = _relu_model(ir_version=3, opset_imports=[helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(
        ModelError, match=r"'relu' uses operator ai\.onnx\.Relu but the model does not import"
    ):
        _load(proto)


def test_opset_domain_imported_twice_is_refused() -> None:
    proto = _relu_model(
        opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("ai.onnx", 13)]
    )
    with pytest.raises(ModelError, match=r"imports opset domain 'ai.onnx' twice"):
        _load(proto)


def test_op_missing_at_the_imported_version_names_node_and_operator() -> None:
    proto = _relu_model()
    proto.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(
        UnsupportedError, match=r"^node 'relu': operator ai\.onnx\.NoSuchOp:14 is not supported"
    ):
        _load(proto)


def test_op_without_any_implementation_says_it_cannot_run_and_the_way_out() -> None:
    proto = _relu_model()
    proto.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(UnsupportedError) as caught:
        _load(proto)
    assert str(caught.value) == (
        "node 'relu': operator ai.onnx.NoSuchOp:14 is not supported: neither the accelerator "
        "nor the host reference implements it, so it cannot run even on the host: replace it "
        "in the model or export with supported operators (see `systolic inspect MODEL`)"
    )


def test_op_newer_than_the_imported_opset_says_convert() -> None:
    proto = _relu_model(opset_imports=[helper.make_opsetid("", 13)])
    proto.graph.node[0].op_type = "HardSwish"  # ai.onnx HardSwish exists since opset 14
    with pytest.raises(UnsupportedError, match=r"since versions \[14, 22\]: convert the model "
                       r"to opset 14 or newer \(onnx\.version_converter\)"):  # fmt: skip
        _load(proto)


def test_metadata_and_semver_model_version() -> None:
    proto = _relu_model(
        producer_name="maker", producer_version="1.2", model_version=(1 << 48) | (2 << 32) | 345
    )
    proto.domain = "org.example"
    proto.doc_string = "doc"
    helper.set_model_props(proto, {"model_author": "Ada", "model_license": "MIT"})
    model = _load(proto)
    assert (model.producer_name, model.producer_version, model.domain, model.doc) == (
        "maker",
        "1.2",
        "org.example",
        "doc",
    )
    assert model.model_version_text == "1.2.345"
    assert model.metadata == (("model_author", "Ada"), ("model_license", "MIT"))


def test_plain_model_version() -> None:
    assert _load(_relu_model(model_version=7)).model_version_text == "7"


def test_duplicate_metadata_key_is_refused() -> None:
    proto = _relu_model()
    for value in ("a", "b"):
        entry = proto.metadata_props.add()
        entry.key, entry.value = "model_author", value
    with pytest.raises(ModelError, match=r"metadata_props key 'model_author' is given twice"):
        _load(proto)


def test_bad_names_warn_but_load() -> None:
    proto = _relu_model()
    proto.graph.node[0].output[0] = "y/out"
    proto.graph.output[0].name = "y/out"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # off by default: only the C90 rule rejects 'y/out'
        _load(proto)
    with warnings.catch_warnings():
        warnings.simplefilter("always", C90NameWarning)  # asked for
        with pytest.warns(NameWarning, match=r"1 name\(s\) are not C90 identifiers.*'y/out'"):
            model = _load(proto)
    assert model.graph.outputs[0].name == "y/out"


def test_sequence_input_is_unsupported() -> None:
    proto = _relu_model()
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2, 3])
    proto.graph.input[0].CopyFrom(seq)
    with pytest.raises(UnsupportedError, match=r"graph input 'x' is a sequence"):
        _load(proto)


def _loop_graph(op_type: str = "Loop", domain: str = "") -> onnx.GraphProto:
    """A Loop (or, renamed, another op) whose body reads the outer value 'w' by name."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["v_in", "w"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    return helper.make_graph(
        [helper.make_node(op_type, ["m", "c", "v"], ["done"], name="loop", body=body,
                          domain=domain)],
        "g",
        [
            helper.make_tensor_value_info("m", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("done", TensorProto.FLOAT, [2])],
    )


def test_loop_body_is_imported_with_its_captures() -> None:
    model = _load(helper.make_model(_loop_graph(), opset_imports=[helper.make_opsetid("", 14)]))
    (node,) = model.graph.nodes
    assert node.captures == ("w",)
    assert node.inputs == ("m", "c", "v", "w")
    assert [info.name for info in node.attrs["body"].inputs] == ["i", "c_in", "v_in"]


def test_a_loop_written_back_with_its_captures_keeps_them_once() -> None:
    # a host step of a program file lists the captures after the Loop's own inputs, passes
    # may have renamed them ('w' is read through 'w_renamed')
    graph = _loop_graph()
    graph.node[0].input.append("w_renamed")
    graph.input.append(helper.make_tensor_value_info("w_renamed", TensorProto.FLOAT, [2]))
    model = load_model_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString())
    loop = next(node for node in model.graph.nodes if node.op_type == "Loop")
    assert loop.inputs == ("m", "c", "v", "w_renamed") and loop.captures == ("w",)


def test_other_subgraph_attributes_are_unsupported() -> None:
    graph = _loop_graph("MyLoop", "com.microsoft")
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14),
                                                    helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(
        UnsupportedError, match=r"^attribute 'body' of node 'loop' \(MyLoop\) is a subgraph of a "
        r"MyLoop node \(control flow\), which this tool supports only as If's branches and "
        r"Loop's and Scan's body"
    ):
        _load(proto)


def test_training_info_is_ignored() -> None:
    proto = _relu_model()
    proto.training_info.add().algorithm.name = "training"
    assert len(_load(proto).graph.nodes) == 1


def test_ir3_initializer_listed_as_input_is_its_default() -> None:
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    model = _load(
        helper.make_model(graph, ir_version=3, opset_imports=[helper.make_opsetid("", 9)])
    )
    assert [i.name for i in model.graph.inputs] == ["x", "w"]
    np.testing.assert_array_equal(model.graph.initializer("w").data, weight)  # type: ignore[union-attr]


def test_out_of_order_nodes_are_sorted() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["t"], ["y"], name="second"),
            helper.make_node("Relu", ["x"], ["t"], name="first"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = _load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    assert [n.name for n in model.graph.nodes] == ["first", "second"]
    assert model.graph.value_info[0].text() == "%t: f32[4]"


def test_sparse_initializer_is_densified() -> None:
    values = numpy_helper.from_array(np.array([5.0, 7.0], dtype=np.float32), "w")
    indices = numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "w_indices")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        sparse_initializer=[helper.make_sparse_tensor(values, indices, [2, 3])],
    )
    model = _load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    dense = model.graph.initializer("w")
    assert dense is not None
    np.testing.assert_array_equal(dense.data, np.array([[0, 5, 0], [0, 7, 0]], dtype=np.float32))


def _function_model() -> onnx.ModelProto:
    """y = LeakyRelu(Relu(x) + x, alpha=@slope) through a local function, called twice:
    once with slope given, once with its default."""
    body = [
        helper.make_node("Relu", ["a"], ["r"], name="r"),
        helper.make_node("Add", ["r", "a"], ["s"], name="s"),
        helper.make_node("LeakyRelu", ["s"], ["b"], name="lk"),
    ]
    body[2].attribute.append(
        onnx.AttributeProto(name="alpha", ref_attr_name="slope", type=onnx.AttributeProto.FLOAT)
    )
    function = helper.make_function(
        "local",
        "Bump",
        ["a"],
        ["b"],
        body,
        [helper.make_opsetid("", 14)],
        attribute_protos=[helper.make_attribute("slope", 0.25)],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Bump", ["x"], ["t"], name="call1", domain="local", slope=0.5),
            helper.make_node("Bump", ["t"], ["y"], name="call2", domain="local"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    return helper.make_model(
        graph,
        ir_version=10,
        functions=[function],
        opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("local", 1)],
    )


def test_local_functions_are_inlined_with_attribute_references() -> None:
    model = _load(_function_model())
    lines = [node.text() for node in model.graph.nodes]
    assert lines == [
        "%Bump_1__r = Relu:14(%x)",
        "%Bump_1__s = Add:14(%Bump_1__r, %x)",
        "%t = LeakyRelu:6(%Bump_1__s) {alpha=0.5}",
        "%Bump_2__r = Relu:14(%t)",
        "%Bump_2__s = Add:14(%Bump_2__r, %t)",
        "%y = LeakyRelu:6(%Bump_2__s) {alpha=0.25}",
    ]
    assert model.graph.outputs[0].type == TensorType(DataType.FLOAT, (3,))


def test_inlined_model_computes_what_onnxruntime_computes() -> None:
    import onnxruntime

    from systolic.reference.executor import run_model

    proto = _function_model()
    model = _load(proto)
    x = np.array([-2.0, 0.5, 3.0], dtype=np.float32)
    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, {"x": x})
    got = run_model(model, {"x": x})
    got_y = got["y"] if isinstance(got, dict) else got[0]
    np.testing.assert_allclose(got_y, expected, rtol=1e-6, atol=0)


def test_symbolic_inputs_stay_symbolic_until_bound() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["t"], name="a"),
            helper.make_node("Relu", ["t"], ["y"], name="b"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    model = _load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    assert model.graph.outputs[0].type.text() == "f32[N,4]"
    assert model.graph.value_info == ()
    bound = bind_inputs(model, {"x": (5, 4)})
    assert bound.graph.inputs[0].type.text() == "f32[5,4]"
    assert bound.graph.value_info[0].text() == "%t: f32[5,4]"
    assert bound.graph.outputs[0].type.text() == "f32[5,4]"


@pytest.mark.parametrize("path", LIGHT, ids=[Path(p).stem for p in LIGHT])
def test_light_models_import_bind_and_infer(path: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        model = load_model(path)
    bound = bind_inputs(model, {})
    reference = onnx.load(path)
    (output,) = bound.graph.outputs
    assert output.type.is_static
    expected = [d.dim_value for d in reference.graph.output[0].type.tensor_type.shape.dim]
    assert list(output.type.shape or ()) == expected
    produced = {o for n in bound.graph.nodes for o in n.outputs if o} - {output.name}
    assert {v.name for v in bound.graph.value_info} == produced
    assert all(v.type.is_static for v in bound.graph.value_info)


def test_a_graph_over_the_node_limit_is_refused_after_parsing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from systolic.mapper import importer

    monkeypatch.setattr(importer, "MAX_NODES", 3)
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(4)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("v4", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ResourceError, match=r"^the graph has 4 nodes, more than the 3 this tool "
                       r"handles: split the model or simplify it \(onnxsim\) before importing$"):
        _load(model)
    monkeypatch.setattr(importer, "MAX_NODES", 4)
    assert len(_load(model).graph.nodes) == 4  # type: ignore[attr-defined]


def test_the_memory_limit_holds_for_all_constants_together() -> None:
    inits = []
    for name in "abc":
        values = helper.make_tensor(name, TensorProto.FLOAT, [0], [])
        indices = helper.make_tensor(f"{name}_i", TensorProto.INT64, [0], [])
        inits.append(helper.make_sparse_tensor(values, indices, [100]))  # 400 bytes each
    graph = helper.make_graph(
        [helper.make_node("Sum", ["a", "b", "c"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100])],
        sparse_initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert len(_load(model, max_tensor_bytes=1200).graph.initializers) == 3  # type: ignore[attr-defined]
    message = (
        r"^the model's constants need 1200 bytes together, more than the limit of 1000 "
        r"\(--max-memory\); the largest: sparse initializer 'a' \(400 bytes\), sparse "
        r"initializer 'b' \(400 bytes\), sparse initializer 'c' \(400 bytes\): raise the limit"
    )
    with pytest.raises(ResourceError, match=message):
        _load(model, max_tensor_bytes=1000)


def test_constants_over_the_limit_together_are_refused_before_any_is_decoded() -> None:
    corrupt = numpy_helper.from_array(np.zeros(100, np.float32), "a")
    corrupt.raw_data = bytes(10)
    fine = numpy_helper.from_array(np.zeros(100, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100])],
        initializer=[corrupt, fine],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ResourceError, match=r"constants need 800 bytes together, more than the "
                       r"limit of 500"):
        _load(model, max_tensor_bytes=500)
    with pytest.raises(ModelError, match=r"initializer 'a' .* the model is corrupt"):
        _load(model, max_tensor_bytes=800)


def test_lazy_constants_are_decoded_on_first_use_and_not_held() -> None:
    """With `lazy_constants`, a large initializer is a LazyTensor that the limit on all
    constants together does not count; small ones are decoded as always."""
    from systolic.ir import LazyTensor
    from systolic.proto.onnx_tensors import LAZY_FROM

    big = np.arange(LAZY_FROM // 4, dtype=np.float32).reshape(1, -1)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "big"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(big.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(big.shape))],
        initializer=[numpy_helper.from_array(big, "big"),
                     numpy_helper.from_array(np.ones(2, np.float32), "small")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]
                             ).SerializeToString()
    with pytest.raises(ResourceError, match="constants need"):
        load_model_bytes(data, max_tensor_bytes=big.nbytes + 4)
    model = load_model_bytes(data, max_tensor_bytes=big.nbytes + 4, lazy_constants=True)
    lazy, small = model.graph.initializers
    assert isinstance(lazy, LazyTensor) and not lazy.loaded and lazy.shape == big.shape
    assert not isinstance(small, LazyTensor)
    np.testing.assert_array_equal(lazy.data, big)


def test_the_constants_message_gives_the_whole_total() -> None:
    """Three 400-byte initializers against a 500-byte limit: the message says 1200, not the
    800 counted when the limit was first passed."""
    inits = [numpy_helper.from_array(np.zeros(100, np.float32), name) for name in "abc"]
    graph = helper.make_graph(
        [helper.make_node("Sum", ["a", "b", "c"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ResourceError, match=r"constants need 1200 bytes together, more than "
                       r"the limit of 500 "):
        _load(model, max_tensor_bytes=500)
