"""The accelerator's memories, their sizes for a configuration, and footprint ranges.

See docs/isa.md, "Memories". On-chip memories are addressed by row, external memory by byte.
"""

import dataclasses
import enum

from systolic.config import ArrayConfig

__all__ = [
    "PARAMS_DEPTH",
    "PARAMS_LANE_BYTES",
    "Access",
    "Memory",
    "depth",
    "params_row_bytes",
]

PARAMS_DEPTH = 512
"""Rows in the params memory, whatever the configuration."""

PARAMS_LANE_BYTES = 9
"""External bytes per params lane: bias int32, multiplier int32, shift int8."""


class Memory(enum.Enum):
    """A memory an instruction reads or writes."""

    SPAD_IN = "spad_in"
    SPAD_WT = "spad_wt"
    ACC = "acc"
    PARAMS = "params"
    EXTERNAL = "external"


def depth(config: ArrayConfig, memory: Memory) -> int:
    """Return the rows of an on-chip memory (bytes for external memory: 2**32)."""
    entry = _DEPTHS.get(id(config))
    if entry is None or entry[0] is not config:  # (the entry keeps its config alive)
        if len(_DEPTHS) > 256:
            _DEPTHS.clear()
        spad = config.spad_kib * 512 // config.spad_row_bytes  # half of spad_kib each
        entry = _DEPTHS[id(config)] = (config, spad, config.acc_depth)
    if memory is _SPAD_IN or memory is _SPAD_WT:
        return entry[1]
    if memory is _ACC:
        return entry[2]
    if memory is _PARAMS:
        return PARAMS_DEPTH
    return 2**32


_DEPTHS: dict[int, tuple[ArrayConfig, int, int]] = {}


_SPAD_IN, _SPAD_WT, _ACC, _PARAMS = Memory.SPAD_IN, Memory.SPAD_WT, Memory.ACC, Memory.PARAMS


def params_row_bytes(config: ArrayConfig) -> int:
    """Return the external bytes of one params row: 9 bytes for each of `cols` lanes."""
    return PARAMS_LANE_BYTES * config.cols


@dataclasses.dataclass(frozen=True)
class Access:
    """One footprint range: rows (bytes for external) `first` to `last` inclusive of `memory`."""

    memory: Memory
    first: int
    last: int
    write: bool

    def conflicts(self, other: "Access") -> bool:
        """Return whether the two ranges overlap in one memory and at least one writes."""
        return (
            self.memory is other.memory
            and (self.write or other.write)
            and self.first <= other.last
            and other.first <= self.last
        )

    def __str__(self) -> str:
        mode = "write" if self.write else "read"
        return f"{mode} {self.memory.value}[{self.first}..{self.last}]"
