# amaranth: UnusedElaboratable=no

"""LAYERNORM in the StoreUnit (the row-normalisation unit's LAYERNORM mode) against the golden
machine: memory bit-exact, each duration exactly the cycle model's (`store_timing.duration`)
and the contract's sum over rows of (2 C + 60 + b_i) + 3, also between SOFTMAX instructions
and under stalls."""

import random

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import Instruction, LayerNorm, Softmax
from systolic.isa.layernorm import LAYERNORM_DONE_CYCLES, LAYERNORM_PASSES, LAYERNORM_ROW_CYCLES
from systolic.isa.memories import Memory, depth
from systolic.isa.patterns import beats
from systolic.isa.softmax import softmax_row_chunks
from systolic.sim.timing.store_timing import duration

from .store_harness import MEMORY_BYTES, golden_memory, random_machine, run_unit
from .store_instructions import random_instruction

CONFIGS = {
    "4x4-bus4": ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=4, bus_bytes=4),
    "8x8-bus16": ArrayConfig(rows=8, cols=8, spad_kib=8, acc_kib=8, bus_bytes=16),
    "3x5-bus2": ArrayConfig(rows=3, cols=5, spad_kib=2, acc_kib=2, bus_bytes=2),
    "2x2-bus8": ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1, bus_bytes=8),
}


def contract_duration(instr: Instruction, config: ArrayConfig) -> int:
    """The contract's LAYERNORM duration (docs/isa.md, "LAYERNORM"); the cycle model's for
    every other instruction."""
    if not isinstance(instr, LayerNorm):
        return duration(instr, config)
    chunks = softmax_row_chunks(instr.length, config)
    return sum(LAYERNORM_PASSES * chunks + LAYERNORM_ROW_CYCLES + beats(s, config.bus_bytes)
               for s in instr.segments(config)) + LAYERNORM_DONE_CYCLES


def random_layernorm(config: ArrayConfig, rng: np.random.Generator, *, max_rows: int = 3,
                     max_length: int | None = None) -> LayerNorm:
    """Return a random valid LAYERNORM writing inside the test memory: outputs about 16..64
    times the normalized value (p * multiplier / 2^(31 + shift) ~ 2^-12 .. 2^-10 p), now and
    then an extreme shift, eps from 0 to 2^32 - 1."""
    spad = depth(config, Memory.SPAD_IN)
    for _ in range(1000):
        length = int(rng.integers(1, (max_length or 3 * config.dim + 1) + 1))
        m = int(rng.integers(1, max_rows + 1))
        rows = m * softmax_row_chunks(length, config)
        lo, hi = (-128, 127) if rng.random() < 0.6 else sorted(
            int(v) for v in rng.integers(-128, 128, 2))
        instr = LayerNorm(
            in_row=int(rng.integers(0, max(1, spad - rows + 1))), m=m, length=length,
            multiplier=int(rng.integers(2**30, 2**31)) * int(rng.choice([1, 1, 1, -1])),
            shift=int(rng.integers(6, 12)) if rng.random() < 0.9 else int(rng.integers(-31, 32)),
            zero_point=int(rng.integers(-128, 128)), lo=lo, hi=hi,
            in_zero_point=int(rng.integers(-128, 128)),
            eps=int(rng.integers(0, 2**32)) >> int(rng.integers(0, 33)),
            ext=int(rng.integers(0, MEMORY_BYTES)), n0=int(rng.integers(1, 4)),
            row_stride0=int(rng.integers(-2 * length - 3, 3 * length + 4)),
            row_stride1=int(rng.integers(-4 * length - 9, 6 * length + 10)),
            flip_sign=bool(rng.random() < 0.3))
        try:
            instr.check(config)
        except ValueError:
            continue
        written = instr.footprint(config)[-1]
        if written.first >= 0 and written.last < MEMORY_BYTES:
            return instr
    raise AssertionError("no valid LAYERNORM found")


def check(config: ArrayConfig, machine, instructions, **options) -> None:
    """Run `instructions` on the RTL and the golden machine: the same memory, and (without
    stalls) every duration the contract's."""
    expected = golden_memory(machine, instructions)
    assert np.any(expected != machine.memory), "the instructions wrote nothing new"
    run = run_unit(config, machine, instructions, **options)
    np.testing.assert_array_equal(run.memory, expected)
    if not options:
        got = [c - t for c, t in zip(run.completed, run.taken, strict=True)]
        assert got == [duration(i, config) for i in instructions]
        assert got == [contract_duration(i, config) for i in instructions]


@pytest.mark.parametrize("name", ["4x4-bus4", "8x8-bus16"])
def test_random_layernorm_rows(name: str) -> None:
    """Lengths below, at and above dim; random zero points, eps, clamps and row patterns."""
    config = CONFIGS[name]
    rng = np.random.default_rng([41, list(CONFIGS).index(name)])
    machine = random_machine(config, rng)
    check(config, machine, [random_layernorm(config, rng) for _ in range(4)])


def test_extreme_rows() -> None:
    """V = 0 (a constant row, eps 0: every output is clamp(zero_point)), a row of one element,
    rows of two values far apart (the largest z-scores), eps 2^32 - 1."""
    config = CONFIGS["4x4-bus4"]
    machine = random_machine(config, np.random.default_rng(2))
    machine.spad_in[0:3] = 17
    machine.spad_in[3:6] = [[-128, 127, -128, -128]] * 3
    machine.spad_in[6:9] = [[127, -128, 127, 127]] * 3
    base = {"multiplier": 2**30, "shift": 9, "zero_point": 3, "lo": -128, "hi": 127, "n0": 1}
    instructions = [
        LayerNorm(in_row=0, m=1, length=12, ext=0, **base),
        LayerNorm(in_row=0, m=2, length=1, ext=20, in_zero_point=-7, row_stride1=5, **base),
        LayerNorm(in_row=3, m=2, length=12, ext=40, in_zero_point=127, row_stride1=12, **base),
        LayerNorm(in_row=3, m=2, length=12, ext=80, eps=2**32 - 1, row_stride1=12, **base),
    ]
    check(config, machine, instructions)


@pytest.mark.parametrize("name", ["3x5-bus2", "2x2-bus8"])
def test_between_softmax_instructions(name: str) -> None:
    """TABLE wide, SOFTMAX, LAYERNORM, SOFTMAX, LAYERNORM back to back: each mode's results
    and durations survive the other's (the shared divider, lanes and walker)."""
    config = CONFIGS[name]
    rng = np.random.default_rng([43, list(CONFIGS).index(name)])
    machine = random_machine(config, rng)
    instructions: list[Instruction] = [random_instruction("TABLE.wide", config, rng)]
    for _ in range(2):
        instructions.append(random_instruction("SOFTMAX", config, rng, max_rows=2))
        instructions.append(random_layernorm(config, rng, max_rows=2))
    assert any(isinstance(i, Softmax) for i in instructions)
    check(config, machine, instructions)


def test_long_rows_of_one_beat_chunks() -> None:
    """dim 2 and 16-byte beats: every chunk is one beat, so the chunks must leave one per
    cycle (the FIFO credit loop, 10 cycles, needs `MIN_FIFO_DEPTH` entries) for a long row to
    keep its budget (2 C + 60 + b_i, b_i about C / 8), SOFTMAX's (3 C + 40 + b_i) too."""
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1, bus_bytes=16)
    machine = random_machine(config, np.random.default_rng(59))
    fields = {"in_row": 0, "m": 1, "length": 160, "multiplier": 2**30, "shift": 9,
              "zero_point": 0, "lo": -128, "hi": 127}
    check(config, machine, [LayerNorm(ext=0, **fields), Softmax(ext=200, **fields)])


def test_stalls_keep_results_exact() -> None:
    """Gaps between instructions and a write channel ready half the time change no byte."""
    config = CONFIGS["8x8-bus16"]
    rng = np.random.default_rng(47)
    machine = random_machine(config, rng)
    check(config, machine, [random_layernorm(config, rng, max_rows=2) for _ in range(3)],
          gap_rng=random.Random(3), write_ready=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(3))
def test_more_random_layernorm_rows(name: str, seed: int) -> None:
    """Longer rows (up to 24 dim) and more of them."""
    config = CONFIGS[name]
    rng = np.random.default_rng([53, seed, list(CONFIGS).index(name)])
    machine = random_machine(config, rng)
    check(config, machine, [random_layernorm(config, rng, max_rows=4, max_length=24 * config.dim)
                            for _ in range(4)])
