# amaranth: UnusedElaboratable=no

"""StoreUnit against the golden machine: memory bit-exact, durations exactly store_timing's."""

import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal

from systolic.config import ArrayConfig
from systolic.hdl.store_unit import StoreUnit
from systolic.isa.instructions import Copy, Softmax, Store, Table
from systolic.isa.table import exp_table_rows
from systolic.sim.timing.store_timing import duration

from .store_harness import golden_memory, random_machine, run_unit
from .store_instructions import random_instruction

CONFIGS = {
    "4x4-bus4": ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=4, bus_bytes=4),
    "8x8-bus16": ArrayConfig(rows=8, cols=8, spad_kib=8, acc_kib=8, bus_bytes=16),
    "2x3-bus1": ArrayConfig(rows=2, cols=3, spad_kib=1, acc_kib=1, bus_bytes=1),
    "3x5-16bit-bus8": ArrayConfig(rows=3, cols=5, input_width=12, weight_width=12,
                                  spad_kib=2, acc_kib=2, bus_bytes=8),
    "4x2-acc20-bus2": ArrayConfig(rows=4, cols=2, input_width=6, weight_width=8, acc_width=20,
                                  spad_kib=2, acc_kib=1, bus_bytes=2),
    "3x5-bus2": ArrayConfig(rows=3, cols=5, spad_kib=2, acc_kib=2, bus_bytes=2),
}


def check(config: ArrayConfig, instructions, *, seed: int, timed: bool = True,
          **options) -> None:
    """Run `instructions` on the RTL and the golden machine; compare memory and durations."""
    rng = np.random.default_rng(seed)
    machine = random_machine(config, rng)
    run = run_unit(config, machine, instructions, **options)
    expected = golden_memory(machine, instructions)
    assert np.any(expected != machine.memory), "the instructions wrote nothing new"
    np.testing.assert_array_equal(run.memory, expected)
    aligned = sum(
        len(range(s.address // config.bus_bytes, (s.address + s.length - 1) // config.bus_bytes
                  + 1)) for i in instructions for s in i.segments(config))
    # SOFTMAX writes a row chunk by chunk: a beat shared by two chunks is sent twice.
    assert run.beats >= aligned if any(isinstance(i, Softmax) for i in instructions) \
        else run.beats == aligned
    if timed:
        got = [c - t for c, t in zip(run.completed, run.taken, strict=True)]
        assert got == [duration(i, config) for i in instructions]


@pytest.mark.parametrize("kind", ["STORE", "COPY", "ADD", "POOL"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_random_instructions(name: str, kind: str) -> None:
    config = CONFIGS[name]
    rng = np.random.default_rng([7, list(CONFIGS).index(name), len(kind)])
    instructions = [random_instruction(kind, config, rng) for _ in range(6)]
    check(config, instructions, seed=list(CONFIGS).index(name))


@pytest.mark.parametrize("name", ["4x4-bus4", "3x5-16bit-bus8"])
def test_mixed_stream_back_to_back(name: str) -> None:
    """Mixed instructions offered every cycle: each is taken the cycle after the previous one
    completed, results in program order."""
    config = CONFIGS[name]
    rng = np.random.default_rng(11)
    kinds = ["STORE", "COPY", "ADD", "POOL"] * 4
    instructions = [random_instruction(k, config, rng) for k in rng.permutation(kinds)]
    rng_machine = np.random.default_rng(3)
    machine = random_machine(config, rng_machine)
    run = run_unit(config, machine, instructions)
    np.testing.assert_array_equal(run.memory, golden_memory(machine, instructions))
    assert run.taken[0] == 0
    assert [t - c for t, c in zip(run.taken[1:], run.completed, strict=False)] == [1] * 15
    assert [c - t for c, t in zip(run.completed, run.taken, strict=True)] == [
        duration(i, config) for i in instructions]


@pytest.mark.parametrize("kind", ["STORE", "COPY", "ADD", "POOL"])
def test_stalls_keep_results_exact(kind: str) -> None:
    """Gaps between instructions and a write channel ready half the time change no byte."""
    config = CONFIGS["4x4-bus4"]
    rng = np.random.default_rng(5)
    instructions = [random_instruction(kind, config, rng) for _ in range(4)]
    check(config, instructions, seed=9, timed=False, gap_rng=random.Random(1), write_ready=0.5)


@pytest.mark.slow  # long rows on the Amaranth simulator: ~25 s under load
def test_long_instructions() -> None:
    """A few hundred rows: the FIFO credit loop keeps the writer busy every cycle."""
    config = CONFIGS["8x8-bus16"]
    rng = np.random.default_rng(2)
    instructions = [random_instruction(k, config, rng, max_rows=300)
                    for k in ("STORE", "COPY", "ADD")]
    instructions.append(Store(acc_row=0, m=256, n=8, param_row=3, zero_point=-5, lo=-128,
                              hi=127, ext=5, n0=16, row_stride0=8, row_stride1=128))
    instructions.append(Copy(in_row=1, m=200, lanes=8, ext=7, n0=1, row_stride1=9,
                             flip_sign=True))
    check(config, instructions, seed=4)


EIGHT_BIT = ("4x4-bus4", "8x8-bus16", "2x3-bus1")
NEW_KINDS = ["STORE.lut", "COPY.lut", "ADD.mul", "ADD.b_broadcast", "ADD.mul.b_broadcast"]


@pytest.mark.parametrize("name", EIGHT_BIT)
def test_table_then_lut_mul_and_broadcast(name: str) -> None:
    """TABLE loads the table from spad_in (ceil(256 / dim) rows, R + 2 cycles); STORE and
    COPY with `lut` map through it, ADD with `mul` and `b_broadcast` follow the golden model;
    every duration is store_timing's."""
    config = CONFIGS[name]
    rng = np.random.default_rng([13, EIGHT_BIT.index(name)])
    instructions = [random_instruction("TABLE", config, rng)]
    instructions += [random_instruction(k, config, rng, max_rows=5)
                     for k in rng.permutation(NEW_KINDS + ["STORE", "COPY"])]
    instructions.insert(4, random_instruction("TABLE", config, rng))
    instructions.append(random_instruction("COPY.lut", config, rng, max_rows=5))
    check(config, instructions, seed=EIGHT_BIT.index(name))


@pytest.mark.parametrize("name", ["3x5-16bit-bus8", "4x2-acc20-bus2"])
def test_wide_and_narrow_operands(name: str) -> None:
    """Without 8-bit activations (no TABLE: the table stays 0) STORE lut still takes one more
    cycle and writes 0 in `operand_bytes` bytes; b_broadcast works at any input width."""
    config = CONFIGS[name]
    rng = np.random.default_rng(17)
    kinds = ["STORE.lut", "ADD.b_broadcast", "STORE", "ADD.b_broadcast", "STORE.lut"]
    check(config, [random_instruction(k, config, rng, max_rows=5) for k in kinds], seed=6)


def test_table_reset_is_zero_and_lut_stalls_stay_exact() -> None:
    """Before any TABLE every entry is 0; gaps and a write channel ready half the time
    change no byte of lut, mul or b_broadcast results."""
    config = CONFIGS["4x4-bus4"]
    rng = np.random.default_rng(21)
    instructions = [random_instruction("STORE.lut", config, rng),
                    random_instruction("COPY.lut", config, rng),
                    random_instruction("TABLE", config, rng)]
    instructions += [random_instruction(k, config, rng, max_rows=6) for k in NEW_KINDS]
    check(config, instructions, seed=2, timed=False, gap_rng=random.Random(2), write_ready=0.5)


SOFTMAX_CONFIGS = ("4x4-bus4", "8x8-bus16", "3x5-bus2")  # 3x5: dim 5, 512 % 5 != 0


@pytest.mark.parametrize("name", SOFTMAX_CONFIGS)
def test_softmax_wide_table_and_raw(name: str) -> None:
    """TABLE wide loads the exp table (ceil(512 / dim) rows); SOFTMAX rows of lengths below,
    at and above dim follow the golden model, with the narrow table and STORE raw between
    them; every duration is store_timing's (3 C + 40 + b_i per row, + 3)."""
    config = CONFIGS[name]
    rng = np.random.default_rng([23, SOFTMAX_CONFIGS.index(name)])
    kinds = ["TABLE.wide", "SOFTMAX", "STORE.raw", "SOFTMAX", "TABLE", "STORE.lut", "SOFTMAX",
             "STORE.raw"]
    check(config, [random_instruction(k, config, rng, max_rows=3) for k in kinds],
          seed=SOFTMAX_CONFIGS.index(name))


def _exp_rows(config: ArrayConfig, scale: float) -> np.ndarray:
    """Return spad_in rows holding the mapper's exp table E[k] = rhe(2^15 exp(-scale k))."""
    entries = np.round(2**15 * np.exp(-scale * np.arange(256))).astype(np.int64)
    data = np.zeros(exp_table_rows(config) * config.dim, np.int64)
    data[0:512:2], data[1:512:2] = entries & 0xFF, entries >> 8
    return ((data + 128) % 256 - 128).reshape(-1, config.dim)


@pytest.mark.parametrize("scale", [0.0, 0.05])
def test_softmax_real_and_zero_tables_with_stalls(scale: float) -> None:
    """The mapper's exp table, and a zero table (S = 0: r is capped, every p is 0); the exact
    memory also under gaps and a write channel ready half the time."""
    config = CONFIGS["4x4-bus4"]
    machine = random_machine(config, np.random.default_rng(8))
    rows = _exp_rows(config, scale) if scale else np.zeros((exp_table_rows(config), 4))
    machine.spad_in[:len(rows)] = rows
    rng = np.random.default_rng(31)
    instructions = [Table(row=0, wide=True)]
    instructions += [random_instruction("SOFTMAX", config, rng, max_rows=3) for _ in range(3)]
    expected = golden_memory(machine, instructions)
    run = run_unit(config, machine, instructions)
    np.testing.assert_array_equal(run.memory, expected)
    assert [c - t for c, t in zip(run.completed, run.taken, strict=True)] == [
        duration(i, config) for i in instructions]
    stalled = run_unit(config, machine, instructions, gap_rng=random.Random(4), write_ready=0.5)
    np.testing.assert_array_equal(stalled.memory, expected)


def test_raw_with_wide_operands() -> None:
    """STORE raw writes 4-byte lanes whatever operand_bytes is (2 here)."""
    config = CONFIGS["3x5-16bit-bus8"]
    rng = np.random.default_rng(19)
    check(config, [random_instruction(k, config, rng, max_rows=4)
                   for k in ("STORE.raw", "STORE", "STORE.raw")], seed=3)


def test_fifo_depth_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^fifo_depth must be an integer of at least 12, not 8$"):
        StoreUnit(CONFIGS["4x4-bus4"], fifo_depth=8)


@pytest.mark.slow  # the unit's Verilog is also emitted by tests/systolic/verilog/test_lint.py
def test_verilog() -> None:
    dut = StoreUnit(CONFIGS["4x4-bus4"])
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = verilog.convert(dut, name="store_unit", ports=ports)
    assert "module store_unit" in text
