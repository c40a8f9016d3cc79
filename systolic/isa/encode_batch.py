"""Whole programs to and from instruction words with numpy, class by class.

`encode_words(instructions)` returns the encodings (`Instruction.encode`, docs/isa.md) of a
sequence of instructions as a uint64 array of shape (n, 8), row i holding instruction i's
eight little-endian 64-bit words: the same bytes as `assemble_code`, made with one array
operation per class and field instead of one Python call per instruction (a ResNet-50
program has some 300,000 instructions). `field_columns(words, cls, names)` reads fields of
the rows of class `cls` back as int64 arrays (signed fields sign-extended).
"""

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import attrgetter

import numpy as np

from systolic.isa.fields import INSTRUCTION_BYTES, OPCODE_BITS, Field
from systolic.isa.instruction_base import Instruction, Unit
from systolic.isa.instructions import INSTRUCTION_TYPES

__all__ = [
    "CLASS_OF_OPCODE", "UNIT_CODES", "WORDS", "encode_words", "field_columns", "opcodes",
    "unit_codes",
]

WORDS = INSTRUCTION_BYTES // 8
"""64-bit words per instruction."""

_OPCODE_MASK = (1 << OPCODE_BITS) - 1
CLASS_OF_OPCODE: dict[int, type[Instruction]] = {cls.OPCODE: cls for cls in INSTRUCTION_TYPES}
"""The instruction class of every opcode."""
UNIT_CODES: dict[Unit, int] = {Unit.LD: 0, Unit.EX: 1, Unit.ST: 2, Unit.DISPATCH: 3}
"""The number `unit_codes` gives each unit (the dispatcher's order, HALT's DISPATCH last)."""
_UNIT_OF_OPCODE = np.full(256, UNIT_CODES[Unit.DISPATCH], dtype=np.int8)
for _cls in INSTRUCTION_TYPES:
    _UNIT_OF_OPCODE[_cls.OPCODE] = UNIT_CODES[_cls.UNIT]


def encode_words(instructions: Sequence[Instruction]) -> np.ndarray:
    """Return the (n, 8) uint64 encodings of `instructions` (see the module docstring).

    An object that appears several times is encoded once (instructions are frozen values; the
    mapper shares one object among a layer's equal EXECUTEs, some ten per distinct one)."""
    count = len(instructions)
    if count:
        ids = np.fromiter(map(id, instructions), dtype=np.uint64, count=count)
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        if len(first) < count:
            distinct = [instructions[index] for index in first.tolist()]
            return _encode_distinct(distinct)[inverse.ravel()]
    return _encode_distinct(instructions)


def _encode_distinct(instructions: Sequence[Instruction]) -> np.ndarray:
    count = len(instructions)
    words = np.zeros((count, WORDS), dtype=np.uint64)
    if not count:
        return words
    types: list[type[Instruction]] = list(map(type, instructions))
    classes = list(dict.fromkeys(types))
    class_id = {cls: j for j, cls in enumerate(classes)}
    ids = np.fromiter(map(class_id.__getitem__, types), dtype=np.int32, count=count)
    for cls, j in class_id.items():
        where = np.flatnonzero(ids == j)
        words[where, 0] = cls.OPCODE
        fields: tuple[Field, ...] = cls.FIELDS
        if not fields:
            continue
        objs = [instructions[i] for i in where.tolist()]
        if len(fields) == 1:
            table = np.fromiter(map(attrgetter(fields[0].name), objs), dtype=np.int64,
                                count=len(objs))[:, None]
        else:  # (one flat iterator: np.array of tuples holding enums is several times slower)
            getter = attrgetter(*(f.name for f in fields))
            table = np.fromiter(chain.from_iterable(map(getter, objs)), dtype=np.int64,
                                count=len(objs) * len(fields)).reshape(len(objs), -1)
        for column, field in enumerate(fields):
            raw = table[:, column].astype(np.uint64) & np.uint64((1 << field.width) - 1)
            words[where, field.offset // 64] |= raw << np.uint64(field.offset % 64)
    return words


def opcodes(words: np.ndarray) -> np.ndarray:
    """Return the opcode of every row of `words` (uint8)."""
    return (words[:, 0] & np.uint64(_OPCODE_MASK)).astype(np.uint8)


def unit_codes(words: np.ndarray) -> np.ndarray:
    """Return the unit of every row of `words` as its `UNIT_CODES` number (int8)."""
    codes: np.ndarray = _UNIT_OF_OPCODE[opcodes(words)]
    return codes


def field_columns(words: np.ndarray, cls: type[Instruction], names: Iterable[str]
                  ) -> list[np.ndarray]:
    """Return the fields `names` of the rows of `words` (all of class `cls`) as int64 arrays."""
    by_name = {f.name: f for f in cls.FIELDS}
    columns = []
    for name in names:
        field = by_name[name]
        raw = (words[:, field.offset // 64] >> np.uint64(field.offset % 64)) & np.uint64(
            (1 << field.width) - 1)
        value = raw.astype(np.int64)
        if field.signed:
            value = np.where(value >> (field.width - 1) & 1, value - (1 << field.width), value)
        columns.append(value)
    return columns
