"""The model compiler end to end: hand-built integer graphs and the test models (through the
mapper passes), checked layer by layer on the golden machine against the reference."""

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

from systolic.commands.compile import integer_model
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import UnsupportedError
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Halt
from systolic.isa.program import HostStep, LayerUnit, TensorRole
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import AcceleratorStep, CompiledModel, compile_model
from systolic.reference.executor import run_graph, run_model
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import GOLDEN, segment_runner, simulate

from .graphs import OPSETS, graph, node, qconv, qmatmul, random_input

U8, I8 = DataType.UINT8, DataType.INT8
MODELS = Path(__file__).resolve().parents[2] / "models"
CONFIGS = {
    f"{r}x{r}-{d.value}": ArrayConfig(rows=r, cols=r, dataflow=d)
    for r in (4, 8)
    for d in (Dataflow.WS, Dataflow.OS)
}


def _network():  # type: ignore[no-untyped-def]
    """conv -> maxpool -> padded conv -> residual add -> (global average, flatten -> matmul)."""
    c1, k1 = qconv("x", "c1", 3, 8, 1, x_zp=128, y_zp=10)
    p1 = node("QMaxPool", ["c1"], "p1", kernel_shape=(2, 2), strides=(2, 2))
    c2, k2 = qconv("p1", "c2", 8, 8, 2, x_zp=10, y_zp=10)
    add = node(
        "QAdd",
        ["c2", "p1"],
        "a1",
        a_zero_point=10,
        b_zero_point=10,
        multiplier_a=1 << 30,
        multiplier_b=1 << 30,
        shift=0,
        y_zero_point=5,
        y_type=2,
    )
    gap = node("QAveragePool", ["a1"], "g1", kernel_shape=(4, 4), x_zero_point=5,
               y_zero_point=7, scale=0.9, y_type=2)  # fmt: skip
    flatten = node("Flatten", ["a1"], "f1", domain="", axis=1)
    mm, k3 = qmatmul("f1", "y", 128, 10, 3, a_zp=5)
    return graph({"x": (U8, (1, 3, 8, 8))}, {"y": I8, "g1": U8},
                 [c1, p1, c2, add, gap, flatten, mm], k1 + k2 + k3)  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_small_network_is_bit_exact_layer_by_layer(config):  # type: ignore[no-untyped-def]
    compiled = compile_model(_network(), config)
    assert [layer.unit.value for layer in compiled.layers] == [
        "array", "vector", "array", "vector", "vector", "layout", "array"
    ]  # fmt: skip
    x = random_input(U8, (1, 3, 8, 8), 0)
    assert [layer.name for layer in compiled.layers] == ["c1", "p1", "c2", "a1", "g1", "f1", "y"]
    assert check_layers(compiled, {"x": x}) is None
    expected = run_graph(compiled.graph, {"x": x}, opsets=OPSETS)
    outputs = simulate(compiled, {"x": x})
    assert set(outputs) == {"y", "g1"}
    for name in outputs:
        np.testing.assert_array_equal(outputs[name], expected[name])


def test_layers_cover_the_program_and_record_macs():
    compiled = compile_model(_network(), ArrayConfig(rows=4, cols=4))
    program = compiled.program
    assert isinstance(program.instructions[-1], Halt)
    assert sum(layer.count for layer in compiled.layers) == len(program.instructions) - 1
    macs = {layer.name: layer.macs for layer in compiled.layers}
    assert macs["c1"] == 8 * 8 * 8 * 3 * 3 * 3 and macs["y"] == 128 * 10 and macs["p1"] == 0
    roles = {t.name: t.role for t in program.tensors}
    assert roles["x"] is TensorRole.INPUT and roles["y"] is TensorRole.OUTPUT
    assert roles["c1"] is TensorRole.ACTIVATION and "f1" not in roles  # re-ordered view


def test_progress_follows_every_node_in_order():
    network = _network()
    seen: list[tuple[int, int]] = []
    plain = compile_model(network, ArrayConfig(rows=4, cols=4))
    watched = compile_model(network, ArrayConfig(rows=4, cols=4),
                            progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    total = len(network.nodes)
    assert seen == [(done, total) for done in range(1, total + 1)]
    assert watched.program.instructions == plain.program.instructions


def test_host_layers_split_the_program_into_accelerator_segments():
    quantize = node("QuantizeLinear", ["f", "scale", "zp"], "q", domain="")
    pool = node("QMaxPool", ["q"], "p", kernel_shape=(2, 2), strides=(2, 2))
    softmax = node("Softmax", ["pf"], "s", domain="", axis=1)
    dequantize = node("DequantizeLinear", ["p", "scale", "zp"], "pf", domain="")
    pool2 = node("QMaxPool", ["q"], "p2", kernel_shape=(3, 3), strides=(1, 1))
    constants = [
        Tensor("scale", DataType.FLOAT, np.array(0.05, np.float32)),
        Tensor("zp", DataType.UINT8, np.array(120, np.uint8)),
    ]
    g = graph({"f": (DataType.FLOAT, (1, 2, 6, 6))}, {"s": DataType.FLOAT, "p2": U8},
              [quantize, pool, dequantize, softmax, pool2], constants)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    steps = list(compiled.steps())
    kinds = [type(s).__name__ for s in steps]
    assert kinds == ["HostStep", "AcceleratorStep", "HostStep", "HostStep", "AcceleratorStep"]
    for step in steps:
        if isinstance(step, AcceleratorStep):
            assert isinstance(step.program.instructions[-1], Halt)
        else:
            assert isinstance(step, HostStep)
    f = np.random.default_rng(1).normal(size=(1, 2, 6, 6)).astype(np.float32)
    assert check_layers(compiled, {"f": f}) is None
    expected = run_graph(compiled.graph, {"f": f}, opsets=OPSETS)
    outputs = simulate(compiled, {"f": f})
    for name in ("s", "p2"):
        np.testing.assert_array_equal(outputs[name], expected[name])


def test_a_program_file_round_trips_with_its_layers_and_host_steps(tmp_path):  # type: ignore[no-untyped-def]
    model = integer_model(load_model(MODELS / "lenet_qdq.onnx"))
    compiled = compile_model(model, ArrayConfig(rows=4, cols=4, mem_latency=3))
    path = tmp_path / "lenet.pb"
    compiled.save(path)
    loaded = CompiledModel.load(path)
    assert loaded.program == compiled.program
    assert loaded.config.mem_latency == 3
    x = dict(np.load(MODELS / "lenet_inputs.npz"))["input_0"]
    name = compiled.inputs[0].name
    np.testing.assert_array_equal(simulate(loaded, {name: x})["output"],
                                  simulate(compiled, {name: x})["output"])  # fmt: skip


def test_simulate_takes_any_segment_runner():
    compiled = compile_model(_network(), ArrayConfig(rows=4, cols=4))
    seen = []

    golden = segment_runner(GOLDEN)

    def runner(program, memory):  # type: ignore[no-untyped-def]
        seen.append(len(program.instructions))
        return golden(program, memory)

    x = random_input(U8, (1, 3, 8, 8), 4)
    simulate(compiled, {"x": x}, run_segment=runner)
    assert seen == [len(compiled.program.instructions)]


def test_a_batched_matmul_operand_keeps_its_rows_contiguous():
    matmul, constants = qmatmul("a", "y", 16, 6, seed=7, a_zp=-3)
    add = node("QAdd", ["a", "a"], "s", multiplier_a=1 << 30, multiplier_b=1 << 30, shift=-1,
               y_type=3)  # fmt: skip
    g = graph({"a": (I8, (2, 3, 16))}, {"y": I8, "s": I8}, [matmul, add], constants)
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert compiled.program.tensor("a").strides == (48, 16, 1)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY, LayerUnit.VECTOR]
    a = random_input(I8, (2, 3, 16), 8)
    assert check_layers(compiled, {"a": a}) is None


@pytest.mark.parametrize("backend", ["model", pytest.param("rtl", marks=pytest.mark.slow)])
def test_simulate_runs_the_segments_on_a_backend(backend):  # type: ignore[no-untyped-def]
    conv, constants = qconv("x", "c", 3, 4, 1, x_zp=128, y_zp=10)
    pool = node("QMaxPool", ["c"], "p", kernel_shape=(2, 2), strides=(2, 2))
    dequantize = node("DequantizeLinear", ["p", "scale", "zp"], "f", domain="")
    softmax = node("Softmax", ["f"], "s", domain="", axis=1)
    quantize = node("QuantizeLinear", ["s", "scale", "zp"], "q", domain="")
    again = node("QMaxPool", ["q"], "y", kernel_shape=(2, 2))
    constants += [Tensor("scale", DataType.FLOAT, np.array(0.01, np.float32)),
                  Tensor("zp", DataType.UINT8, np.array(0, np.uint8))]  # fmt: skip
    g = graph({"x": (U8, (1, 3, 4, 4))}, {"y": U8},
              [conv, pool, dequantize, softmax, quantize, again], constants)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert [type(s).__name__ for s in compiled.steps()] == [
        "AcceleratorStep", "HostStep", "HostStep", "HostStep", "AcceleratorStep"
    ]  # fmt: skip
    x = random_input(U8, (1, 3, 4, 4), 0)
    expected = run_graph(compiled.graph, {"x": x}, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, {"x": x}, backend=backend)["y"], expected)


def test_operands_wider_than_eight_bits_are_refused():
    config = dataclasses.replace(ArrayConfig(rows=4, cols=4), input_width=12, acc_width=40)
    with pytest.raises(UnsupportedError, match=r"^the compiler targets 8-bit operands"):
        compile_model(_network(), config)


def test_a_conv_goes_to_the_array_and_a_pool_to_the_vector_unit():
    from systolic.mapper.lowering.compile_model import layer_unit

    units = [layer_unit(n) for n in _network().nodes]
    assert units[0] is LayerUnit.ARRAY and units[1] is LayerUnit.VECTOR


NETWORKS = ["lenet", "mlp", "dwsep", "resnet_tiny"]
FORMS = ["qop", "qdq", "float"]
ATTENTION_FORMS = ["qdq", "float"]


@pytest.fixture(scope="module")
def integer_models():  # type: ignore[no-untyped-def]
    """The test models through the mapper passes, by file stem."""
    return {
        f"{net}_{form}": integer_model(load_model(MODELS / f"{net}_{form}.onnx"))
        for net in NETWORKS
        for form in FORMS
    } | {
        f"attn_{form}": integer_model(load_model(MODELS / f"attn_{form}.onnx"))
        for form in ATTENTION_FORMS
    }


# Every model at both sizes and both dataflows: 4x4 ws and 8x8 os by default, the other two
# combinations (the golden model's output-stationary 4x4 runs are the slowest) marked slow.
MODEL_CONFIGS = [
    pytest.param(config, id=key, marks=() if key in ("4x4-ws", "8x8-os") else pytest.mark.slow)
    for key, config in CONFIGS.items()
]


MODEL_CASES = [(net, form) for net in NETWORKS for form in FORMS] + [
    ("attn", form) for form in ATTENTION_FORMS
]


@pytest.mark.parametrize("config", MODEL_CONFIGS)
@pytest.mark.parametrize(("net", "form"), MODEL_CASES)
def test_the_test_models_are_bit_exact_on_the_golden_machine(integer_models, net, form, config):  # type: ignore[no-untyped-def]
    model = integer_models[f"{net}_{form}"]
    compiled = compile_model(model, config)
    accelerated = [layer for layer in compiled.layers if layer.unit is not LayerUnit.HOST]
    assert len(accelerated) >= 3
    x = dict(np.load(MODELS / f"{net}_inputs.npz"))["input_0"]
    name = compiled.inputs[0].name
    assert check_layers(compiled, {name: x}) is None
    expected = run_model(model, {name: x})
    outputs = simulate(compiled, {name: x})
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value)


LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::systolic.mapper.graph_checks.NameWarning")
@pytest.mark.parametrize("path", sorted(LIGHT.glob("light_*.onnx")), ids=lambda p: p.stem)
def test_the_onnx_light_models_compile_for_16x16(path):  # type: ignore[no-untyped-def]
    model = load_model(path)
    # The light models import opset 9, which has no QuantizeLinear for the quantization the
    # passes insert; their operators mean the same at opset 13.
    model = dataclasses.replace(
        model, opsets=tuple((d, 13 if d == "" else v) for d, v in model.opsets)
    )
    model = integer_model(model)
    compiled = compile_model(model, ArrayConfig(rows=16, cols=16))
    program = compiled.program
    assert [layer.name for layer in program.layers] == [n.label for n in model.graph.nodes]
    fused = [n.label for n in model.graph.nodes if n.domain == "systolic"]
    placed = [layer.name for layer in program.layers if layer.unit is not LayerUnit.HOST]
    assert set(fused) <= set(placed)  # every fused operator runs on the accelerator
    array_macs = sum(layer.macs for layer in program.layers if layer.unit is LayerUnit.ARRAY)
    assert array_macs > 0.9 * sum(layer.macs for layer in program.layers)


def test_a_graph_input_that_is_also_an_output_is_both():
    g = graph({"x": (DataType.INT8, (2, 8))}, {"x": DataType.INT8, "y": DataType.INT8},
              [qmatmul("x", "y", 8, 4, 11)[0]], qmatmul("x", "y", 8, 4, 11)[1])  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert [t.name for t in compiled.inputs] == ["x"]
    assert [t.name for t in compiled.outputs] == ["x", "y"]
    assert compiled.program.tensor("x").role is TensorRole.INPUT_OUTPUT
    x = random_input(DataType.INT8, (2, 8), 12)
    outputs = simulate(compiled, {"x": x})
    expected = run_graph(compiled.graph, {"x": x}, opsets=OPSETS)
    assert set(outputs) == {"x", "y"}
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name], value)


@pytest.mark.parametrize("dtype", [DataType.DOUBLE, DataType.FLOAT16, DataType.INT64,
                                   DataType.BOOL, DataType.UINT32])  # fmt: skip
def test_host_only_element_types_are_placed_for_host_steps(dtype, tmp_path):  # type: ignore[no-untyped-def]
    g = graph({"x": (dtype, (2, 3))}, {"y": dtype}, [node("Identity", ["x"], "y", domain="")])
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert compiled.layers[0].unit is LayerUnit.HOST
    x = (np.arange(6).reshape(2, 3) % 2).astype(dtype.numpy)
    np.testing.assert_array_equal(simulate(compiled, {"x": x})["y"], x)
    compiled.save(tmp_path / "p.bin")
    loaded = CompiledModel.load(tmp_path / "p.bin")
    assert loaded.program.tensor("x").dtype.numpy == dtype.numpy


def test_an_empty_intermediate_value_lives_on_the_host():
    f32, i64 = DataType.FLOAT, DataType.INT64
    constants = [Tensor(name, i64, np.array([value])) for name, value in
                 (("start", 0), ("end", 0), ("axis", 1))]  # fmt: skip
    nodes = [node("Slice", ["x", "start", "end", "axis"], "e", domain=""),
             node("Concat", ["x", "e"], "y", domain="", axis=1)]  # fmt: skip
    g = graph({"x": (f32, (2, 4))}, {"y": f32}, nodes, constants)
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.HOST, LayerUnit.HOST]
    assert "e" not in {t.name for t in compiled.program.tensors}
    x = np.random.default_rng(13).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(simulate(compiled, {"x": x})["y"], x)


def test_an_empty_graph_input_is_refused_with_the_way_out():
    g = graph({"x": (DataType.FLOAT, (0, 4))}, {"y": DataType.FLOAT},
              [node("Relu", ["x"], "y", domain="")])  # fmt: skip
    with pytest.raises(UnsupportedError, match=r"^graph input 'x' is empty .*non-zero sizes"):
        compile_model(g, ArrayConfig(rows=4, cols=4))
