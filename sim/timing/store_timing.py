"""Exact durations of the STORE unit's instructions (`systolic.hdl.store_unit.StoreUnit`).

The unit takes one instruction at a time. For an instruction taken in cycle s (its transfer
on `i_instr`), with an always-ready write channel and its completion taken at once:

- it reports completion (`o_complete` transfers) in cycle s + `duration(instr, config)`;
- it takes its next instruction in cycle s + duration + 1 at the earliest
  (`unit_timing(...).busy`): instructions do not overlap inside the unit.

The duration is a max-plus closed form of the fields. Output row i costs the reader `c_i`
cycles (STORE, COPY: 1; ADD: 2; POOL: the window's element count, padding excluded) and the
writer `b_i` aligned beats (docs/isa.md, "Beats"). The reader starts in cycle s + 1 and never
waits, so row j leaves the reader at `C_j = c_0 + ... + c_j`; a datapath of fixed latency then
hands it to the writer, which writes one beat per cycle, rows back to back::

    duration = max over j of (C_j + b_j + b_{j+1} + ... + b_{last}) + K

with K = 3 + the datapath latency (`fixed_cycles`): COPY 3, STORE 9 (OutputStage's six
stages), POOL and ADD 10 (VectorUnit's seven); the activation table's lookup adds one stage
(STORE with `lut` 10, COPY with `lut` 4) and ADD's multiply mode two more (ADD with `mul` 12). For STORE and
COPY (c_i = 1 <= b_i) the maximum is at j = 0: 1 + sum(b) + K.

STORE with `raw` is a STORE whose rows are `4 * n` bytes (its b_i), with the same K = 9.

TABLE reads its R = ceil(256 / dim) rows (ceil(512 / dim) with `wide`) one per cycle from
s + 1 and writes nothing: the last row's data enters the table in cycle s + R + 1 and it
completes in s + R + 2, so its duration is R + 2.

SOFTMAX is not of the max-plus form: its rows go one after the other, each read three times
(max, sum, outputs: 3 C cycles for its C = ceil(length / dim) spad_in rows), a fixed 40 cycles
for the reciprocal and the pipeline, then its b_i write beats; 3 more cycles complete it:

    duration = sum over i of (3 C + 40 + b_i) + 3

LAYERNORM is SOFTMAX's sibling: its rows one after the other, each read twice (the sums S1 and
S2, then the outputs: 2 C cycles), a fixed 60 cycles for V, the division, the square root and
the pipeline, then its b_i write beats; 3 more cycles complete it:

    duration = sum over i of (2 C + 60 + b_i) + 3
"""

import functools
from itertools import accumulate

from systolic.config import ArrayConfig
from systolic.isa.instructions import Add, Copy, Instruction, LayerNorm, Pool, Softmax, Store, Table
from systolic.isa.layernorm import LAYERNORM_DONE_CYCLES, LAYERNORM_PASSES, LAYERNORM_ROW_CYCLES
from systolic.isa.patterns import beats
from systolic.isa.softmax import (
    SOFTMAX_DONE_CYCLES,
    SOFTMAX_PASSES,
    SOFTMAX_ROW_CYCLES,
    softmax_row_chunks,
)
from systolic.sim.timing.dispatch_model import UnitTiming

__all__ = [
    "FIXED_CYCLES", "LUT_CYCLES", "MUL_CYCLES", "SOFTMAX_DONE_CYCLES", "SOFTMAX_PASSES",
    "SOFTMAX_ROW_CYCLES", "TABLE_CYCLES", "duration", "duration_timing", "fixed_cycles",
    "reader_cycles", "row_beats", "unit_timing",
]

FIXED_CYCLES: dict[type[Instruction], int] = {Copy: 3, Store: 9, Pool: 10, Add: 10}
"""K of the duration formula, per instruction class, without the `lut` and `mul` flags."""
LUT_CYCLES = 1
"""The activation table's stage: added to K of a STORE or COPY with `lut`."""
MUL_CYCLES = 2
"""The second multiplication's extra stages (its partial products, their sum): added to K of
an ADD with `mul`."""
TABLE_CYCLES = 2
"""A TABLE's duration beyond its R row reads: R + 2."""


def _check(instr: Instruction, *also: type[Instruction]) -> None:
    if type(instr) not in FIXED_CYCLES and type(instr) not in also:
        raise TypeError(f"the STORE unit does not execute {instr.MNEMONIC}")


def fixed_cycles(instr: Instruction) -> int:
    """Return K of the duration formula for `instr` (a STORE, POOL, ADD or COPY)."""
    _check(instr)
    extra = 0
    if isinstance(instr, Store | Copy) and instr.lut:
        extra = LUT_CYCLES
    elif isinstance(instr, Add) and instr.mul:
        extra = MUL_CYCLES
    return FIXED_CYCLES[type(instr)] + extra


def _window_span(start: int, kernel: int, size: int) -> int:
    return min(start + kernel, size) - max(start, 0)


def reader_cycles(instr: Instruction) -> list[int]:
    """Return, per output row, the cycles the reader spends on it (c_i)."""
    _check(instr)
    if isinstance(instr, Pool):
        rows = [_window_span(oy * instr.sh - instr.pad_top, instr.kh, instr.h)
                for oy in range(instr.oh)]
        cols = [_window_span(ox * instr.sw - instr.pad_left, instr.kw, instr.w)
                for ox in range(instr.ow)]
        return [r * c for r in rows for c in cols]
    count: int = instr.m  # type: ignore[attr-defined]
    return [2 if isinstance(instr, Add) else 1] * count


def row_beats(instr: Instruction, config: ArrayConfig) -> list[int]:
    """Return, per output row, the aligned write beats it takes (b_i)."""
    _check(instr, Softmax, LayerNorm)
    return [beats(segment, config.bus_bytes) for segment in instr.segments(config)]


def duration(instr: Instruction, config: ArrayConfig) -> int:
    """Return the cycles from taking `instr` to its completion transfer (see the module doc)."""
    if isinstance(instr, Table):
        return instr.rows(config) + TABLE_CYCLES
    if isinstance(instr, Softmax):
        row_cycles = SOFTMAX_PASSES * softmax_row_chunks(instr.length, config) + SOFTMAX_ROW_CYCLES
        return sum(row_cycles + b for b in row_beats(instr, config)) + SOFTMAX_DONE_CYCLES
    if isinstance(instr, LayerNorm):
        row_cycles = (LAYERNORM_PASSES * softmax_row_chunks(instr.length, config)
                      + LAYERNORM_ROW_CYCLES)
        return sum(row_cycles + b for b in row_beats(instr, config)) + LAYERNORM_DONE_CYCLES
    reads = list(accumulate(reader_cycles(instr)))
    writes = row_beats(instr, config)
    remaining = list(accumulate(reversed(writes)))[::-1]  # b_j + ... + b_last
    return max(c + b for c, b in zip(reads, remaining, strict=True)) + fixed_cycles(instr)


def unit_timing(instr: Instruction, config: ArrayConfig) -> UnitTiming:
    """Return the unit's timing for the dispatcher model: busy = duration + 1, latency = duration."""
    return duration_timing(duration(instr, config))


@functools.cache
def duration_timing(cycles: int) -> UnitTiming:
    """Return the unit's timing of an instruction of `cycles` cycles (`duration`; one shared
    value per duration)."""
    return UnitTiming(busy=cycles + 1, latency=cycles)
