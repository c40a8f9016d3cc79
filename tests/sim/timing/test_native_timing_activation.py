"""The native cycle model against the Python one on programs with the activation unit and ADD's
modes (issue 13): TABLE, STORE and COPY with `lut`, ADD with `mul` and `b_broadcast`.

The whole chain is compared: the facts from the native external facts (facts.c) timed by the
C loop (timing.c), against the facts from the Python `Describer` (`store_timing.duration`)
timed by the Python pass: every accept, issue and complete cycle, the total and the counters.
"""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SystolicError
from systolic.isa.instructions import Add, Copy, Halt, Instruction, Store, Table
from systolic.isa.program import Program
from systolic.mapper.lowering import compile_model
from systolic.sim.native.build import unavailable_reason
from systolic.sim.timing import program_facts, program_model
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.native_pass import timing_library
from systolic.sim.timing.program_model import ProgramModel
from systolic.sim.timing.program_timing import ProgramTiming
from systolic.sim.timing.store_timing import LUT_CYCLES, MUL_CYCLES

from ...support.random_programs import random_program, synthetic_program
from ..golden.test_native_machine_activation import activation_graph
from .test_native_pass import assert_same

WS, OS = Dataflow.WS, Dataflow.OS

CONFIGS = [
    ArrayConfig(rows=4, cols=4, dataflow=WS, bus_bytes=8, mem_latency=3),
    ArrayConfig(rows=8, cols=8, dataflow=OS, bus_bytes=16, mem_latency=10),
    ArrayConfig(rows=16, cols=16, dataflow=WS, bus_bytes=64, mem_latency=20),
    ArrayConfig(rows=3, cols=5, dataflow=OS, bus_bytes=1, mem_latency=0),
    ArrayConfig(rows=4, cols=4, dataflow=WS, input_width=16, weight_width=16, bus_bytes=4),
]


def _id(config: ArrayConfig) -> str:
    return f"{config.shape_text}{config.dataflow.value}-in{config.input_width}"


@pytest.fixture(autouse=True)
def _library() -> None:
    if timing_library() is None or external_facts(np.zeros((0, 8), np.uint64),
                                                  CONFIGS[0]) is None:
        pytest.skip(f"no native engine: {unavailable_reason('timing')}")


def native_timing(config: ArrayConfig, instructions: list[Instruction],
                  monkeypatch: pytest.MonkeyPatch) -> ProgramTiming:
    """The timing from the native facts and the C loop (the Python pass must not run)."""

    def no_python_pass(*_: object) -> ProgramTiming:
        raise AssertionError("the Python pass ran")

    with monkeypatch.context() as patch:
        patch.setattr(ProgramModel, "python_pass", no_python_pass)
        return ProgramModel(config).run(instructions)


def python_timing(config: ArrayConfig, instructions: list[Instruction],
                  monkeypatch: pytest.MonkeyPatch) -> ProgramTiming:
    """The timing from the Python `Describer` and the Python pass only."""
    with monkeypatch.context() as patch:
        patch.setattr(program_facts, "external_facts", lambda *_: None)
        return ProgramModel(config, native=False).run(instructions)


def kinds(instructions: list[Instruction]) -> set[str]:
    """The issue-13 instructions and flags among `instructions`."""
    found = set()
    for instr in instructions:
        if isinstance(instr, Table):
            found.add("TABLE")
        elif isinstance(instr, Store | Copy) and instr.lut:
            found.add(f"{instr.MNEMONIC} lut")
        elif isinstance(instr, Add):
            found.update(name for name in ("mul", "b_broadcast") if getattr(instr, name))
    return found


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_random_programs_time_the_same(config: ArrayConfig,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_model, "MAX_ROLLBACKS", 2000)
    seen: set[str] = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        case = random_program(config, rng, layers=int(rng.integers(2, 6)), activation=True)
        instructions = list(case.program.instructions)
        seen |= kinds(instructions)
        assert_same(native_timing(config, instructions, monkeypatch),
                    python_timing(config, instructions, monkeypatch))
    expected = {"STORE lut", "b_broadcast"}
    if config.input_width == 8:
        expected |= {"TABLE", "COPY lut", "mul"}
    assert expected <= seen


@pytest.mark.parametrize("config", CONFIGS[:3], ids=_id)
def test_a_longer_program_times_the_same(config: ArrayConfig,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    program = synthetic_program(config, 2000, seed=11, scale=1, activation=True)
    instructions = list(program.instructions)
    assert {"TABLE", "STORE lut", "COPY lut", "mul", "b_broadcast"} <= kinds(instructions)
    native = native_timing(config, instructions, monkeypatch)
    assert_same(native, python_timing(config, instructions, monkeypatch))
    assert native.total_cycles > len(instructions)


def test_the_flags_change_the_durations_by_their_stages(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One instruction each, alone: the total grows by the stages the flag adds (LUT_CYCLES for
    # `lut`, MUL_CYCLES for `mul`).
    config = CONFIGS[0]
    plain = [Store(0, 2, 4, 0, 0, -128, 127, 0), Copy(0, 2, 4, 0),
             Add(0, 2, 2, 4, 2**30, 0, 0, 0, 0, 0, -128, 127, 0)]
    flagged = [Store(0, 2, 4, 0, 0, -128, 127, 0, lut=True), Copy(0, 2, 4, 0, lut=True),
               Add(0, 2, 2, 4, 2**30, 0, 0, 0, 0, 0, -128, 127, 0, mul=True)]
    stages = [LUT_CYCLES, LUT_CYCLES, MUL_CYCLES]
    for without, with_flag, added in zip(plain, flagged, stages, strict=True):
        before = native_timing(config, [without, Halt()], monkeypatch)
        after = native_timing(config, [with_flag, Halt()], monkeypatch)
        assert after.complete[0] == before.complete[0] + added, with_flag
        assert_same(after, python_timing(config, [with_flag, Halt()], monkeypatch))
    for config in CONFIGS[:3]:  # TABLE: ceil(256 / dim) + 2 cycles from its issue
        table = native_timing(config, [Table(0), Halt()], monkeypatch)
        assert table.complete[0] - table.issue[0] == -(-256 // config.dim) + 2
        assert_same(table, python_timing(config, [Table(0), Halt()], monkeypatch))


@pytest.mark.parametrize("config", CONFIGS[:3], ids=_id)
def test_a_compiled_model_with_tables_and_a_multiply_times_the_same(
        config: ArrayConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    instructions = list(compile_model(activation_graph(), config).program.instructions)
    assert {"TABLE", "STORE lut", "COPY lut", "mul", "b_broadcast"} <= kinds(instructions)
    assert_same(native_timing(config, instructions, monkeypatch),
                python_timing(config, instructions, monkeypatch))


def test_16_bit_activations_refuse_a_table_program() -> None:
    config = CONFIGS[-1]
    with pytest.raises(SystolicError, match=r"^TABLE needs 8-bit activations \(input_width "
                                            r"8\), not 16$"):
        Program(config, (Table(0), Halt()))
