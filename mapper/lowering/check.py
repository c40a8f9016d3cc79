"""Check a compiled model layer by layer on the golden machine against the reference.

`check_on_golden(compiled, inputs)` runs the integer graph with the reference executor,
keeping every node's outputs, and the compiled program on one golden `Machine` (host layers
with the reference operators on the same memory). After each layer it reads the layer's
outputs from memory through their placements and compares them bit for bit with the
reference, naming the first element that differs.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Node
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering.compiled import (
    CompiledModel,
    read_logical_value,
    run_host_step,
    write_value,
)
from systolic.reference.executor import run_graph
from systolic.sim.golden.machine import Machine

__all__ = ["LayerCheck", "check_on_golden", "first_failure", "reference_values"]


@dataclasses.dataclass(frozen=True)
class LayerCheck:
    """The comparison of one layer's outputs: `ok`, and `message` naming the first
    difference (empty when equal)."""

    layer: str
    op: str
    unit: LayerUnit
    ok: bool
    message: str = ""


def first_failure(checks: list[LayerCheck]) -> LayerCheck | None:
    """Return the first layer that differs, or None when all match."""
    return next((c for c in checks if not c.ok), None)


def _difference(name: str, got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)}, reference {list(want.shape)}"
    where = np.argwhere(got != want)
    if not where.size:
        return ""
    index = tuple(int(i) for i in where[0])
    return (
        f"{name}[{', '.join(map(str, index))}] = {got[index]}, reference {want[index]} "
        f"({len(where)} of {got.size} elements differ)"
    )


def reference_values(
    compiled: CompiledModel, inputs: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Return every value of the integer graph (inputs included) as the reference executor
    computes it."""
    if compiled.graph is None:
        raise ModelError("the bit-exactness check needs the integer graph of the model: compile "
                         "the model in this process")
    values: dict[str, np.ndarray] = dict(inputs)

    def keep(node: Node, args: list[np.ndarray | None], results: list[np.ndarray]) -> None:
        for name, value in zip(node.outputs, results, strict=False):
            if name:
                values[name] = np.asarray(value)

    run_graph(compiled.graph, inputs, opsets=compiled.opsets, on_node=keep)
    return values


def check_on_golden(compiled: CompiledModel, inputs: Mapping[str, np.ndarray]) -> list[LayerCheck]:
    """Run and compare every layer (see the module docstring)."""
    reference = reference_values(compiled, inputs)
    program = compiled.program
    machine = Machine(program.config, compiled.memory_size)
    for segment in program.segments:
        machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
    for placement in compiled.inputs:
        write_value(machine.memory, placement, inputs[placement.name])
    placed = {t.name: t for t in program.tensors}
    hosts = {step.layer: step for step in program.host_steps}
    host_values: dict[str, np.ndarray] = {}
    checks = []
    for index, layer in enumerate(program.layers):
        if index in hosts:
            run_host_step(hosts[index], program, machine.memory, host_values, compiled.opsets)
        for instr in program.instructions[layer.first : layer.end]:
            machine.execute(instr)
        problems = []
        for name in layer.outputs:
            got = read_logical_value(compiled, machine.memory, placed, name)
            if got is None:
                got = host_values.get(name)
            if got is None:
                continue
            problem = _difference(name, got, np.asarray(reference[name]))
            if problem:
                problems.append(problem)
        message = f"layer {layer.name!r} ({layer.op}): {'; '.join(problems)}" if problems else ""
        checks.append(LayerCheck(layer.name, layer.op, layer.unit, not problems, message))
    return checks
