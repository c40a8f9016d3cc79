"""Acceptance: the twelve small real networks (tests/models) through the whole pipeline.

Quantized forms (qdq, qop) must reproduce onnxruntime's stored outputs within one unit of the
output quantization (>= 99% equal); float forms are quantized after training (calibrated on
the test inputs) and must stay close to the float network. Every Conv/Gemm must become a
systolic op, every residual Add a QAdd, pooling QMaxPool/QAveragePool.
"""

import pathlib
from collections import Counter

import numpy as np
import pytest

from systolic.ir import DataType
from systolic.mapper.importer import load_model
from systolic.mapper.passes.accuracy import quantization_accuracy
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"
NETWORKS = ("mlp", "lenet", "resnet_tiny", "dwsep")

EXPECTED = {  # systolic ops each network must end up with
    "mlp": {"QMatMul": 3},
    "lenet": {"QConv": 2, "QMaxPool": 2, "QMatMul": 2},
    "resnet_tiny": {"QConv": 6, "QAdd": 2, "QAveragePool": 1, "QMatMul": 1},
    "dwsep": {"QConv": 5, "QAveragePool": 1, "QMatMul": 1},
}
FLOAT_COMPUTE = {"Conv", "Gemm", "MatMul", "Add", "MaxPool", "AveragePool",
                 "GlobalAveragePool", "QLinearConv", "QGemm", "QLinearAdd", "QLinearMatMul",
                 "QLinearGlobalAveragePool", "QLinearAveragePool", "BatchNormalization",
                 "Relu", "Clip"}


def inputs_of(network):
    data = np.load(MODELS / f"{network}_inputs.npz")
    return [{"input": data[f"input_{i}"]} for i in range(len(data.files))]


def integer_graph(network, form):
    model = load_model(MODELS / f"{network}_{form}.onnx")
    calibration = inputs_of(network) if form == "float" else None
    return model, *run_passes(model, calibration=calibration)


def output_scale(graph):
    dq = next(n for n in graph.nodes if n.outputs[0] == "output")
    assert dq.op_type == "DequantizeLinear"
    return float(graph.initializer(dq.inputs[1]).data)


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("form", ["qdq", "qop", "float"])
def test_every_compute_node_becomes_a_systolic_op(network, form):
    model, fused, report = integer_graph(network, form)
    ops = Counter(n.op_type for n in fused.graph.nodes if n.domain == "systolic")
    assert dict(ops) == EXPECTED[network]
    assert not [n.op_type for n in fused.graph.nodes if n.op_type in FLOAT_COMPUTE]
    host = Counter(n.op_type for n in fused.graph.nodes if n.domain != "systolic")
    assert host["QuantizeLinear"] == host["DequantizeLinear"] == 1  # input and output only
    assert set(host) <= {"DequantizeLinear", "Flatten", "QuantizeLinear"}
    assert [o.type for o in fused.graph.outputs] == [o.type for o in model.graph.outputs]
    assert fused.graph.outputs[0].type.dtype == DataType.FLOAT
    assert dict(fused.opsets)["systolic"] == 1
    for fate in report.fates:  # every original node has an outcome, a host one a reason
        assert fate.action in ("fused", "folded", "removed", "layout", "host")
        assert fate.action != "host" or fate.reason
    assert len(report.fates) == len(model.graph.nodes)


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("form", ["qdq", "qop"])
def test_quantized_models_match_onnxruntime(network, form):
    _, fused, _ = integer_graph(network, form)
    stored = np.load(MODELS / f"{network}_{form}_ort.npz")
    scale = output_scale(fused.graph)
    units = []
    for i, feed in enumerate(inputs_of(network)):
        got = run_model(fused, feed)["output"]
        want = stored[f"output_{i}"]
        assert got.dtype == want.dtype == np.float32
        units.append(np.rint((got.astype(np.float64) - want) / scale).reshape(-1))
    diff = np.concatenate(units)
    assert np.abs(diff).max() <= 1
    assert np.mean(diff == 0) >= 0.99


@pytest.mark.parametrize("network", NETWORKS)
def test_float_models_stay_accurate_after_quantization(network):
    model, fused, _ = integer_graph(network, "float")
    accuracy = quantization_accuracy(model, fused, inputs_of(network))
    assert accuracy["samples"] == 4
    assert accuracy["cosine_similarity"] > 0.999
    assert accuracy["top1_agreement"] == 1.0
    stored = np.load(MODELS / f"{network}_float_ort.npz")
    peak = max(float(np.abs(stored[f"output_{i}"]).max()) for i in range(4))
    assert accuracy["max_abs_error"] < 0.02 * peak
