"""The disassembler: program messages and binary words back to instructions and to text.

`disassemble(message)` rebuilds the `Program` of a `ProgramProto` (checking it against its
configuration), `decode_code` splits and decodes instruction words, and `format_program`
prints a program one instruction per line in the text form `systolic.isa.assembler`
parses back.
"""

import dataclasses
import enum

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType
from systolic.isa.fields import INSTRUCTION_BYTES, InstructionError
from systolic.isa.host_nodes import host_step_from_proto
from systolic.isa.instructions import Instruction, decode
from systolic.isa.program import (
    PLACEABLE_TYPES,
    LayerUnit,
    MemorySegment,
    Program,
    ProgramError,
    ProgramLayer,
    TensorPlacement,
    TensorRole,
)
from systolic.proto import ArrayConfigProto, LayerProto, ProgramProto, TensorPlacementProto

__all__ = [
    "config_from_proto",
    "decode_code",
    "disassemble",
    "format_instruction",
    "format_program",
]

_FORMAT_VERSION = 1


def decode_code(code: bytes) -> tuple[Instruction, ...]:
    """Return the instructions of concatenated 64-byte instruction words."""
    if len(code) % INSTRUCTION_BYTES:
        raise InstructionError(
            f"program code of {len(code)} bytes is not whole {INSTRUCTION_BYTES}-byte words"
        )
    instructions = []
    for index in range(len(code) // INSTRUCTION_BYTES):
        word = code[index * INSTRUCTION_BYTES : (index + 1) * INSTRUCTION_BYTES]
        try:
            instructions.append(decode(word))
        except InstructionError as err:
            raise InstructionError(f"instruction {index}: {err}") from None
    return tuple(instructions)


def config_from_proto(message: ArrayConfigProto) -> ArrayConfig:
    """Return the configuration a message describes (ConfigError if it is impossible)."""
    dataflows = {ArrayConfigProto.WS: Dataflow.WS, ArrayConfigProto.OS: Dataflow.OS,
                 ArrayConfigProto.BOTH: Dataflow.BOTH}
    if message.dataflow not in dataflows:
        raise ProgramError("the program's configuration names no dataflow (ws, os or both)")
    return ArrayConfig(
        rows=message.rows,
        cols=message.cols,
        dataflow=dataflows[message.dataflow],
        input_width=message.input_width,
        weight_width=message.weight_width,
        acc_width=message.acc_width,
        spad_kib=message.spad_kib,
        acc_kib=message.acc_kib,
        bus_bytes=message.bus_bytes,
        mem_latency=message.mem_latency,
    )


def _placement(message: TensorPlacementProto) -> TensorPlacement:
    role_name = TensorPlacementProto.Role.Name(message.role)
    dtype_name = TensorPlacementProto.ElementType.Name(message.dtype)
    if role_name not in TensorRole.__members__ or DataType[dtype_name] not in PLACEABLE_TYPES:
        raise ProgramError(f"tensor {message.name!r} has no role or no element type")
    return TensorPlacement(
        name=message.name,
        role=TensorRole[role_name],
        address=message.address,
        shape=tuple(message.shape),
        dtype=DataType[dtype_name],
        strides=tuple(message.strides),
        scale=tuple(message.scale),
        zero_point=tuple(message.zero_point),
        axis=message.axis if message.HasField("axis") else None,
    )


def _layer(message: LayerProto) -> ProgramLayer:
    unit_name = LayerProto.Unit.Name(message.unit)
    if unit_name not in LayerUnit.__members__:
        raise ProgramError(f"layer {message.name!r} names no unit (array, vector, layout, host)")
    return ProgramLayer(
        name=message.name,
        op=message.op,
        unit=LayerUnit[unit_name],
        first=message.first_instruction,
        count=message.instruction_count,
        macs=message.macs,
        inputs=tuple(message.inputs),
        outputs=tuple(message.outputs),
        reason=message.reason,
    )


def disassemble(message: ProgramProto) -> Program:
    """Return the `Program` a message holds; raise ProgramError/InstructionError if invalid."""
    if message.format_version != _FORMAT_VERSION:
        raise ProgramError(
            f"program format version {message.format_version} is not supported; "
            f"this tool reads version {_FORMAT_VERSION}: recompile the model"
        )
    if message.instruction_bytes != INSTRUCTION_BYTES:
        raise ProgramError(
            f"program instruction words are {message.instruction_bytes} bytes; "
            f"this tool reads {INSTRUCTION_BYTES}-byte words"
        )
    return Program(
        config=config_from_proto(message.config),
        instructions=decode_code(message.code),
        segments=tuple(MemorySegment(s.address, s.data) for s in message.segments),
        tensors=tuple(_placement(t) for t in message.tensors),
        layers=tuple(_layer(layer) for layer in message.layers),
        host_steps=tuple(host_step_from_proto(step) for step in message.host_steps),
    )


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, enum.Enum):
        return value.name
    return str(value)


def format_instruction(instr: Instruction) -> str:
    """Return one line: the mnemonic and every field as name=value, in declaration order
    (derived fields, such as LOAD's decode hints, left out: they follow from the others)."""
    operands = " ".join(
        f"{f.name}={_format_value(getattr(instr, f.name))}"
        for f in dataclasses.fields(instr)  # type: ignore[arg-type]
        if f.init
    )
    return f"{instr.MNEMONIC} {operands}".rstrip()


def format_program(program: Program) -> str:
    """Return the listing of a program: a comment header, then one instruction per line."""
    config = program.config
    lines = [
        (
            f"# systolic program: {config.shape_text} {config.dataflow.value}, "
            f"{len(program.instructions)} instructions, {len(program.segments)} memory segments"
        ),
    ]
    for tensor in program.tensors:
        lines.append(
            f"# {tensor.role.value} {tensor.name}: {tensor.dtype.name} {list(tensor.shape)} "
            f"at {tensor.address} strides {list(tensor.strides)}"
        )
    lines.extend(format_instruction(instr) for instr in program.instructions)
    return "\n".join(lines) + "\n"
