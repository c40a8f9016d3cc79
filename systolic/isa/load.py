"""LOAD: the load unit's one instruction, gathering external rows into an on-chip memory.

A LOAD word also carries *decode hints* (docs/isa.md, "LOAD"): the start of its element
pattern (`c0`, `j0`, the byte offsets `base_i0`, `base_j0`) and whether a wrap of j is
contiguous (`j_contiguous_1`, `j_contiguous_2`), derived from `k0`, `run`, `n_mid` and the
strides by `load_hints`, so the hardware's decode needs no divider and no multiplier. They are
not constructor arguments: every Load derives them, and decoding a word whose hints disagree
with its other fields fails (`systolic.isa.instructions.decode`).
"""

import dataclasses
import enum
import functools
from typing import ClassVar

from systolic.config import ArrayConfig
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import ROW_PATTERN_SPECS, U16, U32, Instruction, Unit
from systolic.isa.memories import Access, Memory, depth, params_row_bytes
from systolic.isa.patterns import (
    ADDRESS_LIMIT,
    ElementPattern,
    Segment,
    gather_segments,
    row_segments,
)

__all__ = ["HINT_NAMES", "Load", "LoadTarget", "load_hints"]

_WORD = 1 << 32

HINT_NAMES = ("c0", "j0", "base_i0", "base_j0", "j_contiguous_1", "j_contiguous_2")
"""The derived fields of a LOAD word, in `load_hints` order."""


@functools.lru_cache(maxsize=1 << 14)
def load_hints(k0: int, run: int, n_mid: int, stride_mid: int, stride_outer: int
               ) -> tuple[int, int, int, int, bool, bool]:
    """Return the decode hints of an element pattern (all zero when `run` or `n_mid` is 0).

    With k0 = (i0 * n_mid + j0) * run + c0 (c0 < run, j0 < n_mid): (c0, j0,
    base_i0 = i0 * stride_outer mod 2**32, base_j0 = base_i0 + j0 * stride_mid mod 2**32,
    gap == run, gap == 2 * run) where gap = stride_outer - (n_mid - 1) * stride_mid, the
    last two saying whether a wrap of j is contiguous for 1- and 2-byte operands.
    """
    if run < 1 or n_mid < 1:
        return 0, 0, 0, 0, False, False
    q, c0 = divmod(k0, run)
    i0, j0 = divmod(q, n_mid)
    base_i0 = i0 * stride_outer
    gap = stride_outer - (n_mid - 1) * stride_mid
    return (c0, j0, base_i0 % _WORD, (base_i0 + j0 * stride_mid) % _WORD,
            gap == run, gap == 2 * run)


class LoadTarget(enum.IntEnum):
    """The on-chip memory a LOAD writes (2-bit field `mem`; 3 is reserved)."""

    SPAD_IN = 0
    SPAD_WT = 1
    PARAMS = 2

    @property
    def memory(self) -> Memory:
        """The memory this target names."""
        return Memory[self.name]


_TARGET_MEMORY = {target: target.memory for target in LoadTarget}


@dataclasses.dataclass(frozen=True)
class Load(Instruction):
    """LOAD: gather `count` rows from external memory into `mem[row, row+count)`."""

    OPCODE: ClassVar[int] = 0x01
    MNEMONIC: ClassVar[str] = "LOAD"
    UNIT: ClassVar[Unit] = Unit.LD
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("mem", 2, kind=LoadTarget),
        spec("flip_sign", 1, kind=bool),
        spec("length", U16),
        spec("row", U32),
        spec("count", U32, minimum=1),
        *ROW_PATTERN_SPECS,
        spec("k0", U32),
        spec("run", U32),
        spec("n_mid", U32),
        spec("stride_mid", U32, signed=True),
        spec("stride_outer", U32, signed=True),
        spec("c0", U32),
        spec("j0", U32),
        spec("base_i0", U32),
        spec("base_j0", U32),
        spec("j_contiguous_1", 1, kind=bool),
        spec("j_contiguous_2", 1, kind=bool),
    )

    mem: LoadTarget
    row: int
    count: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    k0: int = 0
    length: int = 0
    run: int = 0
    n_mid: int = 0
    stride_mid: int = 0
    stride_outer: int = 0
    flip_sign: bool = False
    # Decode hints (HINT_NAMES): derived by `_check_rules`, never passed to the constructor.
    c0: int = dataclasses.field(default=0, init=False, repr=False, compare=False)
    j0: int = dataclasses.field(default=0, init=False, repr=False, compare=False)
    base_i0: int = dataclasses.field(default=0, init=False, repr=False, compare=False)
    base_j0: int = dataclasses.field(default=0, init=False, repr=False, compare=False)
    j_contiguous_1: bool = dataclasses.field(default=False, init=False, repr=False,
                                             compare=False)
    j_contiguous_2: bool = dataclasses.field(default=False, init=False, repr=False,
                                             compare=False)

    @classmethod
    def dense(
        cls,
        mem: LoadTarget,
        row: int,
        count: int,
        ext: int,
        row_stride: int,
        length: int,
        *,
        k0: int = 0,
        flip_sign: bool = False,
    ) -> "Load":
        """Row r from ext + r * row_stride, elements k0 .. k0+length-1 contiguous."""
        return cls(
            mem,
            row,
            count,
            ext,
            n0=1,
            row_stride1=row_stride,
            k0=k0,
            length=length,
            run=k0 + length,
            n_mid=1,
            flip_sign=flip_sign,
        )

    @classmethod
    def params(cls, row: int, count: int, ext: int, row_stride: int) -> "Load":
        """Params rows r from ext + r * row_stride (9 * cols bytes each)."""
        return cls(LoadTarget.PARAMS, row, count, ext, n0=1, row_stride1=row_stride)

    @property
    def element_pattern(self) -> ElementPattern:
        """The element pattern of the external reads (spad targets only)."""
        return ElementPattern(
            self.k0, self.length, self.run, self.n_mid, self.stride_mid, self.stride_outer
        )

    def _check_rules(self) -> None:
        hints = load_hints(self.k0, self.run, self.n_mid, self.stride_mid, self.stride_outer)
        self.__dict__.update(zip(HINT_NAMES, hints, strict=True))  # (frozen: no __setattr__)
        if self.mem is not LoadTarget.PARAMS:  # the common cases first, then the messages
            if self.length >= 1 and self.run >= 1 and self.n_mid >= 1:
                return
        elif not (self.k0 or self.length or self.run or self.n_mid or self.stride_mid
                  or self.stride_outer or self.flip_sign):
            return
        element_fields = ("k0", "length", "run", "n_mid", "stride_mid", "stride_outer")
        if self.mem is LoadTarget.PARAMS:
            for name in element_fields:
                if getattr(self, name) != 0:
                    self._fail(
                        f"{name} must be 0 when mem is PARAMS (a params row is 9 * cols "
                        f"contiguous bytes), not {getattr(self, name)}"
                    )
            if self.flip_sign:
                self._fail("flip_sign must be False when mem is PARAMS")
            return
        for name in ("length", "run", "n_mid"):
            if getattr(self, name) < 1:
                self._fail(f"{name} must be at least 1 when mem is {self.mem.name}, not 0")

    def check(self, config: ArrayConfig) -> None:
        mem = self.mem
        memory = _TARGET_MEMORY[mem]
        limit = depth(config, memory)
        if self.row + self.count > limit:
            self._need_rows("row + count", self.row + self.count, limit, memory.value, config)
        if mem is not LoadTarget.PARAMS:
            if self.length > config.dim:
                self._need_at_most("length", self.length, config.dim,
                                   "the scratchpad row width dim")
            if self.flip_sign:
                width = "weight_width" if mem is LoadTarget.SPAD_WT else "input_width"
                self._need_flip_support(config, width)
        low, high = self._external_range(config)
        if low < 0 or high >= ADDRESS_LIMIT:
            self._need_address_space(low, high)

    def _external_range(self, config: ArrayConfig) -> tuple[int, int]:
        if self.n0 == 1 and self.count >= 1:  # RowPattern.extent, inlined
            last = (self.count - 1) * self.row_stride1
            base_low, base_high = (self.ext + last, self.ext) if last < 0 else (
                self.ext, self.ext + last)
        else:
            base_low, base_high = self.row_pattern.extent(self.count)
        if self.mem is LoadTarget.PARAMS:
            return base_low, base_high + params_row_bytes(config) - 1
        element_bytes = config.operand_bytes
        low, high = self.element_pattern.offset_range(element_bytes)
        return base_low + low, base_high + high + element_bytes - 1

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        low, high = self._external_range(config)
        return (
            Access(self.mem.memory, self.row, self.row + self.count - 1, True),
            Access(Memory.EXTERNAL, low, high, False),
        )

    def segments(self, config: ArrayConfig) -> list[Segment]:
        if self.mem is LoadTarget.PARAMS:
            return row_segments(self.row_pattern, self.count, params_row_bytes(config))
        return gather_segments(
            self.row_pattern, self.count, self.element_pattern, config.operand_bytes
        )
