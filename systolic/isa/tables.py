"""The instruction-word tables of docs/isa.md, generated from the field layouts.

`python -m systolic.isa.tables` prints them; a test checks docs/isa.md contains each one
verbatim, so the document and the encoder cannot drift apart.
"""

import enum

from systolic.isa.fields import Field
from systolic.isa.instructions import INSTRUCTION_TYPES, Instruction

__all__ = ["field_table", "main"]


def _kind(field: Field) -> str:
    if field.kind is bool:
        return "flag"
    if issubclass(field.kind, enum.Enum):
        return " / ".join(f"{m.value} {m.name}" for m in field.kind)
    return f"{'s' if field.signed else 'u'}{field.width}"


def field_table(cls: type[Instruction]) -> str:
    """Return the markdown table of `cls`'s word: opcode, then every field by bit position."""
    lines = [
        f"`{cls.MNEMONIC}` (opcode 0x{cls.OPCODE:02x})",
        "",
        "| bits | field | type | range |",
        "|---|---|---|---|",
        f"| 7:0 | opcode | u8 | 0x{cls.OPCODE:02x} |",
    ]
    for field in sorted(cls.FIELDS, key=lambda f: f.offset):
        top = field.offset + field.width - 1
        bits = str(field.offset) if field.width == 1 else f"{top}:{field.offset}"
        lines.append(
            f"| {bits} | `{field.name}` | {_kind(field)} | {field.minimum} .. {field.maximum} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Print every instruction's table."""
    print("\n\n".join(field_table(cls) for cls in INSTRUCTION_TYPES))


if __name__ == "__main__":
    main()
