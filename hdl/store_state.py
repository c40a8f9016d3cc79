"""The STORE unit's state shared by its datapaths: the held instruction (its word and tag
registers, one flag per class, its fields read through the ISA's field table), the control
strobes and the reader's."""

from typing import NamedTuple

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data

from systolic.hdl.instruction_fields import TAG_WIDTH, instruction_layout
from systolic.isa.fields import INSTRUCTION_BITS
from systolic.isa.instructions import (
    Add,
    Copy,
    Instruction,
    LayerNorm,
    Pool,
    Softmax,
    Store,
    Table,
)

__all__ = ["CLASSES", "Control", "Reads", "StoreInstruction", "field", "pick"]

CLASSES = (Store, Copy, Pool, Add, Table, Softmax, LayerNorm)
"""The instruction classes the STORE unit executes."""


def field(word: Value, cls: type[Instruction], name: str) -> Value:
    """Return field `name` of instruction class `cls` in `word`, from the ISA's field table."""
    return data.View(instruction_layout(cls), word)[name]


def pick(options: list[tuple[Value, Value]], default: Value) -> Value:
    """Return a Mux chain: the value of the first (condition, value) pair whose condition holds."""
    result = default
    for condition, value in reversed(options):
        result = Mux(condition, value, result)
    return result


class StoreInstruction:
    """The instruction the STORE unit holds, from the cycle after it is taken until the next.

    `word` and `tag` are registers (the caller loads them); `is_[cls]` is the flag of each class
    of `CLASSES` (`opcode == cls.OPCODE`, combinational); `row_norm` is SOFTMAX's or
    LAYERNORM's (the instructions of the row-normalisation unit, `SoftmaxUnit`).
    """

    def __init__(self, m: Module) -> None:
        self.word = Signal(INSTRUCTION_BITS)
        self.tag = Signal(TAG_WIDTH)
        self.is_: dict[type[Instruction], Signal] = {
            cls: Signal(name=f"is_{cls.MNEMONIC.lower()}") for cls in CLASSES}
        m.d.comb += [flag.eq(self.word[:8] == cls.OPCODE) for cls, flag in self.is_.items()]
        self.row_norm = Signal(name="is_row_norm")
        m.d.comb += self.row_norm.eq(self.is_[Softmax] | self.is_[LayerNorm])

    def field(self, cls: type[Instruction], name: str) -> Value:
        """Return field `name` of the word read as an instruction of class `cls`."""
        return field(self.word, cls, name)

    def common(self, name: str, among: tuple[type[Instruction], ...]) -> Value:
        """Return field `name` of whichever of the classes `among` the instruction is (the
        last one's when it is none of the others)."""
        return pick([(self.is_[cls], self.field(cls, name)) for cls in among[:-1]],
                    self.field(among[-1], name))


class Control(NamedTuple):
    """The instruction's life: `accept` (taken now), `first_cycle` (the cycle after),
    `running` (taken, not finished) and `finish` (driven by the datapaths: it ends now)."""

    accept: Value
    first_cycle: Signal
    running: Signal
    finish: Signal


class Reads(NamedTuple):
    """The reader: `issue` (a read now), `last` (it ends an output row), `valid` and `flags`
    {sel, first, last, row} (registered: the read's data is on the port), `total` (the
    instruction's output rows, or TABLE's rows)."""

    issue: Signal
    last: Signal
    valid: Signal
    flags: Signal
    total: Value
