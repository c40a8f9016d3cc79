"""Bit fields of the 512-bit instruction word: their layout, ranges and packing.

Every instruction word is 512 bits (64 bytes), stored as eight little-endian 64-bit words;
word w holds bits [64 w, 64 w + 63], so bit b of the instruction is bit (b mod 8) of byte
b // 8. Bits [7:0] hold the opcode; narrow fields (flags and small enums, up to 4 bits) are
packed from bit 8 upwards in the flag byte [15:8]; every other field is 8, 16 or 32 bits
wide and naturally aligned (offset a multiple of its width), placed in declaration order at
the first aligned offset at or after the previous field's end, from bit 16. So no field
crosses a 64-bit word, and every bit no field covers is reserved and must be zero.
"""

import dataclasses
import enum

from systolic.errors import SystolicError

__all__ = [
    "INSTRUCTION_BITS",
    "INSTRUCTION_BYTES",
    "OPCODE_BITS",
    "Field",
    "InstructionError",
    "layout",
    "spec",
]

INSTRUCTION_BITS = 512
INSTRUCTION_BYTES = INSTRUCTION_BITS // 8
OPCODE_BITS = 8
_FLAG_BYTE = (8, 16)  # bits [8, 16): packed narrow fields
_WIDE_START = 16


class InstructionError(SystolicError, ValueError):
    """An instruction field outside its range, or an instruction word that does not decode."""


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of an instruction word.

    `kind` is int, bool or an IntEnum class; `minimum`/`maximum` are the range every
    instruction accepts, whatever the configuration (at most what `width` bits encode).
    """

    name: str
    offset: int
    width: int
    signed: bool
    kind: type
    minimum: int
    maximum: int

    @property
    def mask(self) -> int:
        """The field's bits, in place."""
        return ((1 << self.width) - 1) << self.offset

    def to_raw(self, value: object) -> int:
        """Return `value` as the unsigned bit pattern of the field (not yet shifted)."""
        number: int = int(value)  # type: ignore[call-overload]
        return number & ((1 << self.width) - 1)

    def from_raw(self, raw: int) -> object:
        """Return the field value of the unsigned bit pattern `raw` (not shifted)."""
        if self.signed and raw >> (self.width - 1):
            raw -= 1 << self.width
        if self.kind is bool:
            return bool(raw)
        if issubclass(self.kind, enum.IntEnum):
            return self.kind(raw)
        return raw


def spec(
    name: str,
    width: int,
    *,
    signed: bool = False,
    kind: type = int,
    minimum: int | None = None,
    maximum: int | None = None,
) -> tuple[str, int, bool, type, int | None, int | None]:
    """Declare a field (the offset is assigned by `layout`)."""
    return (name, width, signed, kind, minimum, maximum)


def layout(*specs: tuple[str, int, bool, type, int | None, int | None]) -> tuple[Field, ...]:
    """Assign offsets to declared fields by the module's rule; return them in declaration order."""
    fields = []
    flag_cursor, cursor = _FLAG_BYTE[0], _WIDE_START
    for name, width, signed, kind, minimum, maximum in specs:
        if width <= 4:
            offset = flag_cursor
            flag_cursor += width
            if flag_cursor > _FLAG_BYTE[1]:
                raise AssertionError("flag byte overflow")
        else:
            if width not in (8, 16, 32):
                raise AssertionError(f"field {name} width {width} is not 8, 16 or 32")
            offset = -(-cursor // width) * width
            cursor = offset + width
            if cursor > INSTRUCTION_BITS:
                raise AssertionError("instruction word overflow")
        low = -(1 << (width - 1)) if signed else 0
        high = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
        if kind is bool:
            high = 1
        elif kind is not int:
            high = max(int(member) for member in kind)  # type: ignore[attr-defined]
        fields.append(
            Field(
                name,
                offset,
                width,
                signed,
                kind,
                low if minimum is None else minimum,
                high if maximum is None else maximum,
            )
        )
    return tuple(fields)
