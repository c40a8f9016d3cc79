"""fuse_integer_matmul: onnxruntime's quantize_dynamic MLP (DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul) runs its products on the array as systolic.QMatMulInt (int32
results, the run-time zero point's part added on the host), bit-exact with the reference on
the original model on `simulate --backend model`, every MAC on the array; a constant zero
point folds into the bias (no host nodes). ConvInteger likewise becomes QConvInt. These
tests run the passes with `dynamic_island` off (`as_written`): the float part between the
products stays as the model writes it, so the integer graph computes exactly what the model
does (test_dynamic_island.py covers the default, which quantizes that part too)."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from systolic.config import ArrayConfig, Dataflow
from systolic.mapper.importer import load_model
from systolic.mapper.passes import pipeline
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import DYNAMIC_SCALING
from systolic.reference.executor import run_model
from systolic.simulation import prepare
from systolic.simulation.run import simulate_model

from .table_models import make, node, op_types


def _float_mlp(path: Path) -> None:
    rng = np.random.default_rng(0)
    weights = {"w1": rng.normal(0, 0.3, (32, 48)), "b1": rng.normal(0, 0.1, 48),
               "w2": rng.normal(0, 0.3, (48, 10)), "b2": rng.normal(0, 0.1, 10)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]), helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]  # fmt: skip
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 10])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)  # fmt: skip


@pytest.fixture
def as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """dynamic_island off: no product merged, the float part kept as written."""
    monkeypatch.setattr(pipeline, "quantize_dynamic_island", lambda model, *_, **__: model)
    monkeypatch.setattr(prepare, "quantizes_dynamic_island", lambda model: False)


@pytest.fixture(scope="module")
def dynamic_mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    quantization = pytest.importorskip("onnxruntime.quantization")
    folder = tmp_path_factory.mktemp("dynamic")
    _float_mlp(folder / "float.onnx")
    quantization.quantize_dynamic(folder / "float.onnx", folder / "dynamic.onnx",
                                  weight_type=quantization.QuantType.QInt8)  # fmt: skip
    return folder / "dynamic.onnx"


def test_matmul_integer_becomes_qmatmulint(dynamic_mlp: Path, as_written: None) -> None:
    model = load_model(dynamic_mlp)
    fused, report = run_passes(model)
    types = op_types(fused)
    assert types.count("QMatMulInt") == 2 and "MatMulInteger" not in types
    assert types.count("DynamicQuantizeLinear") == 2  # the scale and zero point: host
    fates = [f for f in report.fates if "MatMulInteger" in f.op_type]
    assert len(fates) == 2 and all("QMatMulInt" in f.into for f in fates)
    feed = {"x": np.random.default_rng(3).normal(0, 1, (4, 32)).astype(np.float32)}
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(model, feed)["y"])


@pytest.mark.parametrize("config", [ArrayConfig(rows=8, cols=8),
                                    ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS),
                                    ArrayConfig(rows=16, cols=16)], ids=["8x8", "4x4-os", "16x16"])
def test_dynamic_mlp_runs_bit_exact_on_the_array(dynamic_mlp: Path, config: ArrayConfig,
                                                 tmp_path: Path, as_written: None) -> None:  # fmt: skip
    x = np.random.default_rng(5).normal(0, 1, (4, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outcome = simulate_model(dynamic_mlp, config, backend="model", input_path=tmp_path / "x.npy",
                             compare_onnxruntime=False)  # fmt: skip
    report = outcome.report.to_json()
    assert report["checks"]["reference_bit_exact"], report["checks"]["mismatch"]
    assert report["coverage"]["array_mac_fraction"] >= 0.95
    products = [layer for layer in report["layers"] if layer["op"] == "QMatMulInt"]
    assert len(products) == 2 and {layer["unit"] for layer in products} == {"array"}
    want = run_model(load_model(dynamic_mlp), {"x": x})["y"]
    np.testing.assert_array_equal(outcome.outputs["y"], want)
    corrections = [layer for layer in report["layers"] if "_zp_" in layer["name"]]
    assert corrections and all(layer["unit"] == "host" and layer["note"].startswith(
        DYNAMIC_SCALING) for layer in corrections)  # the run-time zero point's correction


def test_a_constant_zero_point_folds_into_the_bias() -> None:
    rng = np.random.default_rng(2)
    nodes = [node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])]
    constants = {"b": rng.integers(0, 248, (9, 5)).astype(np.uint8),  # b - 120 fits int8
                 "za": np.array(37, np.uint8), "zb": np.array(120, np.uint8)}
    _, model = make(nodes, [("a", np.uint8, (3, 9))], [("y", np.int32, (3, 5))], constants)
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QMatMulInt"]
    feed = {"a": rng.integers(0, 256, (3, 9)).astype(np.uint8)}
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(model, feed)["y"])


def _float_cnn(path: Path) -> None:
    rng = np.random.default_rng(0)
    weights = {"w1": rng.normal(0, 0.3, (8, 3, 3, 3)), "b1": rng.normal(0, 0.1, 8),
               "w2": rng.normal(0, 0.3, (6, 8, 1, 1))}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r"]), helper.make_node("Conv", ["r", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 9, 9])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 6, 9, 9])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)  # fmt: skip


@pytest.mark.parametrize("config", [ArrayConfig(rows=8, cols=8),
                                    ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS)],
                         ids=["8x8", "4x4-os"])  # fmt: skip
def test_dynamic_convolutions_run_bit_exact_on_the_array(config: ArrayConfig, tmp_path: Path,
                                                         as_written: None) -> None:  # fmt: skip
    """ConvInteger -> QConvInt: a padded 3x3 (the run-time zero point's part per output
    position, from the taps inside the image) and an unpadded 1x1 (per channel)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    _float_cnn(tmp_path / "float.onnx")
    quantization.quantize_dynamic(tmp_path / "float.onnx", tmp_path / "dynamic.onnx",
                                  weight_type=quantization.QuantType.QInt8,
                                  op_types_to_quantize=["Conv"])  # fmt: skip
    fused, _ = run_passes(load_model(tmp_path / "dynamic.onnx"))
    assert op_types(fused).count("QConvInt") == 2 and "ConvInteger" not in op_types(fused)
    x = np.random.default_rng(6).normal(0, 1, (1, 3, 9, 9)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outcome = simulate_model(tmp_path / "dynamic.onnx", config, backend="model",
                             input_path=tmp_path / "x.npy", compare_onnxruntime=False)  # fmt: skip
    report = outcome.report.to_json()
    assert report["checks"]["reference_bit_exact"], report["checks"]["mismatch"]
    assert report["coverage"]["array_mac_fraction"] == 1.0
    want = run_model(load_model(tmp_path / "dynamic.onnx"), {"x": x})["y"]
    np.testing.assert_array_equal(outcome.outputs["y"], want)


def test_a_constant_zero_point_conv_pads_with_it() -> None:
    rng = np.random.default_rng(8)
    nodes = [node("ConvInteger", ["x", "w", "zx"], ["y"], pads=[1, 0, 1, 0], strides=[1, 2])]
    constants = {"w": rng.integers(-128, 128, (4, 2, 3, 3)).astype(np.int8),
                 "zx": np.array(201, np.uint8)}
    _, model = make(nodes, [("x", np.uint8, (1, 2, 5, 7))], [("y", np.int32, (1, 4, 5, 3))],
                    constants)  # fmt: skip
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QConvInt"]
    feed = {"x": rng.integers(0, 256, (1, 2, 5, 7)).astype(np.uint8)}
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(model, feed)["y"])
