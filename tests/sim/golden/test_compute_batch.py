"""`Machine.run` (deferred, batched EXECUTE) against `Machine.execute` one instruction at a time.

The per-instruction path is the reference (docs/isa.md). Every test compares the whole state
after the run: external memory, both scratchpads, the accumulator, params, active weights,
and for failing programs the error message and the state when it was raised.
"""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError, SimulationError
from systolic.isa.instructions import (
    Compute,
    ComputeOS,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
)
from systolic.isa.program import Program
from systolic.sim.golden.compute_batch import exact_product
from systolic.sim.golden.machine import Machine
from systolic.sim.timing.synthetic_programs import random_program

WS = ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=2)
OS = dataclasses.replace(WS, rows=3, cols=4, dataflow=Dataflow.OS)


def _state(machine: Machine) -> list[np.ndarray]:
    return [machine.memory, machine.spad_in, machine.spad_wt, machine.acc, machine.bias,
            machine.multiplier, machine.shift, machine.weights]


def _machines(config: ArrayConfig, memory: bytes | np.ndarray) -> tuple[Machine, Machine]:
    pair = (Machine(config, len(memory)), Machine(config, len(memory)))
    for machine in pair:
        machine.memory[:] = np.frombuffer(bytes(memory), dtype=np.uint8)
    return pair


def assert_run_equals_steps(config: ArrayConfig, instructions: list[Instruction],
                            memory: bytes | np.ndarray) -> str | None:
    """Run `instructions` both ways; assert equal errors and state; return the error."""
    batched, stepped = _machines(config, memory)
    errors = []
    try:
        batched.run(instructions)
        errors.append(None)
    except SimulationError as error:
        errors.append(str(error))
    try:
        for instr in instructions:
            stepped.execute(instr)
            if stepped.halted:
                break
        else:
            raise SimulationError("the program ended without HALT")
        errors.append(None)
    except SimulationError as error:
        errors.append(str(error))
    assert errors[0] == errors[1]
    assert batched.halted == stepped.halted
    for mine, theirs in zip(_state(batched), _state(stepped), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    return errors[0]


def _random_config(rng: np.random.Generator, dataflow: Dataflow) -> ArrayConfig:
    return ArrayConfig(
        rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)), dataflow=dataflow,
        input_width=int(rng.choice([4, 8, 8, 12])), weight_width=int(rng.choice([8, 8, 6])),
        acc_width=int(rng.choice([24, 32, 64])), spad_kib=int(rng.integers(1, 3)),
        acc_kib=int(rng.integers(1, 3)), bus_bytes=int(2 ** rng.integers(0, 7)))


@pytest.mark.parametrize("seed", range(120))
def test_random_programs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dataflow = (Dataflow.WS, Dataflow.OS)[seed % 2]
    try:
        config = _random_config(rng, dataflow)
    except ConfigError:  # (a width pair the configuration refuses: take the defaults)
        config = ArrayConfig(rows=3, cols=5, dataflow=dataflow, spad_kib=2, acc_kib=1)
    case = random_program(config, rng, layers=int(rng.integers(1, 5)))
    assert assert_run_equals_steps(config, list(case.program.instructions), case.memory) is None


def _ws_image(rng: np.random.Generator, size: int = 4096) -> np.ndarray:
    return rng.integers(0, 256, size, dtype=np.uint8)


def test_accumulate_chains_overwrites_and_overlapping_rows() -> None:
    rng = np.random.default_rng(1)
    program = [Load(LoadTarget.SPAD_IN, 0, 40, 0, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Load(LoadTarget.SPAD_WT, 0, 16, 200, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Preload(0, 4, 4), Compute(0, 8, 0, False), Compute(8, 8, 0, True),
               Preload(4, 4, 3), Compute(16, 8, 0, True), Compute(0, 8, 8, True),
               Compute(24, 8, 0, False),  # overwrites a chain in the middle
               Compute(2, 5, 3, True),  # overlaps both ranges: applied in order
               Preload(8, 4, 4),  # a PRELOAD without COMPUTE
               Load(LoadTarget.SPAD_IN, 0, 8, 600, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Compute(0, 8, 16, False),  # reads the rows the LOAD just wrote
               Halt()]
    assert_run_equals_steps(WS, program, _ws_image(rng))


def test_store_rows_that_overlap_and_a_load_of_what_a_store_wrote() -> None:
    rng = np.random.default_rng(2)
    image = _ws_image(rng)
    params = Load.params(0, 1, 3000, 0)
    program = [params,
               Load(LoadTarget.SPAD_IN, 0, 8, 0, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Load(LoadTarget.SPAD_WT, 0, 4, 200, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Preload(0, 4, 4), Compute(0, 8, 0, False),
               Store(n=4, acc_row=0, m=8, ext=1000, n0=1, row_stride1=2, param_row=0,
                     zero_point=0, lo=-128, hi=127),  # rows overlap: later rows win
               Load(LoadTarget.SPAD_IN, 8, 4, 1000, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Compute(8, 4, 0, True),
               Store(n=4, acc_row=0, m=4, ext=1100, param_row=0, zero_point=0, lo=-128, hi=127),
               Halt()]
    image[3000:3000 + 9 * 4] = 0  # params: bias 0, multiplier 0, shift 0 (valid)
    image[3004:3008] = np.frombuffer((1 << 30).to_bytes(4, "little"), np.uint8)
    assert_run_equals_steps(WS, program, image)


def test_os_chunks_and_a_load_into_rows_a_pending_compute_reads() -> None:
    rng = np.random.default_rng(3)
    program = [Load(LoadTarget.SPAD_IN, 0, 30, 0, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Load(LoadTarget.SPAD_WT, 0, 20, 400, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               ComputeOS(m=3, n=4, k=10, in_row=0, a_stride=3, wt_row=0, acc_row=0,
                         accumulate=False),
               ComputeOS(m=3, n=2, k=4, in_row=9, a_stride=0, wt_row=10, acc_row=0,
                         accumulate=True),
               ComputeOS(m=2, n=4, k=3, in_row=20, a_stride=0, wt_row=0, acc_row=3,
                         accumulate=True),
               Load(LoadTarget.SPAD_IN, 0, 6, 800, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               Load(LoadTarget.SPAD_WT, 0, 4, 900, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
               ComputeOS(m=3, n=4, k=4, in_row=0, a_stride=0, wt_row=0, acc_row=0,
                         accumulate=True),
               Halt()]
    assert_run_equals_steps(OS, program, _ws_image(rng))


def test_errors_leave_the_same_state() -> None:
    rng = np.random.default_rng(4)
    body = [Load(LoadTarget.SPAD_IN, 0, 8, 0, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
            Load(LoadTarget.SPAD_WT, 0, 4, 200, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
            Preload(0, 4, 4), Compute(0, 8, 0, False)]
    beyond = Load(LoadTarget.SPAD_IN, 0, 4, 5000, n0=1, row_stride1=4, length=4, run=4, n_mid=1)
    error = assert_run_equals_steps(WS, [*body, beyond, Halt()], _ws_image(rng))
    assert error is not None and error.startswith("LOAD accesses external bytes 5000..")
    error = assert_run_equals_steps(WS, body, _ws_image(rng))
    assert error == "the program ended without HALT"
    halted = Machine(WS, 64)
    halted.run([Halt()])
    with pytest.raises(SimulationError, match=r"^COMPUTE executed after HALT$"):
        halted.run([Compute(0, 1, 0, False)])


def test_values_beyond_float_range_take_the_integer_path() -> None:
    rng = np.random.default_rng(5)
    for magnitude in (2**7, 2**20, 2**40):
        a = rng.integers(-magnitude, magnitude, (7, 300))
        b = rng.integers(-magnitude, magnitude, (300, 5))
        expected = (a.astype(object) @ b.astype(object))
        wrapped = ((expected + 2**63) % 2**64 - 2**63).astype(np.int64)
        np.testing.assert_array_equal(exact_product(a, b), wrapped)
    np.testing.assert_array_equal(exact_product(np.zeros((2, 3), np.int64),
                                                np.ones((3, 4), np.int64)), 0)


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_a_program_object_runs_the_same(dataflow: Dataflow) -> None:
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow, spad_kib=2, acc_kib=1)
    case = random_program(config, np.random.default_rng(6), layers=4)
    program: Program = case.program
    assert assert_run_equals_steps(config, list(program.instructions), case.memory) is None
