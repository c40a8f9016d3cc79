"""The base of every instruction: field checks, encoding, shared rule helpers and the unit enum.

An instruction is a frozen dataclass deriving from `Instruction` that declares OPCODE, MNEMONIC,
UNIT and FIELDS (its bit layout, see `fields`). Construction checks every field against its
range and raises `InstructionError` naming the field and its limits; subclasses add their own
rules (`_check_rules`), configuration limits (`check`), memory ranges (`footprint`) and
external segments (`segments`). docs/isa.md is the specification.
"""

import dataclasses
import enum
from collections.abc import Callable
from typing import Any, ClassVar

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.fields import INSTRUCTION_BYTES, Field, InstructionError, spec
from systolic.isa.memories import Access, Memory
from systolic.isa.patterns import ADDRESS_LIMIT, RowPattern, Segment

__all__ = [
    "ROW_PATTERN_SPECS",
    "U16",
    "U32",
    "Instruction",
    "Unit",
    "row_pattern_of",
    "write_range",
]

U16, U32 = 16, 32

_ENCODE_PLANS: dict[type, tuple[tuple[str, int, int], ...]] = {}
"""Per instruction class: (name, offset, mask) of each field, for `encode`."""

def _post_init_of(cls: type["Instruction"]) -> Callable[[Any], None]:
    """Return `cls`'s construction check: one generated function that tests every field for
    its exact type (int, bool or the enum) and range inline, sends an instruction that fails
    any of them to `_check_fields` (which names the problem), then runs `_check_rules` when
    `cls` has rules of its own. It first gives the instance its `_checked_for` entry (None),
    so that every instance of the class has the same keys and marking it checked later only
    changes a value (adding a key to 300,000 instances costs most of a second)."""
    tests = []
    kinds: dict[str, type] = {}
    for number, field in enumerate(cls.FIELDS):
        value = f"self.{field.name}"
        if field.kind is int:
            tests.append(f"(type({value}) is not int or not {field.minimum} <= {value} <= "
                         f"{field.maximum})")
        elif field.kind is bool:
            tests.append(f"({value} is not True and {value} is not False)")
        else:
            kinds[f"kind{number}"] = field.kind
            tests.append(f"type({value}) is not kind{number}")
    lines = ["def __post_init__(self):",
             # (the check mark's slot, made with the fields: marking later adds no key)
             "    self.__dict__['_checked_for'] = None"]
    if tests:
        lines.append(f"    if {' or '.join(tests)}:")
        lines.append("        self._check_fields()")
    if cls._check_rules is not Instruction._check_rules:
        lines.append("    self._check_rules()")
    lines.append("    return None")
    namespace: dict[str, Any] = dict(kinds)
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from the field table only
    post_init: Callable[[Any], None] = namespace["__post_init__"]
    return post_init


class Unit(enum.Enum):
    """The unit whose queue executes an instruction (HALT only passes dispatch)."""

    LD = "LD"
    EX = "EX"
    ST = "ST"
    DISPATCH = "dispatch"


ROW_PATTERN_SPECS = (
    spec("ext", U32),
    spec("n0", U32, minimum=1),
    spec("row_stride0", U32, signed=True),
    spec("row_stride1", U32, signed=True),
)


class Instruction:
    """Base class: field checks, encoding and the helpers every instruction shares."""

    OPCODE: ClassVar[int]
    MNEMONIC: ClassVar[str]
    UNIT: ClassVar[Unit]
    FIELDS: ClassVar[tuple[Field, ...]]
    _checked_for: ClassVar[ArrayConfig | None] = None
    """The configuration object this instruction passed `check` for (set on the instance)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give every instruction class its own generated construction check (`_post_init_of`)
        as `__post_init__`, unless the class writes one itself."""
        super().__init_subclass__(**kwargs)
        if "__post_init__" not in cls.__dict__ and hasattr(cls, "FIELDS"):
            cls.__post_init__ = _post_init_of(cls)  # type: ignore[method-assign,assignment]

    def __post_init__(self) -> None:
        """Check the fields and the rules (`_check_rules`): what the generated check does."""
        _post_init_of(type(self))(self)

    def _check_fields(self) -> None:
        for field in self.FIELDS:
            value = getattr(self, field.name)
            if field.kind is bool:
                if not isinstance(value, bool):
                    self._fail(f"{field.name} must be True or False, not {value!r}")
                continue
            if field.kind is not int:
                if not isinstance(value, field.kind):
                    members = ", ".join(m.name for m in field.kind)  # type: ignore[attr-defined]
                    self._fail(f"{field.name} must be one of {members}, not {value!r}")
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                self._fail(f"{field.name} must be an integer, not {value!r}")
            if not field.minimum <= value <= field.maximum:
                self._fail(
                    f"{field.name} must be from {field.minimum} to {field.maximum}, not {value}"
                )

    def check_once(self, config: ArrayConfig) -> None:
        """`check(config)`, skipped when this instruction object already passed it for this
        very `config` object (a program's instructions are checked when the Program is built;
        its segments, the golden machine and the timing model then need not check again)."""
        if self._checked_for is not config:
            self.check(config)
            object.__setattr__(self, "_checked_for", config)

    # -- overridden by instructions ------------------------------------------------------------

    def _check_rules(self) -> None:
        """Check the configuration-independent rules that tie fields together."""

    def check(self, config: ArrayConfig) -> None:
        """Raise InstructionError unless the instruction is valid on `config`."""

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        """Return the memory ranges the instruction reads and writes (at most three)."""
        return ()

    def segments(self, config: ArrayConfig) -> list[Segment]:
        """Return the external segments the instruction reads or writes, in order."""
        return []

    # -- shared helpers ------------------------------------------------------------------------

    def _fail(self, message: str) -> None:
        raise InstructionError(f"{self.MNEMONIC} {message}")

    def _need_rows(self, what: str, end: int, limit: int, memory: str, config: ArrayConfig) -> None:
        if end > limit:
            self._fail(
                f"{what} must not exceed {limit} (the {memory} depth of this "
                f"{config.shape_text} array), not {end}"
            )

    def _need_at_most(self, name: str, value: int, limit: int, why: str) -> None:
        if value > limit:
            self._fail(f"{name} must not exceed {limit} ({why}), not {value}")

    def _need_flip_support(self, config: ArrayConfig, width_name: str = "input_width") -> None:
        width = getattr(config, width_name)
        if getattr(self, "flip_sign", False) and (width != 8 or config.operand_bytes != 1):
            self._fail(
                f"flip_sign needs 8-bit operands stored in one byte ({width_name} 8, "
                f"operand_bytes 1); this array has {width_name} {width} and "
                f"operand_bytes {config.operand_bytes}"
            )

    def _need_address_space(self, low: int, high: int) -> None:
        if low < 0 or high >= ADDRESS_LIMIT:
            self._fail(
                f"accesses external bytes {low}..{high}, outside 0..{ADDRESS_LIMIT - 1}; "
                f"check ext and the strides"
            )

    def _need_dataflow(self, config: ArrayConfig, dataflow: Dataflow) -> None:
        if config.dataflow is not dataflow:
            self._fail(
                f"needs a {dataflow.value} (dataflow {dataflow.value}) array; "
                f"this array is {config.dataflow.value}"
            )

    # -- encoding ------------------------------------------------------------------------------

    def encode(self) -> bytes:
        """Return the 64-byte instruction word (eight little-endian 64-bit words)."""
        plan = _ENCODE_PLANS.get(type(self))
        if plan is None:
            plan = _ENCODE_PLANS[type(self)] = tuple(
                (f.name, f.offset, (1 << f.width) - 1) for f in self.FIELDS)
        word = self.OPCODE
        for name, offset, mask in plan:  # (Field.to_raw, inlined)
            word |= (int(getattr(self, name)) & mask) << offset
        return word.to_bytes(INSTRUCTION_BYTES, "little")

    def words(self) -> tuple[int, ...]:
        """Return the instruction word as eight unsigned 64-bit integers, word 0 first."""
        data = self.encode()
        return tuple(int.from_bytes(data[8 * w : 8 * w + 8], "little") for w in range(8))

    @property
    def row_pattern(self) -> RowPattern:
        """The row pattern of the external accesses (instructions with an `ext` field)."""
        return row_pattern_of(self)

    def operands(self) -> dict[str, object]:
        """Return the fields by name, in declaration order of the dataclass."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


def row_pattern_of(instr: Any) -> RowPattern:
    """Return the row pattern of `instr`'s ext, n0, row_stride0 and row_stride1 fields."""
    return RowPattern(
        instr.ext,
        instr.n0,
        instr.row_stride0,
        instr.row_stride1,
    )


def write_range(instr: Instruction, count: int, row_bytes: int) -> Access:
    """Return the external bytes written by `count` rows of `row_bytes` along the row pattern."""
    low, high = row_pattern_of(instr).extent(count)
    return Access(Memory.EXTERNAL, low, high + row_bytes - 1, True)
