"""The instruction set: one frozen dataclass per instruction, its checks, footprint and encoding.

docs/isa.md is the specification. Construction checks every field against the range any
instruction accepts (`InstructionError` naming the field and its limits); `check(config)` adds
the limits a configuration sets (memory depths, array size, dataflow, operand widths, the
32-bit external address space). `footprint(config)` returns the (memory, first, last, write)
ranges the in-flight table compares; `encode()` returns the 64-byte instruction word and
`decode(word)` inverts it exactly.

This module is the public face of the instruction set: the classes live in `instruction_base`
(the base class and `Unit`), `load`, `execute`, `store`, `table`, `softmax`,
`layernorm` and `halt`; here are every instruction class in opcode order and `decode`.
"""

import dataclasses
from typing import Any

from systolic.isa.execute import Compute, ComputeOS, Preload
from systolic.isa.fields import INSTRUCTION_BYTES, OPCODE_BITS, InstructionError
from systolic.isa.halt import Halt
from systolic.isa.instruction_base import Instruction, Unit
from systolic.isa.layernorm import LayerNorm
from systolic.isa.load import Load, LoadTarget
from systolic.isa.softmax import Softmax
from systolic.isa.store import Add, Copy, Pool, PoolMode, Store
from systolic.isa.table import Table

__all__ = [
    "DERIVED_FIELDS",
    "INSTRUCTION_TYPES",
    "Add",
    "Compute",
    "ComputeOS",
    "Copy",
    "Halt",
    "Instruction",
    "LayerNorm",
    "Load",
    "LoadTarget",
    "Pool",
    "PoolMode",
    "Preload",
    "Softmax",
    "Store",
    "Table",
    "Unit",
    "check_derived",
    "decode",
]

INSTRUCTION_TYPES: tuple[type[Instruction], ...] = (
    Load,
    Preload,
    Compute,
    ComputeOS,
    Store,
    Pool,
    Add,
    Copy,
    Halt,
    Table,
    Softmax,
    LayerNorm,
)
"""Every instruction class, in opcode order."""

_BY_OPCODE = {cls.OPCODE: cls for cls in INSTRUCTION_TYPES}


def _check_declarations() -> None:
    for cls in INSTRUCTION_TYPES:
        declared = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        encoded = {f.name for f in cls.FIELDS}
        if declared != encoded:
            raise AssertionError(f"{cls.__name__}: fields {declared ^ encoded} not laid out")


_check_declarations()


def decode(word: bytes) -> Instruction:
    """Return the instruction encoded in the 64-byte `word`.

    Raises InstructionError for a word of the wrong size, an unknown opcode, a set reserved
    bit, or a field outside its range.
    """
    if len(word) != INSTRUCTION_BYTES:
        raise InstructionError(f"an instruction word is {INSTRUCTION_BYTES} bytes, not {len(word)}")
    value = int.from_bytes(word, "little")
    opcode = value & ((1 << OPCODE_BITS) - 1)
    cls = _BY_OPCODE.get(opcode)
    if cls is None:
        raise InstructionError(f"unknown opcode 0x{opcode:02x} in instruction word")
    used, plan = _DECODE_PLANS[cls]
    if value & ~used:
        bits = [b for b in range(INSTRUCTION_BYTES * 8) if (value & ~used) >> b & 1]
        raise InstructionError(
            f"{cls.MNEMONIC} word has reserved bits set (bit {bits[0]}"
            f"{' and more' if len(bits) > 1 else ''}); reserved bits must be 0"
        )
    kwargs: dict[str, object] = {}
    for name, offset, mask, sign, kind, field in plan:
        raw = (value >> offset) & mask
        if kind is int:  # (Field.from_raw, inlined for the plain cases)
            kwargs[name] = raw - ((raw & sign) << 1)
        elif kind is bool:
            kwargs[name] = bool(raw)
        else:
            try:
                kwargs[name] = field.from_raw(raw)
            except ValueError:
                raise InstructionError(
                    f"{cls.MNEMONIC} {field.name} has no meaning for the value {raw}"
                ) from None
    derived = DERIVED_FIELDS[cls]
    if not derived:
        return cls(**kwargs)
    given = {name: kwargs.pop(name) for name in derived}
    instr = cls(**kwargs)
    check_derived(instr, given)
    return instr


def check_derived(instr: Instruction, given: dict[str, object]) -> None:
    """Raise InstructionError unless the derived fields of `instr` (its fields that are no
    constructor arguments, such as LOAD's decode hints) have the values `given`."""
    for name, value in given.items():
        expected = getattr(instr, name)
        if value != expected:
            raise InstructionError(
                f"{instr.MNEMONIC} {name} must be {int(expected)} (derived from the other "
                f"fields), not {int(value)}"  # type: ignore[call-overload]
            )


def _decode_plan(cls: type[Instruction]) -> tuple[int, tuple[tuple[Any, ...], ...]]:
    """Return the bits `cls` uses and, per field, (name, offset, mask, sign bit (0 for an
    unsigned field), kind, field)."""
    used = (1 << OPCODE_BITS) - 1
    plan = []
    for field in cls.FIELDS:
        used |= field.mask
        mask = (1 << field.width) - 1
        sign = 1 << (field.width - 1) if field.signed and field.kind is int else 0
        kind = field.kind if field.kind in (int, bool) else None
        plan.append((field.name, field.offset, mask, sign, kind, field))
    return used, tuple(plan)


_DECODE_PLANS = {cls: _decode_plan(cls) for cls in INSTRUCTION_TYPES}
DERIVED_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                       if not f.init) for cls in INSTRUCTION_TYPES}
"""Per class: its derived fields (encoded, but computed by the instruction, not given)."""
