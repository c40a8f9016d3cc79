"""A model's conv and GEMM layers as SCALE-Sim rows: padded sizes, one row per group, GEMMs as
1x1 convolutions, the MACs of the model; refused forms."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.compare.sweep import PreparedModel, prepare_model
from systolic.compare.to_topology import model_topology
from systolic.compare.topology import TopologyLayer, format_topology, parse_topology
from systolic.errors import UnsupportedError
from systolic.examples import example_path
from systolic.ir import Model
from systolic.mapper.binding import bind_graph
from systolic.mapper.importer import load_model
from systolic.mapper.macs import node_macs
from systolic.mapper.shape_inference import infer_shapes


def _model_macs(model: Model) -> int:
    """Oracle: the MACs `mapper.macs` counts on the original (imported) model."""
    bound, ops = bind_graph(model.graph, dict(model.opsets))
    graph = infer_shapes(bound, ops, max_tensor_bytes=1 << 40)
    return sum(node_macs(node, graph.type_of) for node in graph.nodes)


def _float_model(path, *, group=2, strides=(2, 2), dilations=(1, 1)):  # type: ignore[no-untyped-def]
    """x(1,4,9,9) -> Conv(4->4, 3x3, group, pads 0,1,1,2) -> Relu -> Flatten -> Gemm(->10)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 4 // group, 3, 3)).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w"], ["c"], name="conv", group=group,
                            pads=[0, 1, 1, 2], strides=list(strides),
                            dilations=list(dilations))  # fmt: skip
    relu = helper.make_node("Relu", ["c"], ["r"])
    flat = helper.make_node("Flatten", ["r"], ["f"], axis=1)
    out_h = (9 + 0 + 1 - (dilations[0] * 2 + 1)) // strides[0] + 1
    out_w = (9 + 1 + 2 - (dilations[1] * 2 + 1)) // strides[1] + 1
    features = 4 * out_h * out_w
    b = rng.standard_normal((features, 10)).astype(np.float32)
    gemm = helper.make_node("Gemm", ["f", "b"], ["y"], name="fc")
    graph = helper.make_graph(
        [conv, relu, flat, gemm], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def test_bundled_example_rows(lenet: PreparedModel) -> None:
    rows = model_topology(lenet.integer)
    assert rows == [
        TopologyLayer("conv1_Conv", 18, 18, 3, 3, 1, 6, 1),  # 16x16 input, pads 1
        TopologyLayer("conv2_Conv", 10, 10, 3, 3, 6, 12, 1),
        TopologyLayer.gemm("fc1_Gemm", 1, 32, 192),
        TopologyLayer.gemm("fc2_Gemm", 1, 10, 32),
    ]
    assert sum(row.macs for row in rows) == _model_macs(load_model(example_path()))
    assert parse_topology(format_topology(rows)) == rows


def test_grouped_padded_conv_and_gemm(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _float_model(tmp_path / "m.onnx")
    rows = model_topology(prepare_model(path).integer)
    # padded 10 x 12 input; group 2: two rows of 2 channels -> 2 filters; output 4 x 5
    assert rows == [
        TopologyLayer("conv/g0", 10, 12, 3, 3, 2, 2, 2),
        TopologyLayer("conv/g1", 10, 12, 3, 3, 2, 2, 2),
        TopologyLayer.gemm("fc", 1, 10, 4 * 4 * 5),
    ]
    assert (rows[0].ofmap_h, rows[0].ofmap_w) == (4, 5)
    assert sum(row.macs for row in rows) == _model_macs(load_model(path))
    assert parse_topology(format_topology(rows)) == rows


@pytest.mark.parametrize(
    ("strides", "dilations", "message"),
    [((2, 1), (1, 1), r"strides \[2, 1\]: SCALE-Sim"), ((1, 1), (2, 2), r"dilations \[2, 2\]")],
)
def test_forms_scalesim_cannot_state(tmp_path, strides, dilations, message) -> None:  # type: ignore[no-untyped-def]
    path = _float_model(tmp_path / "m.onnx", group=1, strides=strides, dilations=dilations)
    with pytest.raises(UnsupportedError, match=f"layer 'conv' has {message}"):
        model_topology(prepare_model(path).integer)
