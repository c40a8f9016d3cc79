"""LAYERNORM in the cycle model (docs/isa.md: `sum_i (2 C + 60 + b_i) + 3`): the Python
duration against a row-by-row count, the program facts (its spad_in range, its unit and cost),
the native external facts (facts.c) against the Python functions, and the whole native timing
chain (facts.c + timing.c) against the Python pass on random programs with LAYERNORM layers."""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import Halt, Instruction, LayerNorm, Load, LoadTarget
from systolic.isa.memories import Memory
from systolic.isa.softmax import softmax_row_chunks
from systolic.sim.timing import program_model
from systolic.sim.timing.dispatch_model import UnitTiming
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.store_timing import duration, row_beats, unit_timing

from ...support.random_programs import random_instruction, random_program, synthetic_program
from .test_native_facts import _small
from .test_native_pass import assert_same
from .test_native_timing_activation import native_timing, python_timing
from .test_native_timing_softmax import CONFIGS, _id
from .test_program_facts import assert_facts_are_the_instructions

CONFIG = ArrayConfig(rows=8, cols=8, bus_bytes=8)


def layernorm_stepped(instr: LayerNorm, config: ArrayConfig) -> int:
    """LAYERNORM by rows: each row's two passes over its C spad rows, 60 cycles, then its
    aligned write beats; 3 cycles after the last."""
    chunks = softmax_row_chunks(instr.length, config)
    row_bytes, bus = instr.length * config.operand_bytes, config.bus_bytes
    cycles = 0
    for i in range(instr.m):
        base = instr.row_pattern.address(i)
        cycles += 2 * chunks + 60 + (base + row_bytes - 1) // bus - base // bus + 1
    return cycles + 3


def _layernorm(**fields: object) -> LayerNorm:
    values: dict[str, object] = {"in_row": 0, "m": 3, "length": 13, "multiplier": 1 << 30,
                                 "shift": 10, "zero_point": 0, "lo": -128, "hi": 127,
                                 "ext": 5, "row_stride1": 16}
    values.update(fields)
    return LayerNorm(**values)  # type: ignore[arg-type]


def test_layernorm_is_a_sum_over_rows() -> None:
    # length 13 on dim 8: C = 2; rows at 5, 21, 37 of 13 bytes on an 8-byte bus: 3 beats each
    layernorm = _layernorm()
    assert row_beats(layernorm, CONFIG) == [3, 3, 3]
    assert duration(layernorm, CONFIG) == (2 * 2 + 60 + 3) * 3 + 3
    assert unit_timing(layernorm, CONFIG) == UnitTiming(busy=205, latency=204)
    values_only = dataclasses.replace(layernorm, flip_sign=True, multiplier=-5, shift=-31,
                                      in_zero_point=9, eps=2**32 - 1, zero_point=3)
    assert duration(values_only, CONFIG) == duration(layernorm, CONFIG)


@pytest.mark.parametrize("seed", range(4))
def test_layernorm_duration_equals_the_row_by_row_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(30):
        config = ArrayConfig(rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
                             bus_bytes=int(2 ** rng.integers(0, 7)))
        layernorm = _layernorm(m=int(rng.integers(1, 6)), length=int(rng.integers(1, 40)),
                               ext=int(rng.integers(0, 100)), n0=int(rng.integers(1, 3)),
                               row_stride0=int(rng.integers(-50, 50)),
                               row_stride1=int(rng.integers(0, 200)))
        assert duration(layernorm, config) == layernorm_stepped(layernorm, config)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("seed", range(4))
def test_facts_of_layernorm_programs(seed: int, native: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """ProgramFacts: LAYERNORM's spad_in range of m * ceil(length / dim) rows, the ST unit,
    its sum over rows (with and without the native facts)."""
    monkeypatch.setenv("SYSTOLIC_NATIVE", native)
    rng = np.random.default_rng(300 + seed)
    config = ArrayConfig(rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
                         dataflow=(Dataflow.WS, Dataflow.OS)[seed % 2],
                         bus_bytes=int(2 ** rng.integers(0, 7)))
    program = next(p for p in (list(random_program(config, rng, layers=4, activation=True,
                                                   layernorm=True).program.instructions)
                               for _ in range(20)) if any(isinstance(i, LayerNorm) for i in p))
    if seed == 0:
        program = [*(i for i in program if isinstance(i, LayerNorm)), _layernorm(), Halt()]
    assert any(isinstance(i, LayerNorm) for i in program)
    assert_facts_are_the_instructions(config, program)


@pytest.mark.parametrize("seed", range(4))
def test_native_facts_equal_the_python_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
                         weight_width=(8, 16)[seed % 2], bus_bytes=int(2 ** rng.integers(0, 7)))
    instructions: list[Instruction] = []
    while len(instructions) < 200:
        instr = _small(random_instruction(LayerNorm, rng), rng)
        if instr is not None:
            instructions.append(instr)
    facts = external_facts(encode_words(instructions), config)
    if facts is None:
        pytest.skip("no native facts")
    cost, first, last = facts
    for i, instr in enumerate(instructions):
        (ext,) = [a for a in instr.footprint(config) if a.memory is Memory.EXTERNAL]
        assert (cost[i], first[i], last[i]) == (duration(instr, config), ext.first,
                                                ext.last), instr


@pytest.fixture
def _native_timing() -> None:
    if external_facts(np.zeros((0, 8), np.uint64), CONFIGS[0]) is None:
        pytest.skip("no native engine")


@pytest.mark.usefixtures("_native_timing")
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_random_programs_time_the_same(config: ArrayConfig,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_model, "MAX_ROLLBACKS", 2000)
    seen = False
    for seed in range(20):
        rng = np.random.default_rng(seed)
        case = random_program(config, rng, layers=int(rng.integers(2, 6)), activation=True,
                              softmax=True, layernorm=True)
        instructions = list(case.program.instructions)
        seen |= any(isinstance(i, LayerNorm) for i in instructions)
        assert external_facts(case.program.words, config) is not None  # (facts.c took all)
        assert_same(native_timing(config, instructions, monkeypatch),
                    python_timing(config, instructions, monkeypatch))
    assert seen == (config.input_width == 8)


@pytest.mark.usefixtures("_native_timing")
@pytest.mark.parametrize("config", CONFIGS[:4], ids=_id)
def test_a_longer_program_times_the_same(config: ArrayConfig,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    program = synthetic_program(config, 1500, seed=23, scale=1, activation=True,
                                layernorm=True)
    instructions = list(program.instructions)
    assert any(isinstance(i, LayerNorm) for i in instructions)
    native = native_timing(config, instructions, monkeypatch)
    assert_same(native, python_timing(config, instructions, monkeypatch))


@pytest.mark.usefixtures("_native_timing")
@pytest.mark.parametrize("config", CONFIGS[:6], ids=_id)
def test_a_lone_layernorm_takes_its_sum_over_rows(config: ArrayConfig,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    dim = config.dim
    for length, m, ext, stride in ((1, 1, 0, 1), (dim, 3, 3, dim + 5),
                                   (2 * dim + 1, 2, 7, 3 * dim)):
        layernorm = _layernorm(m=m, length=length, ext=ext, row_stride1=stride)
        timing = native_timing(config, [layernorm, Halt()], monkeypatch)
        assert timing.complete[0] - timing.issue[0] == layernorm_stepped(layernorm, config)
        assert_same(timing, python_timing(config, [layernorm, Halt()], monkeypatch))


@pytest.mark.usefixtures("_native_timing")
def test_layernorm_waits_for_its_rows_and_a_later_load_waits_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = CONFIGS[0]
    dim = config.dim
    program = [Load.dense(LoadTarget.SPAD_IN, 0, 6, 1024, dim, dim),
               _layernorm(m=3, length=2 * dim, ext=2048),
               Load.dense(LoadTarget.SPAD_IN, 0, 6, 4096, dim, dim),
               _layernorm(m=3, length=2 * dim, ext=3072), Halt()]
    native = native_timing(config, program, monkeypatch)
    assert_same(native, python_timing(config, program, monkeypatch))
    assert native.issue[1] >= native.complete[0]  # (LAYERNORM after its rows are loaded)
    assert native.issue[2] >= native.complete[1]  # (the overwriting LOAD after LAYERNORM)
