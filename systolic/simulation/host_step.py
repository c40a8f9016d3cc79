"""Run one host step of a compiled model: its reference operator on the accelerator's memory.

A host step (`systolic.isa.program.HostStep`) is a graph node the accelerator does not run
(QuantizeLinear, Softmax, ...). `run_host_step` reads its operands from external memory
through their placements (or from the values earlier host steps made without a placement),
runs the reference operator and writes its results back the same way.
"""

from collections.abc import Mapping

import numpy as np

from systolic.errors import SimulationError
from systolic.isa.program import HostStep, Program, TensorPlacement
from systolic.mapper.lowering.compiled import read_value, write_value
from systolic.reference.executor import make_op

__all__ = ["run_host_step"]


def _operands(
    step: HostStep,
    placed: Mapping[str, TensorPlacement],
    memory: np.ndarray,
    host_values: Mapping[str, np.ndarray],
) -> list[np.ndarray | None]:
    constants = {t.name: t.data for t in step.constants}
    args: list[np.ndarray | None] = []
    for name in step.node.inputs:
        if not name:
            args.append(None)
        elif name in constants:
            args.append(constants[name])
        elif name in host_values:
            args.append(host_values[name])
        elif name in placed:
            args.append(read_value(memory, placed[name]))
        else:
            raise SimulationError(f"host step {step.node.label!r} reads {name!r}, never made")
    return args


def run_host_step(
    step: HostStep,
    program: Program,
    memory: np.ndarray,
    host_values: dict[str, np.ndarray],
    opsets: Mapping[str, int] | None = None,
) -> list[np.ndarray]:
    """Run one host step on `memory` (a writeable uint8 array, updated in place); results
    without a placement go to `host_values` (name -> value). Returns the step's outputs."""
    placed = program.tensors_by_name
    args = _operands(step, placed, memory, host_values)
    results = make_op(step.node, opsets or {}).run(args)
    for name, value in zip(step.node.outputs, results, strict=False):
        if not name:
            continue
        if name in placed:
            write_value(memory, placed[name], value)
        else:
            host_values[name] = value
    return list(results)
