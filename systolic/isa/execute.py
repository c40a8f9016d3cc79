"""The execute unit's instructions: PRELOAD and COMPUTE (weight-stationary), COMPUTE.OS."""

import dataclasses
from typing import ClassVar

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import U16, U32, Instruction, Unit
from systolic.isa.memories import Access, Memory, depth

__all__ = ["Compute", "ComputeOS", "Preload"]


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
        if not config.dataflow.weight_stationary:
            self._need_dataflow(config, Dataflow.WS)
        if self.k > config.rows:
            self._need_at_most("k", self.k, config.rows, "the array's rows")
        if self.n > config.cols:
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
        if not config.dataflow.weight_stationary:
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
        if not config.dataflow.output_stationary:
            self._need_dataflow(config, Dataflow.OS)
        if self.m > config.rows:
            self._need_at_most("m", self.m, config.rows, "the array's rows")
        if self.n > config.cols:
            self._need_at_most("n", self.n, config.cols, "the array's cols")
        dim = config.dim
        if self.k <= dim:  # one chunk (the common case), with the same checks as below
            if self.a_stride != 0:
                self._fail(f"a_stride must be 0 when k <= dim ({dim}), not {self.a_stride}")
            spad = depth(config, Memory.SPAD_IN)
            if self.in_row + self.m > spad or self.wt_row + self.k > spad or (
                    self.acc_row + self.m > depth(config, Memory.ACC)):
                self._check_rows(config)
            return
        if self.chunks(config) == 1 and self.a_stride != 0:
            self._fail(f"a_stride must be 0 when k <= dim ({config.dim}), not {self.a_stride}")
        if self.chunks(config) > 1 and self.a_stride < self.m:
            self._fail(
                f"a_stride must be at least m ({self.m}) when k > dim ({config.dim}), "
                f"not {self.a_stride}"
            )
        self._check_rows(config)

    def _check_rows(self, config: ArrayConfig) -> None:
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
