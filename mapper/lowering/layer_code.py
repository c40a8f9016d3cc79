"""What lowering one layer produces (`LayerCode`) and how it asks for constant memory.

`lower_qconv` and `lower_qmatmul` return a `LayerCode`: the layer's instructions in program
order (no HALT), the external memory segments of its constants (re-laid-out weights and params
rows, at addresses the caller's allocator handed out) and `LayerStats` for the reports.
"""

import dataclasses
from typing import Protocol

from systolic.isa.instructions import Instruction
from systolic.isa.program import MemorySegment

__all__ = ["BumpAllocator", "ConstantAllocator", "LayerCode", "LayerStats"]


class ConstantAllocator(Protocol):
    """Hands out external memory for a layer's constants.

    `allocate(size, align, name)` returns the address of `size` fresh bytes aligned to `align`
    that nothing else uses; the lowering fills them through `LayerCode.segments`.
    """

    def allocate(self, size: int, align: int, name: str) -> int:
        """Return the address of `size` unused bytes, a multiple of `align`."""
        ...


@dataclasses.dataclass
class BumpAllocator:
    """The simplest `ConstantAllocator`: consecutive aligned blocks from `next_address` up."""

    next_address: int

    def allocate(self, size: int, align: int, name: str) -> int:
        """Return the next `align`-aligned address and reserve `size` bytes there."""
        address = -(-self.next_address // align) * align
        self.next_address = address + size
        return address


@dataclasses.dataclass(frozen=True)
class LayerStats:
    """Work and expected efficiency of a lowered layer.

    `macs` counts the layer's useful multiply-accumulates (the ONNX definition, no padding or
    block-diagonal zeros); `ideal_cycles = macs / (rows * cols)`; `busy_cycles` is the array
    time of the instructions (`estimate.array_cycles`: sum of COMPUTE m and COMPUTE.OS k);
    `occupied_cycles` adds the minimum tile period (a weight-stationary tile occupies at
    least `rows` cycles, an output-stationary one at least `rows`); `utilization` is
    `ideal_cycles / occupied_cycles`.
    """

    macs: int
    ideal_cycles: float
    busy_cycles: int
    occupied_cycles: int

    @property
    def utilization(self) -> float:
        """The fraction of the array's multiply-accumulate slots doing useful work."""
        return self.ideal_cycles / self.occupied_cycles if self.occupied_cycles else 0.0

    @property
    def ratio(self) -> float:
        """occupied array cycles / ideal cycles (1.0 is perfect; issue 5's figure of merit)."""
        return self.occupied_cycles / self.ideal_cycles if self.ideal_cycles else 0.0


@dataclasses.dataclass(frozen=True)
class LayerCode:
    """One lowered layer: instructions (program order, no HALT), constant segments, stats."""

    instructions: tuple[Instruction, ...]
    segments: tuple[MemorySegment, ...]
    stats: LayerStats
