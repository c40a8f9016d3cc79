"""The instruction set: one frozen dataclass per instruction, its checks, footprint and encoding.

docs/isa.md is the specification. Construction checks every field against the range any
instruction accepts (`InstructionError` naming the field and its limits); `check(config)` adds
the limits a configuration sets (memory depths, array size, dataflow, operand widths, the
32-bit external address space). `footprint(config)` returns the (memory, first, last, write)
ranges the in-flight table compares; `encode()` returns the 64-byte instruction word and
`decode(word)` inverts it exactly.
"""

import dataclasses
import enum
from typing import Any, ClassVar

from systolic.config import ArrayConfig, Dataflow

from .fields import INSTRUCTION_BYTES, OPCODE_BITS, Field, InstructionError, layout, spec
from .memories import PARAMS_DEPTH, Access, Memory, depth, params_row_bytes
from .patterns import (
    ADDRESS_LIMIT,
    ElementPattern,
    RowPattern,
    Segment,
    gather_segments,
    row_segments,
)

__all__ = [
    "INSTRUCTION_TYPES",
    "Add",
    "Compute",
    "ComputeOS",
    "Copy",
    "Halt",
    "Instruction",
    "Load",
    "LoadTarget",
    "Pool",
    "PoolMode",
    "Preload",
    "Store",
    "Unit",
    "decode",
]

U16, U32 = 16, 32


class LoadTarget(enum.IntEnum):
    """The on-chip memory a LOAD writes (2-bit field `mem`; 3 is reserved)."""

    SPAD_IN = 0
    SPAD_WT = 1
    PARAMS = 2

    @property
    def memory(self) -> Memory:
        """The memory this target names."""
        return Memory[self.name]


class PoolMode(enum.IntEnum):
    """POOL's reduction (1-bit field `mode`)."""

    MAX = 0
    AVG = 1


class Unit(enum.Enum):
    """The unit whose queue executes an instruction (HALT only passes dispatch)."""

    LD = "LD"
    EX = "EX"
    ST = "ST"
    DISPATCH = "dispatch"


_ROW_PATTERN_SPECS = (
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

    def __post_init__(self) -> None:
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
        self._check_rules()

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
        word = self.OPCODE
        for field in self.FIELDS:
            word |= field.to_raw(getattr(self, field.name)) << field.offset
        return word.to_bytes(INSTRUCTION_BYTES, "little")

    def words(self) -> tuple[int, ...]:
        """Return the instruction word as eight unsigned 64-bit integers, word 0 first."""
        data = self.encode()
        return tuple(int.from_bytes(data[8 * w : 8 * w + 8], "little") for w in range(8))

    @property
    def row_pattern(self) -> RowPattern:
        """The row pattern of the external accesses (instructions with an `ext` field)."""
        return _row_pattern_of(self)

    def operands(self) -> dict[str, object]:
        """Return the fields by name, in declaration order of the dataclass."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


def _row_pattern_of(instr: Any) -> RowPattern:
    return RowPattern(
        instr.ext,
        instr.n0,
        instr.row_stride0,
        instr.row_stride1,
    )


def _write_range(instr: Instruction, count: int, row_bytes: int) -> Access:
    low, high = _row_pattern_of(instr).extent(count)
    return Access(Memory.EXTERNAL, low, high + row_bytes - 1, True)


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
        *_ROW_PATTERN_SPECS,
        spec("k0", U32),
        spec("run", U32),
        spec("n_mid", U32),
        spec("stride_mid", U32, signed=True),
        spec("stride_outer", U32, signed=True),
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
        memory = self.mem.memory
        self._need_rows(
            "row + count", self.row + self.count, depth(config, memory), memory.value, config
        )
        if self.mem is not LoadTarget.PARAMS:
            self._need_at_most("length", self.length, config.dim, "the scratchpad row width dim")
            width = "weight_width" if self.mem is LoadTarget.SPAD_WT else "input_width"
            self._need_flip_support(config, width)
        low, high = self._external_range(config)
        self._need_address_space(low, high)

    def _external_range(self, config: ArrayConfig) -> tuple[int, int]:
        base_low, base_high = self.row_pattern.extent(self.count)
        if self.mem is LoadTarget.PARAMS:
            return base_low, base_high + params_row_bytes(config) - 1
        offsets = self.element_pattern.offsets(config.operand_bytes)
        return (
            base_low + int(offsets.min()),
            base_high + int(offsets.max()) + config.operand_bytes - 1,
        )

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


@dataclasses.dataclass(frozen=True)
class Preload(Instruction):
    """PRELOAD: shift `spad_wt[row, row+k)` (n weights each) into the shadow weights (WS)."""

    OPCODE: ClassVar[int] = 0x02
    MNEMONIC: ClassVar[str] = "PRELOAD"
    UNIT: ClassVar[Unit] = Unit.EX
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("k", U16, minimum=1),
        spec("n", U16, minimum=1),
        spec("row", U32),
    )

    row: int
    k: int
    n: int

    def check(self, config: ArrayConfig) -> None:
        self._need_dataflow(config, Dataflow.WS)
        self._need_at_most("k", self.k, config.rows, "the array's rows")
        self._need_at_most("n", self.n, config.cols, "the array's cols")
        self._need_rows(
            "row + k", self.row + self.k, depth(config, Memory.SPAD_WT), "spad_wt", config
        )

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (Access(Memory.SPAD_WT, self.row, self.row + self.k - 1, False),)


@dataclasses.dataclass(frozen=True)
class Compute(Instruction):
    """COMPUTE (weight-stationary): stream `spad_in[in_row, in_row+m)` through the weights."""

    OPCODE: ClassVar[int] = 0x03
    MNEMONIC: ClassVar[str] = "COMPUTE"
    UNIT: ClassVar[Unit] = Unit.EX
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("accumulate", 1, kind=bool),
        spec("in_row", U32),
        spec("m", U32, minimum=1),
        spec("acc_row", U32),
    )

    in_row: int
    m: int
    acc_row: int
    accumulate: bool = False

    def check(self, config: ArrayConfig) -> None:
        self._need_dataflow(config, Dataflow.WS)
        self._need_rows(
            "in_row + m", self.in_row + self.m, depth(config, Memory.SPAD_IN), "spad_in", config
        )
        self._need_rows(
            "acc_row + m", self.acc_row + self.m, depth(config, Memory.ACC), "acc", config
        )

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.in_row, self.in_row + self.m - 1, False),
            Access(Memory.ACC, self.acc_row, self.acc_row + self.m - 1, True),
        )


@dataclasses.dataclass(frozen=True)
class ComputeOS(Instruction):
    """COMPUTE.OS (output-stationary): acc rows i < m get sum over k of A[i, k] * B[k, j]."""

    OPCODE: ClassVar[int] = 0x04
    MNEMONIC: ClassVar[str] = "COMPUTE.OS"
    UNIT: ClassVar[Unit] = Unit.EX
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("accumulate", 1, kind=bool),
        spec("m", U16, minimum=1),
        spec("n", U16, minimum=1),
        spec("k", U32, minimum=1),
        spec("in_row", U32),
        spec("a_stride", U32),
        spec("wt_row", U32),
        spec("acc_row", U32),
    )

    in_row: int
    m: int
    n: int
    k: int
    wt_row: int
    acc_row: int
    a_stride: int = 0
    accumulate: bool = False

    def chunks(self, config: ArrayConfig) -> int:
        """Return the k-chunks of `dim` operands each: ceil(k / dim)."""
        return -(-self.k // config.dim)

    def _in_last(self, config: ArrayConfig) -> int:
        return self.in_row + (self.chunks(config) - 1) * self.a_stride + self.m - 1

    def check(self, config: ArrayConfig) -> None:
        self._need_dataflow(config, Dataflow.OS)
        self._need_at_most("m", self.m, config.rows, "the array's rows")
        self._need_at_most("n", self.n, config.cols, "the array's cols")
        if self.chunks(config) == 1 and self.a_stride != 0:
            self._fail(f"a_stride must be 0 when k <= dim ({config.dim}), not {self.a_stride}")
        if self.chunks(config) > 1 and self.a_stride < self.m:
            self._fail(
                f"a_stride must be at least m ({self.m}) when k > dim ({config.dim}), "
                f"not {self.a_stride}"
            )
        self._need_rows(
            "in_row + (ceil(k / dim) - 1) * a_stride + m",
            self._in_last(config) + 1,
            depth(config, Memory.SPAD_IN),
            "spad_in",
            config,
        )
        self._need_rows(
            "wt_row + k", self.wt_row + self.k, depth(config, Memory.SPAD_WT), "spad_wt", config
        )
        self._need_rows(
            "acc_row + m", self.acc_row + self.m, depth(config, Memory.ACC), "acc", config
        )

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.in_row, self._in_last(config), False),
            Access(Memory.SPAD_WT, self.wt_row, self.wt_row + self.k - 1, False),
            Access(Memory.ACC, self.acc_row, self.acc_row + self.m - 1, True),
        )


def _check_clamp(instr: Any) -> None:
    lo, hi = instr.lo, instr.hi
    if lo > hi:
        instr._fail(f"lo ({lo}) must not exceed hi ({hi})")


_INT8 = {"signed": True, "minimum": -128, "maximum": 127}
_SHIFT = {"signed": True, "minimum": -31, "maximum": 31}


@dataclasses.dataclass(frozen=True)
class Store(Instruction):
    """STORE: requantize `acc[acc_row, acc_row+m)` lanes 0..n-1 and write them out."""

    OPCODE: ClassVar[int] = 0x05
    MNEMONIC: ClassVar[str] = "STORE"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("n", U16, minimum=1),
        spec("zero_point", 8, **_INT8),  # type: ignore[arg-type]
        spec("lo", 8, **_INT8),  # type: ignore[arg-type]
        spec("hi", 8, **_INT8),  # type: ignore[arg-type]
        spec("param_row", U16, maximum=PARAMS_DEPTH - 1),
        spec("acc_row", U32),
        spec("m", U32, minimum=1),
        *_ROW_PATTERN_SPECS,
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

    def _check_rules(self) -> None:
        _check_clamp(self)

    def check(self, config: ArrayConfig) -> None:
        self._need_rows(
            "acc_row + m", self.acc_row + self.m, depth(config, Memory.ACC), "acc", config
        )
        self._need_at_most("n", self.n, config.cols, "the array's cols")
        self._need_flip_support(config)
        written = _write_range(self, self.m, self.n * config.operand_bytes)
        self._need_address_space(written.first, written.last)

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.ACC, self.acc_row, self.acc_row + self.m - 1, False),
            Access(Memory.PARAMS, self.param_row, self.param_row, False),
            _write_range(self, self.m, self.n * config.operand_bytes),
        )

    def segments(self, config: ArrayConfig) -> list[Segment]:
        return row_segments(_row_pattern_of(self), self.m, self.n * config.operand_bytes)


@dataclasses.dataclass(frozen=True)
class Pool(Instruction):
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
        spec("shift", 8, **_SHIFT),  # type: ignore[arg-type]
        spec("zp_in", 8, **_INT8),  # type: ignore[arg-type]
        spec("zp_out", 8, **_INT8),  # type: ignore[arg-type]
        spec("lo", 8, **_INT8),  # type: ignore[arg-type]
        spec("hi", 8, **_INT8),  # type: ignore[arg-type]
        *_ROW_PATTERN_SPECS,
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
        _check_clamp(self)
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
        self._need_flip_support(config)
        written = _write_range(self, self.oh * self.ow, self.lanes * config.operand_bytes)
        self._need_address_space(written.first, written.last)

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.in_row, self.in_row + self.h * self.w - 1, False),
            _write_range(self, self.oh * self.ow, self.lanes * config.operand_bytes),
        )

    def segments(self, config: ArrayConfig) -> list[Segment]:
        return row_segments(
            _row_pattern_of(self), self.oh * self.ow, self.lanes * config.operand_bytes
        )


@dataclasses.dataclass(frozen=True)
class Add(Instruction):
    """ADD: rescaled element-wise sum of spad_in rows a_row.. and b_row.., written out."""

    OPCODE: ClassVar[int] = 0x07
    MNEMONIC: ClassVar[str] = "ADD"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("lanes", U16, minimum=1),
        spec("shift", 8, **_SHIFT),  # type: ignore[arg-type]
        spec("zp_a", 8, **_INT8),  # type: ignore[arg-type]
        spec("zp_b", 8, **_INT8),  # type: ignore[arg-type]
        spec("zp_out", 8, **_INT8),  # type: ignore[arg-type]
        spec("lo", 8, **_INT8),  # type: ignore[arg-type]
        spec("hi", 8, **_INT8),  # type: ignore[arg-type]
        spec("a_row", U32),
        spec("b_row", U32),
        spec("m", U32, minimum=1),
        spec("multiplier_a", U32, signed=True),
        spec("multiplier_b", U32, signed=True),
        *_ROW_PATTERN_SPECS,
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

    def _check_rules(self) -> None:
        _check_clamp(self)

    def check(self, config: ArrayConfig) -> None:
        self._need_at_most("lanes", self.lanes, config.dim, "the scratchpad row width dim")
        spad = depth(config, Memory.SPAD_IN)
        self._need_rows("a_row + m", self.a_row + self.m, spad, "spad_in", config)
        self._need_rows("b_row + m", self.b_row + self.m, spad, "spad_in", config)
        self._need_flip_support(config)
        written = _write_range(self, self.m, self.lanes * config.operand_bytes)
        self._need_address_space(written.first, written.last)

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.a_row, self.a_row + self.m - 1, False),
            Access(Memory.SPAD_IN, self.b_row, self.b_row + self.m - 1, False),
            _write_range(self, self.m, self.lanes * config.operand_bytes),
        )

    def segments(self, config: ArrayConfig) -> list[Segment]:
        return row_segments(_row_pattern_of(self), self.m, self.lanes * config.operand_bytes)


@dataclasses.dataclass(frozen=True)
class Copy(Instruction):
    """COPY: write lanes 0..lanes-1 of `spad_in[in_row, in_row+m)` to external memory."""

    OPCODE: ClassVar[int] = 0x08
    MNEMONIC: ClassVar[str] = "COPY"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("lanes", U16, minimum=1),
        spec("in_row", U32),
        spec("m", U32, minimum=1),
        *_ROW_PATTERN_SPECS,
    )

    in_row: int
    m: int
    lanes: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False

    def check(self, config: ArrayConfig) -> None:
        self._need_at_most("lanes", self.lanes, config.dim, "the scratchpad row width dim")
        self._need_rows(
            "in_row + m", self.in_row + self.m, depth(config, Memory.SPAD_IN), "spad_in", config
        )
        self._need_flip_support(config)
        written = _write_range(self, self.m, self.lanes * config.operand_bytes)
        self._need_address_space(written.first, written.last)

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (
            Access(Memory.SPAD_IN, self.in_row, self.in_row + self.m - 1, False),
            _write_range(self, self.m, self.lanes * config.operand_bytes),
        )

    def segments(self, config: ArrayConfig) -> list[Segment]:
        return row_segments(_row_pattern_of(self), self.m, self.lanes * config.operand_bytes)


@dataclasses.dataclass(frozen=True)
class Halt(Instruction):
    """HALT: the end of the program."""

    OPCODE: ClassVar[int] = 0x09
    MNEMONIC: ClassVar[str] = "HALT"
    UNIT: ClassVar[Unit] = Unit.DISPATCH
    FIELDS: ClassVar[tuple[Field, ...]] = ()


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
    used = (1 << OPCODE_BITS) - 1
    for field in cls.FIELDS:
        used |= field.mask
    if value & ~used:
        bits = [b for b in range(INSTRUCTION_BYTES * 8) if (value & ~used) >> b & 1]
        raise InstructionError(
            f"{cls.MNEMONIC} word has reserved bits set (bit {bits[0]}"
            f"{' and more' if len(bits) > 1 else ''}); reserved bits must be 0"
        )
    kwargs = {}
    for field in cls.FIELDS:
        raw = (value >> field.offset) & ((1 << field.width) - 1)
        try:
            kwargs[field.name] = field.from_raw(raw)
        except ValueError:
            raise InstructionError(
                f"{cls.MNEMONIC} {field.name} has no meaning for the value {raw}"
            ) from None
    return cls(**kwargs)
