"""`Program`: what the mapper produces and the golden model and the hardware run.

A program is the configuration it was compiled for, its instructions (ending with the only
HALT), the initial external memory image (segments of constants: weights, params) and the
placement of every named tensor (model inputs, outputs, constants and intermediate
activations) in external memory. A compiled model adds its layer table (`ProgramLayer`: which
instructions run which node of the integer graph) and the operators the host runs between
accelerator runs (`HostStep`).
Construction checks everything against the configuration, so a `Program` object is always
runnable (instructions not yet checked for this configuration object: with `batch_check`,
vectorised over the instruction words, when there are many).
"""

import collections
import dataclasses
import enum
import functools
import itertools
import math
import operator

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import SystolicError
from systolic.ir import DataType, Node, Tensor
from systolic.isa.batch_check import check_instructions
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import Halt, Instruction, Unit
from systolic.isa.memories import Memory
from systolic.isa.patterns import ADDRESS_LIMIT

__all__ = [
    "PLACEABLE_TYPES",
    "HostStep",
    "LayerUnit",
    "MemorySegment",
    "Program",
    "ProgramError",
    "ProgramLayer",
    "TensorPlacement",
    "TensorRole",
]


class ProgramError(SystolicError, ValueError):
    """A program that is inconsistent: overlapping segments, misplaced tensors, no HALT."""


PLACEABLE_TYPES = frozenset({
    DataType.FLOAT, DataType.UINT8, DataType.INT8, DataType.UINT16, DataType.INT16,
    DataType.INT32, DataType.INT64, DataType.BOOL, DataType.FLOAT16, DataType.DOUBLE,
    DataType.UINT32, DataType.UINT64,
})
"""The element types a placed tensor may have (the program format's ElementType enum)."""

_BATCH_FROM = 256
"""Programs with at least this many unchecked instructions are checked with `batch_check`."""


class TensorRole(enum.Enum):
    """What a placed tensor is to the program."""

    INPUT = "input"  #: written by the host before the run
    OUTPUT = "output"  #: read by the host after the run
    CONSTANT = "constant"  #: part of the memory image (weights, params)
    ACTIVATION = "activation"  #: an intermediate value written and read during the run
    INPUT_OUTPUT = "input_output"  #: a graph input that is also a graph output (both of the above)


class LayerUnit(enum.Enum):
    """Where a layer of a compiled model runs."""

    ARRAY = "array"  #: the systolic array (QConv, QMatMul)
    VECTOR = "vector"  #: the STORE unit's vector datapath (POOL, ADD)
    LAYOUT = "layout"  #: addressing alone or COPY (Reshape, Transpose, Concat, ...)
    HOST = "host"  #: numpy on the host between accelerator runs (no instructions)


@dataclasses.dataclass(frozen=True)
class ProgramLayer:
    """One layer of a compiled model: node `name` (operator `op`) runs on `unit` as
    instructions `first .. first + count - 1`; `reason` says why it runs there."""

    name: str
    op: str
    unit: LayerUnit
    first: int
    count: int
    macs: int = 0
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    reason: str = ""

    @property
    def end(self) -> int:
        """The index after the layer's last instruction."""
        return self.first + self.count


@dataclasses.dataclass(frozen=True)
class HostStep:
    """The operator of host layer number `layer`: `node` (bound to its version) and the
    constants it reads; its other inputs and outputs are read and written through placements."""

    layer: int
    node: Node
    constants: tuple[Tensor, ...] = ()


@dataclasses.dataclass(frozen=True)
class MemorySegment:
    """Initial external memory bytes `data` from `address`."""

    address: int
    data: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes) or not self.data:
            raise ProgramError(f"memory segment at {self.address} must hold at least one byte")
        if not 0 <= self.address <= ADDRESS_LIMIT - len(self.data):
            raise ProgramError(
                f"memory segment {self.address}..{self.end - 1} lies outside the 32-bit "
                f"external address space"
            )

    @property
    def end(self) -> int:
        """The first address after the segment."""
        return self.address + len(self.data)


@dataclasses.dataclass(frozen=True)
class TensorPlacement:
    """A named tensor in external memory.

    Element (i0, i1, ...) lies at `address + sum(i_d * strides[d])` (strides in bytes, not
    negative). `scale`/`zero_point` are the quantization parameters: empty for none, one value
    per tensor, or one per index of `axis`. uint8 tensors hold their uint8 bytes: the program's
    LOADs and STOREs flip the sign bit (docs/isa.md, "uint8 tensors").
    """

    name: str
    role: TensorRole
    address: int
    shape: tuple[int, ...]
    dtype: DataType
    strides: tuple[int, ...]
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    axis: int | None = None

    @classmethod
    def contiguous(
        cls,
        name: str,
        role: TensorRole,
        address: int,
        shape: tuple[int, ...],
        dtype: DataType,
        **quantization: object,
    ) -> "TensorPlacement":
        """Place a row-major tensor with no gaps at `address`."""
        strides = []
        step = dtype.numpy.itemsize
        for size in reversed(shape):
            strides.append(step)
            step *= size
        return cls(name, role, address, tuple(shape), dtype, tuple(reversed(strides)),
                   **quantization)  # type: ignore[arg-type]  # fmt: skip

    def __post_init__(self) -> None:
        if not self.name:
            raise ProgramError("a tensor placement needs a name")
        if self.dtype not in PLACEABLE_TYPES:
            raise ProgramError(f"tensor {self.name!r} has element type {self.dtype.name}, "
                               f"which a program cannot place")
        if len(self.strides) != len(self.shape):
            raise ProgramError(
                f"tensor {self.name!r} has {len(self.shape)} dimensions but "
                f"{len(self.strides)} strides"
            )
        if any(size < 1 for size in self.shape) or any(stride < 0 for stride in self.strides):
            raise ProgramError(
                f"tensor {self.name!r} needs positive sizes and non-negative strides, "
                f"not shape {self.shape} strides {self.strides}"
            )
        if len(self.scale) != len(self.zero_point):
            raise ProgramError(
                f"tensor {self.name!r} has {len(self.scale)} scales but "
                f"{len(self.zero_point)} zero points"
            )
        if len(self.scale) > 1:
            if self.axis is None or not 0 <= self.axis < len(self.shape):
                raise ProgramError(f"tensor {self.name!r} has per-axis scales but no valid axis")
            if len(self.scale) != self.shape[self.axis]:
                raise ProgramError(
                    f"tensor {self.name!r} has {len(self.scale)} scales for axis "
                    f"{self.axis} of size {self.shape[self.axis]}"
                )
        if not 0 <= self.address or self.end > ADDRESS_LIMIT:
            raise ProgramError(
                f"tensor {self.name!r} ({self.address}..{self.end - 1}) lies outside the "
                f"32-bit external address space"
            )

    @property
    def end(self) -> int:
        """The first address after the tensor's last byte."""
        last = sum((size - 1) * stride for size, stride in zip(self.shape, self.strides))
        return self.address + last + self.dtype.numpy.itemsize

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class Program:
    """A program for one configuration; see the module docstring."""

    config: ArrayConfig
    instructions: tuple[Instruction, ...]
    segments: tuple[MemorySegment, ...] = ()
    tensors: tuple[TensorPlacement, ...] = ()
    layers: tuple[ProgramLayer, ...] = ()
    host_steps: tuple[HostStep, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "instructions", tuple(self.instructions))
        object.__setattr__(self, "segments", tuple(self.segments))
        object.__setattr__(self, "tensors", tuple(self.tensors))
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "host_steps", tuple(self.host_steps))
        instructions = self.instructions
        if not instructions or not isinstance(instructions[-1], Halt) or any(
                issubclass(cls, Halt) for cls in set(map(type, instructions[:-1]))):
            halts = [i for i, instr in enumerate(instructions) if isinstance(instr, Halt)]
            raise ProgramError(
                "a program must end with HALT and have no other HALT "
                f"(HALT at {halts or 'no index'} of {len(instructions)} instructions)"
            )
        self._check_instructions()
        ordered = sorted(self.segments, key=lambda s: s.address)
        for before, after in itertools.pairwise(ordered):
            if after.address < before.end:
                raise ProgramError(
                    f"memory segments at {before.address} and {after.address} overlap"
                )
        counts = collections.Counter(t.name for t in self.tensors)
        duplicates = sorted(name for name, count in counts.items() if count > 1)
        if duplicates:
            raise ProgramError(f"tensor names must be unique: {', '.join(duplicates)}")
        self._check_layers()

    def _check_instructions(self) -> None:
        """`check_once(config)` on every instruction, in order: one by one for a few, else
        with `batch_check` (vectorised over the instruction words, which are kept)."""
        instructions, config = self.instructions, self.config
        for cls in set(map(type, instructions)):
            if not issubclass(cls, Instruction):
                index, instr = next((i, instr) for i, instr in enumerate(instructions)
                                    if not isinstance(instr, Instruction))
                raise ProgramError(f"instruction {index} is not an Instruction: {instr!r}")
        marks = list(map(operator.attrgetter("_checked_for"), instructions))
        if marks.count(None) == len(marks):  # (straight from the mapper: none checked yet)
            pending = list(range(len(marks)))
        else:  # (C-level loops: a part of a checked program has millions of marks to read)
            unchecked = np.fromiter(map(operator.is_not, marks, itertools.repeat(config)),
                                    dtype=bool, count=len(marks))
            pending = np.flatnonzero(unchecked).tolist()
        if len(pending) < _BATCH_FROM:
            for index in pending:
                instructions[index].check_once(config)
        elif len(pending) == len(instructions):
            check_instructions(instructions, config, self.words)
        else:
            check_instructions([instructions[index] for index in pending], config,
                               self.words[pending])

    def _check_layers(self) -> None:
        position = 0
        for index, layer in enumerate(self.layers):
            if layer.first != position or layer.count < 0:
                raise ProgramError(
                    f"layer {index} ({layer.name!r}) must start at instruction {position} "
                    f"(layers cover the program in order), not {layer.first}"
                )
            if layer.unit is LayerUnit.HOST and layer.count:
                raise ProgramError(f"host layer {layer.name!r} must have no instructions")
            position = layer.end
        if self.layers and position != len(self.instructions) - 1:
            raise ProgramError(
                f"the layers cover instructions 0..{position - 1} but the program has "
                f"{len(self.instructions) - 1} before its HALT"
            )
        hosts = [i for i, layer in enumerate(self.layers) if layer.unit is LayerUnit.HOST]
        if sorted(step.layer for step in self.host_steps) != hosts:
            raise ProgramError(
                f"every host layer needs exactly one host step: host layers {hosts}, "
                f"steps for {[step.layer for step in self.host_steps]}"
            )

    def tensor(self, name: str) -> TensorPlacement:
        """Return the placement of the tensor called `name`."""
        placement = self.tensors_by_name.get(name)
        if placement is not None:
            return placement
        known = ", ".join(t.name for t in self.tensors) or "none"
        raise ProgramError(f"the program places no tensor {name!r} (it places: {known})")

    @functools.cached_property
    def tensors_by_name(self) -> dict[str, TensorPlacement]:
        """The placements by tensor name (names are unique)."""
        return {t.name: t for t in self.tensors}

    def placements(self, role: TensorRole) -> tuple[TensorPlacement, ...]:
        """Return the placements with `role`, in program order (an INPUT_OUTPUT placement is
        among both the INPUT and the OUTPUT ones)."""
        both = role in (TensorRole.INPUT, TensorRole.OUTPUT)
        return tuple(
            t
            for t in self.tensors
            if t.role is role or (both and t.role is TensorRole.INPUT_OUTPUT)
        )

    @functools.cached_property
    def words(self) -> np.ndarray:
        """The instruction words, HALT included: uint64, shape (len(instructions), 8), row i
        the eight little-endian 64-bit words of instruction i (`encode_batch.encode_words`),
        read-only. Made once, when first read."""
        words = encode_words(self.instructions)
        words.flags.writeable = False
        return words

    def part(self, first: int, end: int) -> "Program":
        """Return the program of instructions `first .. end - 1` followed by a HALT (same
        configuration, no segments, tensors or layers); its `words` come from this program's
        (made here if not yet), so they are not encoded again. The part of the whole body
        (`first` 0, `end` the HALT's index) shares this program's instructions and words."""
        if first == 0 and end == len(self.instructions) - 1:  # (no copy of either)
            part = Program(self.config, self.instructions)
            part.__dict__["words"] = self.words  # (the cached_property's slot)
            return part
        halt = Halt()
        part = Program(self.config, (*self.instructions[first:end], halt))
        words = np.concatenate((self.words[first:end], encode_words([halt])))
        words.flags.writeable = False
        part.__dict__["words"] = words
        return part

    @functools.cached_property
    def memory_end(self) -> int:
        """The first address after every byte the program's image, tensors and instructions use
        (the specification; `systolic.sim.timing.native_facts.memory_end` computes the same from
        the instruction words with native code)."""
        end = self.data_end
        config = self.config
        for instr in self.instructions:
            if instr.UNIT is Unit.EX or isinstance(instr, Halt):  # on-chip only
                continue
            for access in instr.footprint(config):
                if access.memory is Memory.EXTERNAL and access.last >= end:
                    end = access.last + 1
        return end

    @property
    def data_end(self) -> int:
        """The first address after the program's image segments and placed tensors."""
        return max([s.end for s in self.segments] + [t.end for t in self.tensors] + [0])
