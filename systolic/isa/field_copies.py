"""Copies of LOAD, STORE and ADD instructions with some fields changed, without re-running the
construction that the original passed.

Building an instruction runs the dataclass constructor, the generated field checks and the
class's rules (`Instruction._check_rules`; LOAD also derives its decode hints there). A
compile builds hundreds of thousands of LOADs, STOREs and ADDs that differ from one another only in
where they read and write: the row, count, external address and row pattern. No rule reads
those fields (`FREE_FIELDS`), so a copy of an instruction that passed construction, with only
such fields changed and each new value inside its field's range, is exactly what the
constructor would build from the same fields; `copy_with` makes it by copying the fields'
dictionary (a few times cheaper). A value outside its field's range falls back to the
constructor, which raises its usual error. The copy is not yet checked against any
configuration (`Program` checks it).
"""

import dataclasses
from typing import TypeVar

from systolic.isa.instruction_base import Instruction
from systolic.isa.load import Load
from systolic.isa.store import Add, Store

__all__ = ["FREE_FIELDS", "copy_with"]

FREE_FIELDS: dict[type[Instruction], frozenset[str]] = {
    Load: frozenset({"row", "count", "ext", "n0", "row_stride0", "row_stride1"}),
    Store: frozenset({"acc_row", "m", "n", "param_row", "ext", "n0", "row_stride0",
                      "row_stride1"}),
    Add: frozenset({"a_row", "b_row", "m", "lanes", "ext", "n0", "row_stride0",
                    "row_stride1"}),
}  # fmt: skip
"""Per class, the int fields that neither its rules nor its derived fields read (LOAD's hints
come from k0, run, n_mid and the element strides; STORE's rules read lo, hi and the flags;
ADD's lo, hi, mul and multiplier_b)."""

_RANGES: dict[type[Instruction], dict[str, tuple[int, int]]] = {
    cls: {field.name: (field.minimum, field.maximum) for field in cls.FIELDS if field.name in free}
    for cls, free in FREE_FIELDS.items()
}

I = TypeVar("I", bound=Instruction)


def copy_with(instr: I, **changes: int) -> I:
    """Return `instr` (a LOAD, STORE or ADD) with `changes` (fields of `FREE_FIELDS`) replaced:
    what the constructor returns for those fields, not checked against a configuration.
    Raises KeyError for a field not free in `instr`'s class, and the constructor's
    InstructionError for a value outside its field's range."""
    ranges = _RANGES[type(instr)]
    for name, value in changes.items():
        low, high = ranges[name]
        if type(value) is not int or not low <= value <= high:
            return dataclasses.replace(instr, **changes)  # type: ignore[type-var]  # (raises)
    copy = object.__new__(type(instr))
    state = copy.__dict__
    state.update(instr.__dict__)
    state.update(changes)
    state["_checked_for"] = None
    return copy
