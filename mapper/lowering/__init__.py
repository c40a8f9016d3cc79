"""Lowering: an integer graph to one accelerator program (the model compiler).

`compile_model(model, config)` gives a `CompiledModel` (program, memory image, placements,
layer table, host steps). Running it is the flows' work (`systolic.simulation.runner`).
"""

from systolic.mapper.lowering.compile_model import compile_model, layer_unit
from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel, MemoryView
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
    "LayerCode",
    "LayerContext",
    "LayerStats",
    "MemoryView",
    "array_cycles",
    "compile_model",
    "ideal_cycles",
    "layer_unit",
    "lower_qconv",
    "lower_qmatmul",
]
