"""Tile descriptions of mismatching elements, and the layer comparison on real memory."""

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.examples import example_path
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.simulation.bitexact import compare_layer, differing_indices, tile_text
from systolic.simulation.inputs import random_inputs
from systolic.simulation.layer_check import reference_values
from systolic.simulation.runner import GOLDEN, run_compiled, segment_runner

CONV = ProgramLayer("c", "QConv", LayerUnit.ARRAY, 0, 1)
MATMUL = ProgramLayer("m", "QMatMul", LayerUnit.ARRAY, 0, 1)
POOL = ProgramLayer("p", "QMaxPool", LayerUnit.VECTOR, 0, 1)


def test_conv_tile_names_channel_block_and_pixel() -> None:
    ws = ArrayConfig(rows=4, cols=8)
    assert tile_text(CONV, (1, 20, 5, 6), (0, 17, 2, 3), ws) == (
        "tile: output channels 16..19 (column tile 2 of 3), GEMM row 15 "
        "(output pixel n,h,w = 0,2,3)"
    )
    os_ = ArrayConfig(rows=4, cols=8, dataflow=Dataflow.OS)
    assert tile_text(CONV, (1, 20, 5, 6), (0, 3, 2, 3), os_).endswith(
        "GEMM row 15 (output pixel n,h,w = 0,2,3), row tile 3 (4 rows each)"
    )


def test_matmul_and_vector_tiles() -> None:
    config = ArrayConfig(rows=4, cols=4)
    assert tile_text(MATMUL, (6, 10), (5, 9), config) == (
        "tile: output channels 8..9 (column tile 2 of 3), GEMM row 5"
    )
    assert tile_text(POOL, (1, 8, 4, 4), (0, 6, 1, 2), config) == "tile: channel 6, row 1"


def test_compare_layer_finds_the_first_wrong_element() -> None:
    config = ArrayConfig(rows=4, cols=4)
    integer, _ = run_passes(load_model(example_path()))
    compiled = compile_model(integer, config)
    inputs = random_inputs(load_model(example_path()), seed=2)
    reference = reference_values(compiled, inputs)
    memory = run_compiled(compiled, inputs, segment_runner(GOLDEN)).memory.copy()
    pool = next(layer for layer in compiled.layers if layer.op == "QMaxPool")
    assert compare_layer(compiled, pool, memory, reference) is None
    placement = compiled.program.tensor(pool.outputs[0])
    index = (0, 3, 2, 1)
    address = placement.address + sum(i * s for i, s in zip(index, placement.strides, strict=True))
    memory[address] ^= 0x80
    mismatch = compare_layer(compiled, pool, memory, reference)
    assert mismatch is not None
    assert (mismatch.layer, mismatch.element) == (pool.name, index)
    size = int(np.prod(placement.shape))
    assert mismatch.tile == f"tile: channel 3, row 2 (1 of {size} elements differ)"
    assert mismatch.actual == mismatch.expected ^ 0x80


def test_identical_nan_is_not_a_difference() -> None:
    want = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    got = np.array([1.0, np.nan, np.inf, 3.0], np.float32)
    np.testing.assert_array_equal(differing_indices(got, want), [[3]])
    np.testing.assert_array_equal(differing_indices(want, want), np.empty((0, 1), np.int64))
    ints = np.array([1, 2], np.int32)
    np.testing.assert_array_equal(differing_indices(ints, ints + [0, 1]), [[1]])
