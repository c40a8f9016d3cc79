"""A model's conv and GEMM layers as SCALE-Sim rows: the input extent the outputs read (SCALE-Sim
3.0's output size is ours), one row per group, GEMMs as 1x1 convolutions, the MACs of the model;
refused forms."""

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.compare.sweep import PreparedModel, prepare_model
from systolic.compare.to_topology import model_topology, read_extent
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
    # padded 10 x 12 input, output 4 x 5, which reads (4 - 1) * 2 + 3 = 9 rows and 11 columns;
    # group 2: two rows of 2 channels -> 2 filters
    assert rows == [
        TopologyLayer("conv/g0", 9, 11, 3, 3, 2, 2, 2),
        TopologyLayer("conv/g1", 9, 11, 3, 3, 2, 2, 2),
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


RESNET_TINY = Path(__file__).parents[2] / "models" / "resnet_tiny_qdq.onnx"


def _scalesim3_ofmap(ifmap: int, filt: int, stride: int) -> int:
    """SCALE-Sim 3.0's output size (its topology reader): ceil((ifmap - filter + stride) / stride)."""
    return math.ceil((ifmap - filt + stride) / stride)


def test_resnet_rows_give_scalesim3_our_output_sizes_and_macs() -> None:
    prepared = prepare_model(RESNET_TINY)
    rows = model_topology(prepared.integer)
    bound, ops = bind_graph(prepared.integer.graph, {**dict(prepared.integer.opsets), "systolic": 1})
    graph = infer_shapes(bound, ops, max_tensor_bytes=1 << 40)
    outputs = {n.label: graph.type_of(n.outputs[0]).shape for n in graph.nodes}  # type: ignore[union-attr]
    convs = [row for row in rows if row.filter_h > 1 or row.stride > 1]
    assert len([row for row in convs if row.stride == 2]) == 2  # a 3x3 and the 1x1 shortcut
    for row in convs:
        height, width = outputs[row.name][2:]
        assert _scalesim3_ofmap(row.ifmap_h, row.filter_h, row.stride) == height, row
        assert _scalesim3_ofmap(row.ifmap_w, row.filter_w, row.stride) == width, row
        assert (row.ofmap_h, row.ofmap_w) == (height, width)
    assert sum(row.macs for row in rows) == _model_macs(load_model(RESNET_TINY))


@pytest.mark.parametrize(("padded", "kernel", "stride", "extent"), [
    (230, 7, 2, 229),  # ResNet-50's stem: 224 + 3 + 3, output 112 (230 would give 3.0 113)
    (58, 3, 2, 57), (56, 1, 2, 55), (18, 3, 1, 18), (10, 3, 2, 9), (7, 7, 1, 7),
])  # fmt: skip
def test_read_extent(padded: int, kernel: int, stride: int, extent: int) -> None:
    assert read_extent(padded, kernel, stride) == extent
    ours = (padded - kernel) // stride + 1
    assert _scalesim3_ofmap(extent, kernel, stride) == ours == (extent - kernel) // stride + 1
