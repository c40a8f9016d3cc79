"""The assembler: instructions (Python objects or text) to binary words and program messages.

`assemble(program)` returns the `ProgramProto` message of a `Program` (docs/isa.md, "Program
format"); `assemble_code` the instruction words alone. `parse_instruction`/`parse_text` read
the text form `systolic.isa.disassembler` prints, one instruction per line:
`MNEMONIC name=value ...` (integers in any Python base, booleans 0/1, enums by name; omitted
fields take their defaults; `#` starts a comment).
"""

import dataclasses
import enum
from collections.abc import Iterable

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.fields import INSTRUCTION_BYTES, InstructionError
from systolic.isa.host_nodes import host_step_to_proto
from systolic.isa.instructions import (
    DERIVED_FIELDS,
    INSTRUCTION_TYPES,
    Instruction,
    check_derived,
)
from systolic.isa.program import Program
from systolic.proto import (
    ArrayConfigProto,
    LayerProto,
    MemorySegmentProto,
    ProgramProto,
    TensorPlacementProto,
)

__all__ = [
    "FORMAT_VERSION",
    "assemble",
    "assemble_code",
    "config_to_proto",
    "parse_instruction",
    "parse_text",
]

FORMAT_VERSION = 1
"""The program format version this module writes."""

_BY_MNEMONIC = {cls.MNEMONIC: cls for cls in INSTRUCTION_TYPES}


def assemble_code(instructions: Iterable[Instruction]) -> bytes:
    """Return the concatenated 64-byte instruction words."""
    words: bytes = encode_words(list(instructions)).tobytes()
    return words


_DATAFLOW_TO_PROTO = {Dataflow.WS: ArrayConfigProto.WS, Dataflow.OS: ArrayConfigProto.OS,
                      Dataflow.BOTH: ArrayConfigProto.BOTH}


def config_to_proto(config: ArrayConfig) -> ArrayConfigProto:
    """Return the message form of `config`."""
    return ArrayConfigProto(
        rows=config.rows,
        cols=config.cols,
        dataflow=_DATAFLOW_TO_PROTO[config.dataflow],
        input_width=config.input_width,
        weight_width=config.weight_width,
        acc_width=config.acc_width,
        spad_kib=config.spad_kib,
        acc_kib=config.acc_kib,
        bus_bytes=config.bus_bytes,
        mem_latency=config.mem_latency,
    )


def assemble(program: Program) -> ProgramProto:
    """Return the `ProgramProto` message of `program`."""
    message = ProgramProto(
        format_version=FORMAT_VERSION,
        config=config_to_proto(program.config),
        instruction_bytes=INSTRUCTION_BYTES,
        code=program.words.tobytes(),
    )
    for segment in program.segments:
        message.segments.append(MemorySegmentProto(address=segment.address, data=segment.data))
    for tensor in program.tensors:
        placed = TensorPlacementProto(
            name=tensor.name,
            role=tensor.role.name,
            address=tensor.address,
            shape=tensor.shape,
            dtype=tensor.dtype.name,
            strides=tensor.strides,
            scale=tensor.scale,
            zero_point=tensor.zero_point,
        )
        if tensor.axis is not None:
            placed.axis = tensor.axis
        message.tensors.append(placed)
    for layer in program.layers:
        message.layers.append(
            LayerProto(
                name=layer.name,
                op=layer.op,
                unit=layer.unit.name,
                first_instruction=layer.first,
                instruction_count=layer.count,
                macs=layer.macs,
                inputs=layer.inputs,
                outputs=layer.outputs,
                reason=layer.reason,
            )
        )
    message.host_steps.extend(host_step_to_proto(step) for step in program.host_steps)
    return message


def _parse_value(cls: type[Instruction], name: str, text: str) -> object:
    field = next((f for f in cls.FIELDS if f.name == name), None)
    if field is None:
        known = ", ".join(f.name for f in cls.FIELDS)
        raise InstructionError(f"{cls.MNEMONIC} has no field {name!r} (its fields: {known})")
    try:
        if field.kind is bool:
            if text not in ("0", "1"):
                raise ValueError(text)
            return text == "1"
        if issubclass(field.kind, enum.Enum):
            return field.kind[text.upper()]
        return int(text, 0)
    except (KeyError, ValueError):
        raise InstructionError(
            f"{cls.MNEMONIC} {name}={text!r} is not a valid value for the field"
        ) from None


def parse_instruction(line: str) -> Instruction:
    """Return the instruction written on `line` in the disassembler's text form."""
    words = line.split("#", 1)[0].split()
    if not words:
        raise InstructionError("an empty line holds no instruction")
    cls = _BY_MNEMONIC.get(words[0].upper())
    if cls is None:
        raise InstructionError(
            f"unknown instruction {words[0]!r}; use one of {', '.join(_BY_MNEMONIC)}"
        )
    kwargs = {}
    for word in words[1:]:
        name, sep, text = word.partition("=")
        if not sep:
            raise InstructionError(f"{cls.MNEMONIC} operand {word!r} is not name=value")
        if name in kwargs:
            raise InstructionError(f"{cls.MNEMONIC} field {name} is given twice")
        kwargs[name] = _parse_value(cls, name, text)
    required = [
        f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING and f.name not in kwargs
    ]
    if required:
        raise InstructionError(f"{cls.MNEMONIC} needs the fields {', '.join(required)}")
    given = {name: kwargs.pop(name) for name in DERIVED_FIELDS[cls] if name in kwargs}
    instr = cls(**kwargs)
    check_derived(instr, given)
    return instr


def parse_text(text: str) -> tuple[Instruction, ...]:
    """Return the instructions of a text listing (blank and comment lines are skipped)."""
    instructions = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.split("#", 1)[0].strip():
            continue
        try:
            instructions.append(parse_instruction(line))
        except InstructionError as err:
            raise InstructionError(f"line {number}: {err}") from None
    return tuple(instructions)
