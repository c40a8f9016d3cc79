"""systolic.QLayerNorm lowered to LOAD + LAYERNORM, run on the golden machine against the
reference executor bit for bit (rows longer than dim, lengths not a multiple of dim, uint8
and int8, zero points, eps, rows spanning several spad_in blocks); rows that are not
contiguous stay on the host; bert_tiny's LayerNorms in every form (slow)."""

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.isa.layernorm import LayerNorm
from systolic.isa.memories import Memory, depth
from systolic.isa.program import LayerUnit, TensorPlacement, TensorRole
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.mapper.lowering.layernorm import lower_qlayernorm
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_graph, run_model
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}


def _qlayernorm(x: str, y: str, x_type: DataType, y_type: DataType, eps: int = 0):  # type: ignore[no-untyped-def]
    x_zero = 131 if x_type == U8 else 3
    y_zero = 128 if y_type == U8 else 0
    # 1 / (2^16 * s_y) for s_y = 1/32: multiplier 2^30, shift 10
    return node("QLayerNorm", [x], y, x_zero_point=x_zero, eps=eps, multiplier=1 << 30,
                shift=10, y_zero_point=y_zero, y_type=int(y_type))  # fmt: skip


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _check(compiled: CompiledModel, inputs: dict[str, np.ndarray], output: str) -> None:
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)[output]
    np.testing.assert_array_equal(simulate(compiled, inputs)[output], expected)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shape", [(1, 16, 64), (3, 16), (7, 5), (2, 3, 37), (50,)])
@pytest.mark.parametrize("types", [(U8, U8), (I8, I8), (U8, I8)], ids=["u8", "i8", "u8-i8"])
def test_layernorm_matches_the_reference(config, shape, types):  # type: ignore[no-untyped-def]
    x_type, y_type = types
    g = graph({"x": (x_type, shape)}, {"y": y_type}, [_qlayernorm("x", "y", *types, eps=500)])
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    norms = [i for i in compiled.program.instructions if isinstance(i, LayerNorm)]
    assert sum(n.m for n in norms) == int(np.prod(shape[:-1]))
    assert {(n.length, n.eps) for n in norms} == {(shape[-1], 500)}
    _check(compiled, {"x": random_input(x_type, shape, 3)}, "y")


def test_rows_beyond_one_block_alternate_halves_of_spad_in():  # type: ignore[no-untyped-def]
    config = ArrayConfig(rows=4, cols=4, spad_kib=1)
    half = depth(config, Memory.SPAD_IN) // 2
    shape = (40, 30)  # 8 chunks of 4 per row
    block = half // 8
    g = graph({"x": (I8, shape)}, {"y": I8}, [_qlayernorm("x", "y", I8, I8)])
    compiled = compile_model(g, config)
    norms = [i for i in compiled.program.instructions if isinstance(i, LayerNorm)]
    assert block < 40 and [n.m for n in norms] == [min(block, 40 - r) for r in range(0, 40, block)]
    assert [n.in_row for n in norms] == [half * (i % 2) for i in range(len(norms))]
    _check(compiled, {"x": random_input(I8, shape, 5)}, "y")


def test_constant_rows_give_the_zero_point():  # type: ignore[no-untyped-def]
    g = graph({"x": (I8, (4, 20))}, {"y": I8}, [_qlayernorm("x", "y", I8, I8)])
    compiled = compile_model(g, ArrayConfig(rows=8, cols=8))
    x = np.full((4, 20), 7, np.int8)
    np.testing.assert_array_equal(simulate(compiled, {"x": x})["y"], np.zeros((4, 20), np.int8))


def test_rows_not_contiguous_are_refused():  # type: ignore[no-untyped-def]
    from systolic.mapper.lowering.context import LayerContext
    from systolic.mapper.lowering.memory_plan import MemoryPlan

    config = ArrayConfig(rows=4, cols=4)
    g = graph({"x": (I8, (2, 3, 5))}, {"y": I8}, [_qlayernorm("x", "y", I8, I8)])
    plan = MemoryPlan(config)
    plan.alias(TensorPlacement("x", TensorRole.INPUT, 0, (2, 3, 5), I8, (15, 1, 3)))
    plan.alias(TensorPlacement("y", TensorRole.OUTPUT, 64, (2, 3, 5), I8, (15, 5, 1)))
    with pytest.raises(UnsupportedError, match="QLayerNorm 'y': the rows of 'x' are not"):
        lower_qlayernorm(g.nodes[0], LayerContext(config, g, plan))


REALISTIC = Path(__file__).parents[2] / "models" / "realistic"


def _bert_feed() -> dict[str, np.ndarray]:
    inputs = np.load(REALISTIC / "bert_tiny_inputs.npz")
    return {name: inputs[f"{name}_0"] for name in ("input_ids", "attention_mask")}


@pytest.mark.slow
@pytest.mark.parametrize("form", ["float", "qdq", "qop", "dynamic"])
def test_bert_tiny_layernorms_run_on_the_accelerator(form):  # type: ignore[no-untyped-def]
    """Every form of bert_tiny's five LayerNorms (decomposed, opset 13) becomes QLayerNorm,
    gamma and beta QMul and QAdd; the program at 16x16 is bit-exact with the reference,
    within cosine 0.997 of the float model under onnxruntime, and no farther from it than
    onnxruntime's run of a quantized form itself."""
    path = REALISTIC / f"bert_tiny_{form}.onnx"
    feed = _bert_feed()
    fused, report = run_passes(load_model(str(path)), calibration=[feed])
    assert [n.op_type for n in fused.graph.nodes].count("QLayerNorm") == 5
    assert not [f for f in report.fates if f.action == "host"
                and f.op_type.split(":")[0].rsplit(".", 1)[-1] in ("ReduceMean", "Pow", "Sqrt", "Div")]
    compiled = compile_model(fused, ArrayConfig(rows=16, cols=16))
    norms = [layer for layer in compiled.layers if layer.op == "QLayerNorm"]
    assert [layer.unit for layer in norms] == [LayerUnit.VECTOR] * 5
    got = simulate(compiled, feed)["output"]
    np.testing.assert_array_equal(got, run_model(fused, feed)["output"])
    session = ort.InferenceSession(str(REALISTIC / "bert_tiny_float.onnx"),
                                   providers=["CPUExecutionProvider"])
    want = session.run(["output"], feed)[0]
    assert cosine(want, got) > 0.997
    # the quantized forms under onnxruntime quantize the variance to 8 bits between the
    # steps (qdq, qop) where LAYERNORM sums exactly: the program is the closer to float
    if form != "float":
        own = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert cosine(want, got) >= cosine(want, own.run(["output"], feed)[0])
