"""`CompiledModel`: a compiled program with its layer table, and the steps it runs as.

A compiled model is one `Program` (instructions ending in HALT, memory image, placements,
layer table, host steps) plus, when it was compiled in this process, the integer graph it came
from. It runs as a sequence of steps (`steps()`): accelerator segments — the instructions
between two host layers, each a runnable `Program` ending in its own HALT — and host steps,
which read their operands from external memory through the placements, run the reference
operator and write their results back. `read_value`, `write_value` and `read_logical_value`
access placed values in a memory image. Running the steps is the flows' work
(`systolic.simulation.runner`): the mapper runs nothing.
"""

import dataclasses
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from systolic.config import ArrayConfig
from systolic.errors import ModelError, SimulationError
from systolic.fileio import write_atomically
from systolic.ir import Graph
from systolic.isa.assembler import assemble
from systolic.isa.disassembler import disassemble
from systolic.isa.program import (
    HostStep,
    Program,
    ProgramLayer,
    TensorPlacement,
    TensorRole,
)
from systolic.proto import ProgramProto

__all__ = [
    "AcceleratorStep",
    "CompiledModel",
    "MemoryView",
    "read_logical_value",
    "read_value",
    "write_value",
]


@dataclasses.dataclass(frozen=True, eq=False)
class MemoryView:
    """A value held in memory in another order than its logical one: `placement` describes
    the bytes in memory order and `permutation[p]` is the logical index of the last axis at
    memory position p (a Flatten of an NHWC map read by a QMatMul)."""

    placement: TensorPlacement
    permutation: np.ndarray


@dataclasses.dataclass(frozen=True)
class AcceleratorStep:
    """Instructions `first .. first + len - 1` of the whole program, as a runnable program."""

    first: int
    program: Program


@dataclasses.dataclass(frozen=True, eq=False)
class CompiledModel:
    """See the module docstring. `program` is everything a program file holds; `graph` and
    `views` exist only for a model compiled in this process (for checking)."""

    program: Program
    graph: Graph | None = None
    opsets: Mapping[str, int] = dataclasses.field(default_factory=dict)
    views: Mapping[str, MemoryView] = dataclasses.field(default_factory=dict)

    @property
    def config(self) -> ArrayConfig:
        """The configuration compiled for."""
        return self.program.config

    @property
    def layers(self) -> tuple[ProgramLayer, ...]:
        """The layer table, in execution order."""
        return self.program.layers

    @property
    def inputs(self) -> tuple[TensorPlacement, ...]:
        """Placements of the model inputs."""
        return self.program.placements(TensorRole.INPUT)

    @property
    def outputs(self) -> tuple[TensorPlacement, ...]:
        """Placements of the model outputs."""
        return self.program.placements(TensorRole.OUTPUT)

    @functools.cached_property
    def memory_size(self) -> int:
        """Bytes of external memory the model uses from address 0."""
        return self.program.memory_end

    def memory_image(self) -> bytearray:
        """Return the initial external memory: zeros with the image segments."""
        memory = bytearray(self.memory_size)
        for segment in self.program.segments:
            memory[segment.address : segment.end] = segment.data
        return memory

    def steps(self) -> Iterator[AcceleratorStep | HostStep]:
        """Yield the accelerator segments and host steps in execution order."""
        for step in self._step_bounds():
            if isinstance(step, HostStep):
                yield step
            else:
                yield AcceleratorStep(step[0], self.program.part(*step))

    @property
    def accelerator_run_count(self) -> int:
        """The number of accelerator segments `steps` yields (counted without making them)."""
        return sum(not isinstance(step, HostStep) for step in self._step_bounds())

    def _step_bounds(self) -> Iterator[tuple[int, int] | HostStep]:
        """Yield the host steps and, for each accelerator segment, (first, end): its
        instructions `first .. end - 1`, in execution order."""
        program = self.program
        by_layer = {step.layer: step for step in program.host_steps}
        start = 0
        for index, layer in enumerate(program.layers):
            if index in by_layer:
                if layer.first > start:
                    yield start, layer.first
                start = layer.first
                yield by_layer[index]
        end = len(program.instructions) - 1
        if end > start or not program.layers:
            yield start, end

    def to_proto(self) -> ProgramProto:
        """Return the program message (what `save` writes)."""
        return assemble(self.program)

    def save(self, path: str | Path) -> None:
        """Write the program file atomically."""
        write_atomically(path, self.to_proto().SerializeToString())

    @classmethod
    def load(cls, path: str | Path) -> "CompiledModel":
        """Read a program file written by `save`."""
        message = ProgramProto()
        data = Path(path).read_bytes()
        try:
            message.ParseFromString(data)
        except DecodeError as err:
            raise ModelError(f"{path} is not a program file: {err}") from None
        return cls(disassemble(message))


def _view(memory: np.ndarray, placement: TensorPlacement) -> np.ndarray:
    if placement.end > memory.size:
        raise SimulationError(f"tensor {placement.name!r} lies beyond the simulated memory")
    return np.ndarray(placement.shape, dtype=placement.dtype.numpy, buffer=memory,
                      offset=placement.address, strides=placement.strides)  # fmt: skip


def read_value(memory: np.ndarray, placement: TensorPlacement) -> np.ndarray:
    """Return a copy of a placed value from a uint8 memory array."""
    return _view(memory, placement).copy()


def read_logical_value(
    compiled: "CompiledModel",
    memory: np.ndarray,
    placed: Mapping[str, TensorPlacement],
    name: str,
) -> np.ndarray | None:
    """Return value `name` in its logical (graph) order from a uint8 memory array: through its
    memory view when it is held reordered (`CompiledModel.views`), else through its placement
    in `placed` (name -> placement); None when the program does not hold it in memory."""
    if name in compiled.views:
        view = compiled.views[name]
        in_memory = read_value(memory, view.placement)
        logical = np.empty_like(in_memory)
        logical[..., view.permutation] = in_memory
        return logical
    if name in placed:
        return read_value(memory, placed[name])
    return None


def write_value(memory: np.ndarray, placement: TensorPlacement, value: np.ndarray) -> None:
    """Store a value at its placement in a uint8 memory array."""
    array = np.asarray(value)
    if array.shape != placement.shape:
        raise SimulationError(
            f"value {placement.name!r} has shape {list(array.shape)}; its placement holds "
            f"{list(placement.shape)}"
        )
    _view(memory, placement)[...] = array.astype(placement.dtype.numpy)
