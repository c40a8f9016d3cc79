"""Our cycles for SCALE-Sim topology rows, checked against the same layers compiled from ONNX
models, and the model backend against the RTL."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.compare.from_topology import is_gemm, topology_graph, topology_sweep
from systolic.compare.grid import config_grid
from systolic.compare.sweep import prepare_model, run_config
from systolic.compare.topology import MAX_LAYER_BYTES, TopologyLayer, parse_topology
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ResourceError

# The head of SCALE-Sim's ResNet-50 topology at reduced sizes (spacer row, extra columns).
RESNET_SMALL = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,,
,,,,,,,,,
Conv1,22,22,7,7,3,16,2,,
CB2a_1,8,8,1,1,16,16,1,,
CB2a_2,10,10,3,3,16,16,1,,
CB2a_3,8,8,1,1,16,32,1,,
CB2a_3,8,8,1,1,16,32,1,,
FC1000,1,1,1,1,64,10,1,,
"""


def test_resnet_rows_report_cycles() -> None:
    layers = parse_topology(RESNET_SMALL)
    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws", "os"])
    results = topology_sweep(layers, configs)
    assert [r.label for r in results] == ["4x4 ws", "4x4 os", "8x8 ws", "8x8 os"]
    for result in results:
        pes = result.config.pes
        assert [layer.name for layer in result.layers] == [
            "Conv1", "CB2a_1", "CB2a_2", "CB2a_3", "CB2a_3#2", "FC1000"
        ]  # fmt: skip
        assert [layer.op for layer in result.layers] == ["QConv"] * 5 + ["QMatMul"]
        for layer, row in zip(result.layers, layers, strict=True):
            assert layer.unit == "array"
            assert layer.macs == row.macs
            assert layer.ideal_cycles == -(-row.macs // pes)
            assert layer.cycles > 0
        assert result.total_cycles == sum(layer.cycles for layer in result.layers)
        assert result.array_cycles == result.total_cycles
        assert result.ratio_to_ideal >= 1
    small, large = results[0], results[2]
    assert large.total_cycles < small.total_cycles


def test_graph_shapes() -> None:
    conv = TopologyLayer("c", 9, 7, 3, 1, 5, 6, 2)
    gemm = TopologyLayer.gemm("g", 20, 24, 48)
    assert not is_gemm(conv) and is_gemm(gemm)
    built = topology_graph([conv, gemm], seed=3)
    qconv, qmatmul = built.graph.nodes
    assert (qconv.op_type, qmatmul.op_type) == ("QConv", "QMatMul")
    assert built.inputs["t0_x"].shape == (1, 5, 9, 7)
    assert built.inputs["t1_x"].shape == (20, 48)
    assert built.graph.initializer("t0_w").shape == (6, 5, 3, 1)
    assert built.graph.initializer("t1_w").shape == (48, 24)
    assert qconv.attrs["strides"] == (2, 2) and qconv.attrs["pads"] == (0, 0, 0, 0)
    again = topology_graph([conv, gemm], seed=3)
    assert np.array_equal(again.graph.initializer("t0_w").data, built.graph.initializer("t0_w").data)


def _qlinear_conv(path: Path, c: int, h: int, w: int, m: int, k: int, s: int) -> Path:
    rng = np.random.default_rng(1)
    constants = {
        "xs": np.array(0.02, np.float32), "xz": np.array(128, np.uint8),
        "w": rng.integers(-127, 128, (m, c, k, k)).astype(np.int8),
        "ws": np.array(0.01, np.float32), "wz": np.array(0, np.int8),
        "ys": np.array(0.5, np.float32), "yz": np.array(128, np.uint8),
    }  # fmt: skip
    node = helper.make_node("QLinearConv", ["x", *constants], ["y"],
                            name="conv", strides=[s, s])  # fmt: skip
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, m, None, None])],
        [numpy_helper.from_array(v, n) for n, v in constants.items()],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _qlinear_matmul(path: Path, m: int, k: int, n: int) -> Path:
    rng = np.random.default_rng(2)
    constants = {
        "as": np.array(0.02, np.float32), "az": np.array(3, np.int8),
        "b": rng.integers(-127, 128, (k, n)).astype(np.int8),
        "bs": np.array(0.01, np.float32), "bz": np.array(0, np.int8),
        "ys": np.array(0.5, np.float32), "yz": np.array(0, np.int8),
    }  # fmt: skip
    node = helper.make_node("QLinearMatMul", ["a", *constants], ["y"], name="fc")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.INT8, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [m, n])],
        [numpy_helper.from_array(v, name) for name, v in constants.items()],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_same_cycles_as_the_layer_compiled_from_onnx(tmp_path: Path, dataflow: Dataflow) -> None:
    config = ArrayConfig(rows=8, cols=8, dataflow=dataflow)
    cases = [
        (_qlinear_conv(tmp_path / "conv.onnx", 16, 14, 14, 24, 3, 2),
         TopologyLayer("conv", 14, 14, 3, 3, 16, 24, 2)),
        (_qlinear_matmul(tmp_path / "fc.onnx", 20, 48, 24), TopologyLayer.gemm("fc", 20, 24, 48)),
    ]  # fmt: skip
    for path, row in cases:
        from_onnx = run_config(prepare_model(path).integer, config, label="onnx")
        (array,) = from_onnx.array_layers
        (ours,) = topology_sweep([row], [config])
        (layer,) = ours.layers
        assert (layer.op, layer.macs) == (array.op, array.macs)
        assert layer.cycles == array.cycles == from_onnx.total_cycles
        assert layer.stall_cycles == array.stall_cycles


def test_model_backend_equals_the_rtl() -> None:
    layers = [TopologyLayer("c", 6, 6, 3, 3, 4, 5, 1), TopologyLayer.gemm("g", 5, 6, 7)]
    config = ArrayConfig(rows=4, cols=4)
    (model,) = topology_sweep(layers, [config], backend="model")
    (rtl,) = topology_sweep(layers, [config], backend="rtl")
    assert model.layers == rtl.layers
    assert model.total_cycles == rtl.total_cycles


def test_layers_that_together_exceed_the_address_space_are_refused_before_allocating() -> None:
    layer = TopologyLayer.gemm("g", 2**30, 1, 1)  # 2 GiB: fits alone, not three times
    assert layer.tensor_bytes < MAX_LAYER_BYTES
    with pytest.raises(ResourceError, match=r"^the topology's 3 layers take .* more than the "
                       r"4 GiB .*: compare fewer or smaller layers at a time$"):  # fmt: skip
        topology_graph([layer] * 3)
