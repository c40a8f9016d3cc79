"""The store unit's instructions: STORE (requantize acc rows), POOL, ADD and COPY.

Each writes rows of int8 lanes to external memory along its row pattern (ext, n0, row_stride0,
row_stride1); STORE with `raw` writes the int32 accumulators plus bias instead (docs/isa.md,
"STORE.raw"). STORE and COPY with `lut` map every value written through the activation table
(`systolic.isa.table`); ADD with `mul` multiplies instead of adding, with `b_broadcast` its
operand b is the one row `b_row` for every output row (docs/isa.md, "ADD modes").
"""

import dataclasses
import enum
from typing import Any, ClassVar

from systolic.config import ArrayConfig
from systolic.config_units import OptionalUnit
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import (
    ROW_PATTERN_SPECS,
    U16,
    U32,
    Instruction,
    Unit,
    row_pattern_of,
    write_range,
)
from systolic.isa.memories import PARAMS_DEPTH, Access, Memory, depth
from systolic.isa.patterns import Segment, row_segments
from systolic.isa.table import need_8bit_activations, need_unit

__all__ = [
    "INT8_RANGE", "RAW_BYTES", "SHIFT_RANGE", "Add", "Copy", "Pool", "PoolMode", "RowWriter",
    "Store", "check_clamp",
]


RAW_BYTES = 4
"""Bytes of one element STORE writes with `raw`: a little-endian int32."""


class PoolMode(enum.IntEnum):
    """POOL's reduction (1-bit field `mode`)."""

    MAX = 0
    AVG = 1


def check_clamp(instr: Any) -> None:
    """Raise InstructionError `<MNEMONIC> lo (l) must not exceed hi (h)` unless lo <= hi."""
    lo, hi = instr.lo, instr.hi
    if lo > hi:
        instr._fail(f"lo ({lo}) must not exceed hi ({hi})")


INT8_RANGE = {"signed": True, "minimum": -128, "maximum": 127}
"""`spec` keywords of an s8 field over the whole int8 range."""
SHIFT_RANGE = {"signed": True, "minimum": -31, "maximum": 31}
"""`spec` keywords of an s8 shift field (-31 .. 31)."""


class RowWriter(Instruction):
    """A STORE-unit instruction: reads on-chip rows (`reads`) and writes `written_rows()` rows
    of `row_lanes()` operands (`row_bytes(config)` bytes) each to external memory along its
    row pattern."""

    def written_rows(self) -> int:
        """The number of rows written out."""
        raise NotImplementedError

    def row_lanes(self) -> int:
        """The operands in each written row."""
        raise NotImplementedError

    def reads(self) -> tuple[Access, ...]:
        """The on-chip rows read."""
        raise NotImplementedError

    def row_bytes(self, config: ArrayConfig) -> int:
        """The bytes of each written row: `row_lanes()` operands of `operand_bytes`."""
        return self.row_lanes() * config.operand_bytes

    def written(self, config: ArrayConfig) -> Access:
        """The external byte range written."""
        return write_range(self, self.written_rows(), self.row_bytes(config))

    def _need_writable(self, config: ArrayConfig) -> None:
        self._need_flip_support(config)
        written = self.written(config)
        self._need_address_space(written.first, written.last)

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (*self.reads(), self.written(config))

    def segments(self, config: ArrayConfig) -> list[Segment]:
        return row_segments(row_pattern_of(self), self.written_rows(), self.row_bytes(config))


@dataclasses.dataclass(frozen=True)
class Store(RowWriter):
    """STORE: requantize `acc[acc_row, acc_row+m)` lanes 0..n-1 and write them out (through
    the activation table when `lut`); with `raw`, write `wrap32(acc + bias)` of each lane as
    a 4-byte little-endian int32 instead (rows of `4 * n` bytes)."""

    OPCODE: ClassVar[int] = 0x05
    MNEMONIC: ClassVar[str] = "STORE"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("lut", 1, kind=bool),
        spec("raw", 1, kind=bool),
        spec("n", U16, minimum=1),
        spec("zero_point", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("lo", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("hi", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("param_row", U16, maximum=PARAMS_DEPTH - 1),
        spec("acc_row", U32),
        spec("m", U32, minimum=1),
        *ROW_PATTERN_SPECS,
    )

    acc_row: int
    m: int
    n: int
    param_row: int
    zero_point: int
    lo: int
    hi: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False
    lut: bool = False
    raw: bool = False

    def _check_rules(self) -> None:
        check_clamp(self)
        if self.raw:
            for name in ("zero_point", "lo", "hi", "flip_sign", "lut"):
                value = int(getattr(self, name))
                if value != 0:
                    self._fail(f"{name} must be 0 with raw, not {value}")

    def check(self, config: ArrayConfig) -> None:
        if self.lut:
            need_unit(self, "lut ", OptionalUnit.TABLES, config)
        self._need_rows(
            "acc_row + m", self.acc_row + self.m, depth(config, Memory.ACC), "acc", config
        )
        self._need_at_most("n", self.n, config.cols, "the array's cols")
        self._need_writable(config)

    def written_rows(self) -> int:
        return self.m

    def row_lanes(self) -> int:
        return self.n

    def row_bytes(self, config: ArrayConfig) -> int:
        """`4 * n` with `raw` (int32 elements), else `n * operand_bytes`."""
        return RAW_BYTES * self.n if self.raw else self.n * config.operand_bytes

    def reads(self) -> tuple[Access, ...]:
        return (
            Access(Memory.ACC, self.acc_row, self.acc_row + self.m - 1, False),
            Access(Memory.PARAMS, self.param_row, self.param_row, False),
        )


@dataclasses.dataclass(frozen=True)
class Pool(RowWriter):
    """POOL: max or average pooling of an h x w pixel tile in spad_in, oh x ow outputs."""

    OPCODE: ClassVar[int] = 0x06
    MNEMONIC: ClassVar[str] = "POOL"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("mode", 1, kind=PoolMode),
        spec("flip_sign", 1, kind=bool),
        spec("lanes", U16, minimum=1),
        spec("h", U16, minimum=1),
        spec("w", U16, minimum=1),
        spec("kh", U16, minimum=1),
        spec("kw", U16, minimum=1),
        spec("sh", U16, minimum=1),
        spec("sw", U16, minimum=1),
        spec("pad_top", U16, signed=True),
        spec("pad_left", U16, signed=True),
        spec("oh", U16, minimum=1),
        spec("ow", U16, minimum=1),
        spec("in_row", U32),
        spec("multiplier", U32, signed=True),
        spec("shift", 8, **SHIFT_RANGE),  # type: ignore[arg-type]
        spec("zp_in", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("zp_out", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("lo", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("hi", 8, **INT8_RANGE),  # type: ignore[arg-type]
        *ROW_PATTERN_SPECS,
    )

    mode: PoolMode
    in_row: int
    lanes: int
    h: int
    w: int
    kh: int
    kw: int
    sh: int
    sw: int
    pad_top: int
    pad_left: int
    oh: int
    ow: int
    lo: int
    hi: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    multiplier: int = 0
    shift: int = 0
    zp_in: int = 0
    zp_out: int = 0
    flip_sign: bool = False

    def _check_rules(self) -> None:
        check_clamp(self)
        if self.mode is PoolMode.MAX:
            for name in ("multiplier", "shift", "zp_in", "zp_out"):
                if getattr(self, name) != 0:
                    self._fail(f"{name} must be 0 when mode is MAX, not {getattr(self, name)}")
        for axis, pad, k, s, out, size in (
            ("rows", self.pad_top, self.kh, self.sh, self.oh, self.h),
            ("columns", self.pad_left, self.kw, self.sw, self.ow, self.w),
        ):
            if k - 1 - pad < 0 or (out - 1) * s - pad > size - 1:
                self._fail(
                    f"windows must overlap the tile: with {axis} pad {pad}, kernel {k}, "
                    f"stride {s} and {out} outputs, a window lies outside 0..{size - 1}"
                )

    def check(self, config: ArrayConfig) -> None:
        self._need_at_most("lanes", self.lanes, config.dim, "the scratchpad row width dim")
        self._need_rows(
            "in_row + h * w",
            self.in_row + self.h * self.w,
            depth(config, Memory.SPAD_IN),
            "spad_in",
            config,
        )
        self._need_writable(config)

    def written_rows(self) -> int:
        return self.oh * self.ow

    def row_lanes(self) -> int:
        return self.lanes

    def reads(self) -> tuple[Access, ...]:
        return (Access(Memory.SPAD_IN, self.in_row, self.in_row + self.h * self.w - 1, False),)


@dataclasses.dataclass(frozen=True)
class Add(RowWriter):
    """ADD: rescaled element-wise sum (product when `mul`) of spad_in rows a_row.. and
    b_row.. (the one row b_row when `b_broadcast`), written out."""

    OPCODE: ClassVar[int] = 0x07
    MNEMONIC: ClassVar[str] = "ADD"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("mul", 1, kind=bool),
        spec("b_broadcast", 1, kind=bool),
        spec("lanes", U16, minimum=1),
        spec("shift", 8, **SHIFT_RANGE),  # type: ignore[arg-type]
        spec("zp_a", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("zp_b", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("zp_out", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("lo", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("hi", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("a_row", U32),
        spec("b_row", U32),
        spec("m", U32, minimum=1),
        spec("multiplier_a", U32, signed=True),
        spec("multiplier_b", U32, signed=True),
        *ROW_PATTERN_SPECS,
    )

    a_row: int
    b_row: int
    m: int
    lanes: int
    multiplier_a: int
    multiplier_b: int
    shift: int
    zp_a: int
    zp_b: int
    zp_out: int
    lo: int
    hi: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False
    mul: bool = False
    b_broadcast: bool = False

    def _check_rules(self) -> None:
        check_clamp(self)
        if self.mul and self.multiplier_b != 0:
            self._fail(f"multiplier_b must be 0 with mul, not {self.multiplier_b}")

    def check(self, config: ArrayConfig) -> None:
        if self.mul:
            need_8bit_activations(self, "mul ", config)
        self._need_at_most("lanes", self.lanes, config.dim, "the scratchpad row width dim")
        spad = depth(config, Memory.SPAD_IN)
        self._need_rows("a_row + m", self.a_row + self.m, spad, "spad_in", config)
        if self.b_broadcast:
            self._need_rows("b_row + 1", self.b_row + 1, spad, "spad_in", config)
        else:
            self._need_rows("b_row + m", self.b_row + self.m, spad, "spad_in", config)
        self._need_writable(config)

    def b_rows(self) -> int:
        """The spad_in rows operand b spans: 1 with `b_broadcast`, else `m`."""
        return 1 if self.b_broadcast else self.m

    def written_rows(self) -> int:
        return self.m

    def row_lanes(self) -> int:
        return self.lanes

    def reads(self) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.a_row, self.a_row + self.m - 1, False),
            Access(Memory.SPAD_IN, self.b_row, self.b_row + self.b_rows() - 1, False),
        )


@dataclasses.dataclass(frozen=True)
class Copy(RowWriter):
    """COPY: write lanes 0..lanes-1 of `spad_in[in_row, in_row+m)` to external memory
    (through the activation table when `lut`)."""

    OPCODE: ClassVar[int] = 0x08
    MNEMONIC: ClassVar[str] = "COPY"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("lut", 1, kind=bool),
        spec("lanes", U16, minimum=1),
        spec("in_row", U32),
        spec("m", U32, minimum=1),
        *ROW_PATTERN_SPECS,
    )

    in_row: int
    m: int
    lanes: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False
    lut: bool = False

    def check(self, config: ArrayConfig) -> None:
        if self.lut:
            need_unit(self, "lut ", OptionalUnit.TABLES, config)
            need_8bit_activations(self, "lut ", config)
        self._need_at_most("lanes", self.lanes, config.dim, "the scratchpad row width dim")
        self._need_rows(
            "in_row + m", self.in_row + self.m, depth(config, Memory.SPAD_IN), "spad_in", config
        )
        self._need_writable(config)

    def written_rows(self) -> int:
        return self.m

    def row_lanes(self) -> int:
        return self.lanes

    def reads(self) -> tuple[Access, ...]:
        return (Access(Memory.SPAD_IN, self.in_row, self.in_row + self.m - 1, False),)
