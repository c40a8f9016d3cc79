"""The layer-by-layer comparison: the first layer (or final output) that differs, as runs end."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.errors import ModelError
from systolic.examples import example_path
from systolic.isa.program import Program
from systolic.mapper.lowering import CompiledModel, compile_model
from systolic.sim.result import RunResult
from systolic.simulation.layer_check import LayerComparison, check_layers, reference_values
from systolic.simulation.prepare import PreparedModel, prepare_model
from systolic.simulation.runner import GOLDEN, SegmentRunner, run_compiled, segment_runner


@pytest.fixture(scope="module")
def lenet() -> tuple[PreparedModel, CompiledModel]:
    prepared = prepare_model(example_path())
    return prepared, compile_model(prepared.integer, ArrayConfig(rows=4, cols=4))


def _flipping(address: int) -> SegmentRunner:
    """The golden runner, with one bit of `address` wrong after every run."""
    golden = segment_runner(GOLDEN)

    def run(program: Program, memory: bytearray) -> RunResult:
        result = golden(program, memory)
        result.memory[address] ^= 1
        return result

    return run


def _compare(lenet: tuple[PreparedModel, CompiledModel], runner: SegmentRunner) -> LayerComparison:
    prepared, compiled = lenet
    comparison = LayerComparison(compiled, reference_values(compiled, prepared.inputs))
    run = run_compiled(compiled, prepared.inputs, runner, after_run=comparison.after_run)
    comparison.finish(run.memory, run.outputs(compiled))
    return comparison


def test_a_correct_run_is_bit_exact(lenet: tuple[PreparedModel, CompiledModel]) -> None:
    prepared, compiled = lenet
    assert check_layers(compiled, prepared.inputs) is None
    assert check_layers(compiled, prepared.inputs, backend="model") is None


def test_the_first_wrong_layer_is_named(lenet: tuple[PreparedModel, CompiledModel]) -> None:
    _, compiled = lenet
    layer = next(layer for layer in compiled.layers if layer.name == "conv2_Conv")
    placement = compiled.program.tensor(layer.outputs[0])
    mismatch = _compare(lenet, _flipping(placement.address)).mismatch
    assert mismatch is not None
    assert (mismatch.layer, mismatch.element) == ("conv2_Conv", (0,) * len(placement.shape))
    assert mismatch.actual == mismatch.expected ^ 1


def test_a_wrong_final_output_is_named(lenet: tuple[PreparedModel, CompiledModel]) -> None:
    """The output is written by a host step after the last run: only the final check sees it."""
    prepared, compiled = lenet
    (output,) = compiled.outputs
    comparison = LayerComparison(compiled, reference_values(compiled, prepared.inputs))
    run = run_compiled(compiled, prepared.inputs, segment_runner(GOLDEN),
                       after_run=comparison.after_run)  # fmt: skip
    outputs = run.outputs(compiled)
    outputs[output.name] = outputs[output.name] + np.float32(1)
    mismatch = comparison.finish(run.memory, outputs)
    assert mismatch is not None and mismatch.tile.startswith(f"final output '{output.name}'")


def test_the_reference_needs_the_integer_graph(lenet: tuple[PreparedModel, CompiledModel]) -> None:
    prepared, compiled = lenet
    loaded = CompiledModel(compiled.program)
    with pytest.raises(ModelError, match=r"^the bit-exactness check needs the integer graph"):
        reference_values(loaded, prepared.inputs)
