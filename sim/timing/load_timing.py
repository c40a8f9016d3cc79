"""Cycle-exact timing of the LOAD unit (`systolic.hdl.load_unit.LoadUnit`).

A LOAD costs one cycle per aligned bus beat of its segments (`systolic.isa.patterns`), in
row order with no per-row or per-segment bubble. Taken by the unit in cycle s, it issues its
first read request in cycle s + `SETUP_CYCLES` and its last in s + 1 + beats; the last row is
written, and completion reported, in cycle s + beats + mem_latency + `SETUP_CYCLES`.

The unit takes its next instruction from cycle s + max(beats, 2) (`busy`): then the next
LOAD's first request follows this one's last request with no gap, so back-to-back LOADs keep
the read channel busy every cycle (a one-beat LOAD leaves one idle request cycle).
These numbers assume a read channel that takes a request every cycle (the model memory).
"""

import functools

from systolic.config import ArrayConfig
from systolic.isa.instructions import Load
from systolic.isa.patterns import total_beats
from systolic.sim.timing.dispatch_model import UnitTiming

__all__ = ["SETUP_CYCLES", "beats_timing", "load_beats", "load_duration", "load_timing"]

SETUP_CYCLES = 2
"""Cycles from taking a LOAD (idle unit) to its first read request."""


def load_beats(instr: Load, config: ArrayConfig) -> int:
    """Return the aligned bus beats of all segments of all rows of `instr`."""
    return total_beats(instr.segments(config), config.bus_bytes)


def load_duration(instr: Load, config: ArrayConfig, mem_latency: int) -> int:
    """Return the cycles from taking `instr` to the cycle its last row is written."""
    return load_beats(instr, config) + mem_latency + SETUP_CYCLES


def load_timing(instr: Load, config: ArrayConfig, mem_latency: int) -> UnitTiming:
    """Return the unit's timing of `instr` for the dispatch model: busy and latency."""
    return beats_timing(load_beats(instr, config), mem_latency)


@functools.cache
def beats_timing(beats: int, mem_latency: int) -> UnitTiming:
    """Return the unit's timing of a LOAD of `beats` beats: busy and latency (one shared
    value per argument pair)."""
    return UnitTiming(busy=max(beats, 2), latency=beats + mem_latency + SETUP_CYCLES)
