"""The sweep of the bundled example over a configuration grid (model backend), and
`prepare_model` on --input arrays (symbolic batch, non-finite values)."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.compare.grid import config_grid
from systolic.compare.sweep import (
    PreparedModel,
    prepare_model,
    run_config,
    sweep,
    varying_fields,
)
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ModelError
from systolic.mapper.lowering import AcceleratorStep, compile_model
from systolic.sim.timing.program_model import ProgramModel

GRID = {"arrays": ["4x4", "8x8"], "dataflows": ["ws", "os"]}


def test_every_configuration_in_grid_order(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), **GRID)
    results = sweep(lenet, configs)
    assert [r.label for r in results] == ["4x4 ws", "4x4 os", "8x8 ws", "8x8 os"]
    assert [r.config for r in results] == configs
    names = [layer.name for layer in results[0].layers]
    assert "conv1_Conv" in names and "fc2_Gemm" in names
    for result in results:
        assert [layer.name for layer in result.layers] == names


def test_totals_are_the_cycle_model_totals(lenet: PreparedModel) -> None:
    """Oracle: ProgramModel run directly on every accelerator segment of the compiled model."""
    config = ArrayConfig(rows=4, cols=8, dataflow=Dataflow.OS)
    result = run_config(lenet.integer, config, label="x")
    compiled = compile_model(lenet.integer, config)
    expected = sum(
        ProgramModel(config).run(step.program.instructions).total_cycles
        for step in compiled.steps()
        if isinstance(step, AcceleratorStep)
    )
    assert result.total_cycles == expected
    assert sum(layer.cycles for layer in result.layers) == expected
    array = [layer for layer in result.layers if layer.unit == "array"]
    assert {layer.op for layer in array} == {"QConv", "QMatMul"}
    assert result.macs == sum(layer.macs for layer in array) == 61_760
    assert result.ideal_cycles == sum(-(-layer.macs // 32) for layer in array)
    assert result.utilization == result.macs / (result.array_cycles * 32)
    assert result.ratio_to_ideal == result.array_cycles / result.ideal_cycles


def test_a_larger_array_takes_fewer_cycles_per_array_layer(lenet: PreparedModel) -> None:
    results = {r.label: r for r in sweep(lenet, config_grid(ArrayConfig(), **GRID))}
    for flow in ("ws", "os"):
        small, large = results[f"4x4 {flow}"], results[f"8x8 {flow}"]
        for a, b in zip(small.array_layers, large.array_layers, strict=True):
            assert b.cycles < a.cycles, (flow, a.name)
        assert large.total_cycles < small.total_cycles


def test_a_narrow_bus_stalls_the_array_layers(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), arrays=["8x8"], dataflows=["ws", "os"],
                          bus_bytes=[1, 64])  # fmt: skip
    results = sweep(lenet, configs)
    assert [r.label for r in results] == ["ws bus 1", "ws bus 64", "os bus 1", "os bus 64"]
    for narrow, wide in (results[0:2], results[2:4]):
        for a, b in zip(narrow.array_layers, wide.array_layers, strict=True):
            assert a.stall_cycles > 0, a.name
            assert b.stall_cycles < a.stall_cycles, a.name
        assert wide.array_stall_cycles < narrow.array_stall_cycles
        assert wide.total_cycles < narrow.total_cycles


def test_varying_fields() -> None:
    base = ArrayConfig()
    assert varying_fields([base]) == ["array", "dataflow"]
    grid = config_grid(base, arrays=["4x4"], spad_kib=[64, 128], bus_bytes=[8, 16])
    assert varying_fields(grid) == ["spad_kib", "bus_bytes"]


def test_progress_names_each_configuration(lenet: PreparedModel) -> None:
    seen: list[str] = []
    sweep(lenet, config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws", "os"]),
          progress=seen.append)  # fmt: skip
    assert seen == ["ws", "os"]


def _matmul_model(path: Path, batch: int | str) -> Path:
    weights = np.random.default_rng(3).standard_normal((8, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])],
        [numpy_helper.from_array(weights, "W")],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_prepare_model_fixes_a_symbolic_batch_from_the_input(tmp_path: Path) -> None:
    model = _matmul_model(tmp_path / "m.onnx", "N")
    np.save(tmp_path / "x.npy", np.ones((3, 8), np.float32))
    prepared = prepare_model(model, input_path=tmp_path / "x.npy")
    assert prepared.inputs["a"].shape == (3, 8)
    result = run_config(prepared.integer, ArrayConfig(rows=4, cols=4), label="x")
    assert [layer.macs for layer in result.array_layers] == [3 * 8 * 5]
    with pytest.raises(ModelError, match="'a' has no fixed shape .*: pass --input"):
        prepare_model(model)


def test_prepare_model_refuses_non_finite_calibration_input(tmp_path: Path) -> None:
    model = _matmul_model(tmp_path / "m.onnx", 2)
    x = np.ones((2, 8), np.float32)
    x[0, 0] = np.inf
    np.save(tmp_path / "x.npy", x)
    with pytest.raises(ModelError, match="'a' holds 1 NaN or infinite value"):
        prepare_model(model, input_path=tmp_path / "x.npy")
