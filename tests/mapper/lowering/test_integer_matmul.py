"""systolic.QMatMulInt lowered to the array with STORE.raw (int32 rows), run on the golden
machine against the reference executor bit for bit: uint8 and int8 A, K and N beyond the
array, batched rows, with and without Bias, int32 wrap-around of the bias."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Store
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8, I8, I32 = DataType.UINT8, DataType.INT8, DataType.INT32

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}


def _run(config: ArrayConfig, a_type: DataType, a_shape: tuple[int, ...], n: int,
         bias: np.ndarray | None, seed: int) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    k = a_shape[-1]
    constants = [Tensor("B", I8, rng.integers(-128, 128, (k, n)).astype(np.int8))]
    inputs = ["a", "B"]
    if bias is not None:
        constants.append(Tensor("bias", I32, bias))
        inputs.append("bias")
    g = graph({"a": (a_type, a_shape)}, {"y": I32}, [node("QMatMulInt", inputs, "y")], constants)
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY]
    stores = [i for i in compiled.program.instructions if isinstance(i, Store)]
    assert stores and all(s.raw for s in stores)
    feed = {"a": random_input(a_type, a_shape, seed)}
    assert check_layers(compiled, feed) is None
    expected = run_graph(compiled.graph, feed, opsets=OPSETS)["y"]
    got = simulate(compiled, feed)["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("a_type", [U8, I8], ids=["u8", "i8"])
@pytest.mark.parametrize("a_shape,n", [((5, 12), 7), ((2, 3, 37), 20), ((1, 9), 1), ((19, 4), 33)])
def test_raw_product_matches_the_reference(config, a_type, a_shape, n):  # type: ignore[no-untyped-def]
    bias = np.random.default_rng(1).integers(-(2**20), 2**20, n).astype(np.int32)
    _run(config, a_type, a_shape, n, bias, 2)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_without_bias_and_with_a_wrapping_bias(config):  # type: ignore[no-untyped-def]
    _run(config, U8, (6, 10), 5, None, 4)
    extreme = np.array([2**31 - 1, -(2**31), 2**31 - 7, 0, -5], np.int32)
    _run(config, U8, (6, 10), 5, extreme, 5)
