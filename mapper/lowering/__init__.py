"""Lowering: an integer graph to one accelerator program (the model compiler).

`compile_model(model, config)` gives a `CompiledModel` (program, memory image, placements,
layer table, host steps); `simulate(compiled, inputs)` runs it on a backend;
`check_on_golden(compiled, inputs)` compares every layer with the reference executor.
"""

from systolic.mapper.lowering.check import LayerCheck, check_on_golden, first_failure
from systolic.mapper.lowering.compile_model import compile_model, layer_unit
from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel, MemoryView, simulate
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.conv import lower_qconv
from systolic.mapper.lowering.estimate import ArrayCycles, array_cycles, ideal_cycles
from systolic.mapper.lowering.layer_code import (
    BumpAllocator,
    ConstantAllocator,
    LayerCode,
    LayerStats,
)
from systolic.mapper.lowering.matmul import lower_qmatmul

__all__ = [
    "AcceleratorStep",
    "ArrayCycles",
    "BumpAllocator",
    "CompiledModel",
    "ConstantAllocator",
    "LayerCheck",
    "LayerCode",
    "LayerContext",
    "LayerStats",
    "MemoryView",
    "array_cycles",
    "check_on_golden",
    "compile_model",
    "first_failure",
    "ideal_cycles",
    "layer_unit",
    "lower_qconv",
    "lower_qmatmul",
    "simulate",
]
