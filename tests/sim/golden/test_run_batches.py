"""`Machine.run` (held LOADs, COMPUTEs and STOREs) against `Machine.execute` one at a time.

Mirrors `sim/golden/load_batch.py` and `sim/golden/store_batch.py`. The per-instruction path
is the reference (docs/isa.md): every test compares the whole state after the run, and for
failing programs the error (type and message). Random programs here are dense in conflicts:
small memories and scratchpads, so LOADs read bytes held STOREs write, STOREs overlap each
other and themselves, COMPUTEs overwrite rows held STOREs still have to read, PARAMS LOADs
change rows held STOREs use, and some instructions fail.
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SystolicError
from systolic.isa.instructions import (
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
)
from systolic.isa.memories import Memory, depth
from systolic.isa.params import pack_params
from systolic.sim.golden.machine import Machine

WS = ArrayConfig(rows=4, cols=4, spad_kib=1, acc_kib=1)
OS = dataclasses.replace(WS, dataflow=Dataflow.OS)
_MEMORY = 768
_PARAMS_AT = 600  # valid params rows live from here (4 rows of 9 * cols bytes for cols <= 4)

Setup = Callable[[Machine], None]


def _state(machine: Machine) -> list[np.ndarray]:
    return [machine.memory, machine.spad_in, machine.spad_wt, machine.acc, machine.bias,
            machine.multiplier, machine.shift, machine.weights]


def _outcome(machine: Machine, instructions: list[Instruction], batched: bool) -> str | None:
    try:
        if batched:
            machine.run(instructions)
        else:
            for instr in instructions:
                machine.execute(instr)
                if machine.halted:
                    break
            else:
                return "SimulationError: the program ended without HALT"
    except (SystolicError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def assert_same(config: ArrayConfig, instructions: list[Instruction], memory: np.ndarray,
                setup: Setup | None = None) -> str | None:
    """Run both ways from the same state; assert equal outcomes and states; return the
    error ("Type: message") or None."""
    machines = []
    for _ in range(2):
        machine = Machine(config, memory.size)
        machine.memory[:] = memory
        if setup is not None:
            setup(machine)
        machines.append(machine)
    batched = _outcome(machines[0], instructions, batched=True)
    stepped = _outcome(machines[1], instructions, batched=False)
    assert batched == stepped
    assert machines[0].halted == machines[1].halted
    for mine, theirs in zip(_state(machines[0]), _state(machines[1]), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    return batched


def _image(config: ArrayConfig, rng: np.random.Generator) -> np.ndarray:
    """Random bytes, with 4 valid params rows at _PARAMS_AT whose scales keep most outputs
    off the clamps (so that a wrong accumulator value shows)."""
    image = rng.integers(0, 256, _MEMORY, dtype=np.uint8)
    cols = config.cols
    bias = rng.integers(-(2**10), 2**10, (4, cols))
    multiplier = rng.integers(2**30, 2**31, (4, cols))
    shift = rng.integers(4, 11, (4, cols))
    packed = np.frombuffer(pack_params(bias, multiplier, shift), dtype=np.uint8)
    image[_PARAMS_AT : _PARAMS_AT + packed.size] = packed
    return image


def _random_instruction(config: ArrayConfig, rng: np.random.Generator) -> Instruction:
    """One instruction with random fields near the limits (it may fail when executed)."""
    integers = rng.integers
    dim, cols = config.dim, config.cols
    spad_in, spad_wt = depth(config, Memory.SPAD_IN), depth(config, Memory.SPAD_WT)
    acc = depth(config, Memory.ACC)
    ob = config.operand_bytes
    kind = integers(0, 10)
    rows_in = int(integers(0, 12))  # spad rows and acc rows are drawn from a few, so they clash
    if kind <= 2:
        weights = bool(integers(0, 2))
        length = int(integers(1, dim + 1))
        count = int(integers(1, 5))
        run = int(integers(1, length + 1))
        wrap = bool(integers(0, 4) == 0)  # sometimes beyond memory
        ext = int(integers(0, _MEMORY + 40 if wrap else _MEMORY - 4 * dim * ob - 64))
        return Load(LoadTarget.SPAD_WT if weights else LoadTarget.SPAD_IN,
                    min(rows_in, (spad_wt if weights else spad_in) - count), count, ext,
                    n0=int(integers(1, 3)), row_stride0=int(integers(0, 9)),
                    row_stride1=int(integers(0, 17)), k0=int(integers(0, 3)), length=length,
                    run=run, n_mid=int(integers(1, 3)), stride_mid=int(integers(0, 9)),
                    stride_outer=int(integers(0, 9)),
                    flip_sign=bool(integers(0, 2)) and config.input_width >= 8)
    if kind == 3:
        if integers(0, 4):
            return Load.params(int(integers(0, 6)), int(integers(1, 4)),
                               _PARAMS_AT + 9 * cols * int(integers(0, 2)), 9 * cols)
        return Load.params(int(integers(0, 6)), 1, int(integers(0, _PARAMS_AT)), 9 * cols)
    if kind <= 5:
        m = int(integers(1, 6))
        lo = int(integers(-128, 128))
        return Store(acc_row=min(rows_in, acc - m), m=m, n=int(integers(1, cols + 1)),
                     param_row=int(integers(0, 6)), zero_point=int(integers(-128, 128)), lo=lo,
                     hi=int(integers(lo, 128)),
                     ext=int(integers(0, _MEMORY + 8 if integers(0, 8) == 0 else 400)),
                     n0=int(integers(1, 3)), row_stride0=int(integers(0, 9)),
                     row_stride1=int(integers(0, 13)),
                     flip_sign=bool(integers(0, 2)) and config.input_width >= 8)
    if kind == 6:
        m = int(integers(1, 5))
        return Copy(in_row=min(rows_in, spad_in - m), m=m, lanes=int(integers(1, dim + 1)),
                    ext=int(integers(0, 400)), n0=1, row_stride1=int(integers(1, 9)))
    m = int(integers(1, 6))
    acc_row = min(int(integers(0, 12)), acc - m)
    accumulate = bool(integers(0, 3))
    if config.dataflow is Dataflow.WS:
        if kind == 7:
            return Preload(min(rows_in, spad_wt - config.rows), int(integers(1, config.rows + 1)),
                           int(integers(1, cols + 1)))
        return Compute(min(rows_in, spad_in - m), m, acc_row, accumulate)
    k = int(integers(1, 3 * dim + 1))
    chunks = -(-k // dim)
    a_stride = int(integers(0, 6))
    return ComputeOS(m=m, n=int(integers(1, cols + 1)), k=k,
                     in_row=min(rows_in, spad_in - (chunks - 1) * a_stride - m),
                     a_stride=a_stride, wt_row=min(int(integers(0, 12)), spad_wt - k),
                     acc_row=acc_row, accumulate=accumulate)


def _random_program(config: ArrayConfig, rng: np.random.Generator, size: int
                    ) -> list[Instruction]:
    program: list[Instruction] = [Load.params(0, 4, _PARAMS_AT, 9 * config.cols)]
    while len(program) < size:
        instr = _random_instruction(config, rng)
        try:
            instr.check(config)
        except SystolicError:
            continue
        program.append(instr)
    if rng.integers(0, 10):
        program.append(Halt())
    return program


def _config(seed: int) -> ArrayConfig:
    rng = np.random.default_rng(10_000 + seed)
    base = (WS, OS)[seed % 2]
    input_width = int(rng.choice([4, 8, 8, 12]))
    return dataclasses.replace(base, rows=int(rng.integers(1, 5)), cols=int(rng.integers(1, 5)),
                               input_width=input_width,
                               acc_width=int(rng.choice([input_width + 8, 32, 64])))


@pytest.mark.parametrize("seed", range(300))
def test_random_conflicting_programs(seed: int) -> None:
    config = _config(seed)
    rng = np.random.default_rng(seed)
    program = _random_program(config, rng, int(rng.integers(5, 80)))
    assert_same(config, program, _image(config, rng))


def test_random_programs_reach_every_outcome() -> None:
    """The seeds above cover clean runs and each kind of error (a guard on the generator)."""
    outcomes = set()
    for seed in range(300):
        config = _config(seed)
        rng = np.random.default_rng(seed)
        program = _random_program(config, rng, int(rng.integers(5, 80)))
        error = assert_same(config, program, _image(config, rng))
        outcomes.add(" ".join(error.split(" ")[1:3]) if error else None)
    assert {None, "LOAD accesses", "STORE accesses", "STORE uses", "the program"} <= outcomes


# -- hand-written orderings -----------------------------------------------------------------

def _ws_start(ext: int = 0, params_at: int = _PARAMS_AT) -> list[Instruction]:
    """PARAMS rows 0..3, 8 spad_in rows from `ext`, weights, and a COMPUTE into acc 0..7."""
    return [Load.params(0, 4, params_at, 9 * WS.cols),
            Load(LoadTarget.SPAD_IN, 0, 8, ext, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
            Load(LoadTarget.SPAD_WT, 0, 4, 200, n0=1, row_stride1=4, length=4, run=4, n_mid=1),
            Preload(0, 4, 4), Compute(0, 8, 0, False)]


def _store(acc_row: int, m: int, ext: int, **fields: int) -> Store:
    values = {"n": 4, "param_row": 0, "zero_point": 3, "lo": -100, "hi": 120, "n0": 1,
              "row_stride1": 4, **fields}
    return Store(acc_row=acc_row, m=m, ext=ext, **values)  # type: ignore[arg-type]


def _ws_image(seed: int) -> np.ndarray:
    return _image(WS, np.random.default_rng(seed))


def test_overlapping_stores_later_bytes_win() -> None:
    program = [*_ws_start(),
               _store(0, 6, 300), _store(2, 4, 302, flip_sign=True),  # overlaps the first
               _store(0, 8, 340, row_stride1=2),  # its own rows overlap
               _store(1, 3, 346, n=2, n0=2, row_stride0=1, row_stride1=3), Halt()]
    assert assert_same(WS, program, _ws_image(1)) is None


def test_a_load_of_bytes_a_held_store_writes() -> None:
    program = [*_ws_start(), _store(0, 8, 300),
               Load(LoadTarget.SPAD_IN, 8, 4, 304, n0=1, row_stride1=4, length=4, run=4,
                    n_mid=1),  # reads what the STORE wrote
               Load(LoadTarget.SPAD_WT, 4, 4, 310, n0=1, row_stride1=4, length=4, run=4,
                    n_mid=1, flip_sign=True),
               Preload(4, 4, 4), Compute(8, 4, 0, False), _store(0, 4, 400), Halt()]
    assert assert_same(WS, program, _ws_image(2)) is None


def test_a_compute_overwrites_rows_a_held_store_reads() -> None:
    program = [*_ws_start(),
               _store(0, 8, 300),  # its rows are pending: it reads them after their flush
               Compute(0, 4, 2, False),  # writes rows 2..5 the STORE reads
               Compute(4, 4, 8, True), _store(2, 4, 340), _store(8, 4, 360),
               Compute(0, 8, 0, True), _store(0, 8, 380), Halt()]
    assert assert_same(WS, program, _ws_image(3)) is None
    os_program = [Load.params(0, 4, _PARAMS_AT, 9 * OS.cols),
                  Load(LoadTarget.SPAD_IN, 0, 12, 0, n0=1, row_stride1=4, length=4, run=4,
                       n_mid=1),
                  Load(LoadTarget.SPAD_WT, 0, 12, 100, n0=1, row_stride1=4, length=4, run=4,
                       n_mid=1),
                  ComputeOS(m=4, n=4, k=8, in_row=0, a_stride=4, wt_row=0, acc_row=0),
                  _store(0, 4, 300),
                  ComputeOS(m=4, n=3, k=4, in_row=8, a_stride=0, wt_row=8, acc_row=0),
                  _store(0, 4, 320),
                  Load(LoadTarget.SPAD_WT, 0, 4, 300, n0=1, row_stride1=4, length=4, run=4,
                       n_mid=1),  # the first STORE's bytes, into rows a COMPUTE.OS reads next
                  ComputeOS(m=4, n=4, k=4, in_row=0, a_stride=0, wt_row=0, acc_row=0,
                            accumulate=True),
                  _store(0, 4, 340), Halt()]
    assert assert_same(OS, os_program, _ws_image(3)) is None


def test_a_params_load_after_a_held_store() -> None:
    other = _PARAMS_AT + 9 * WS.cols * 2
    program = [*_ws_start(), _store(0, 8, 300, param_row=1),
               Load.params(1, 1, other, 9 * WS.cols),  # changes the row the STORE used
               _store(0, 8, 340, param_row=1), Halt()]
    assert assert_same(WS, program, _ws_image(4)) is None


def test_loads_into_the_same_rows_and_narrow_rows() -> None:
    config = dataclasses.replace(WS, input_width=4, weight_width=8)
    program = [*_ws_start(),
               Load(LoadTarget.SPAD_IN, 2, 4, 40, n0=2, row_stride0=3, row_stride1=7, length=3,
                    run=2, n_mid=2, stride_mid=5, stride_outer=1),
               Load(LoadTarget.SPAD_IN, 4, 4, 80, n0=1, row_stride1=4, length=2, run=2,
                    n_mid=1),  # rows 4, 5 again: later wins
               Load(LoadTarget.SPAD_IN, 8, 2, 90, n0=1, row_stride1=4, length=4, run=4,
                    n_mid=1),
               Compute(0, 10, 0, False), _store(0, 10, 300, row_stride1=5), Halt()]
    assert assert_same(config, program, _ws_image(5)) is None


def test_errors_after_held_instructions() -> None:
    bad_shift = _ws_image(6)
    row = _PARAMS_AT + 9 * WS.cols * 3
    bad_shift[row + 8 * WS.cols + 2] = 40  # params row 3, lane 2: shift 40
    program = [*_ws_start(), _store(0, 8, 300), _store(0, 4, 320, param_row=3), Halt()]
    error = assert_same(WS, program, bad_shift)
    assert error == ("SimulationError: STORE uses params row 3 whose lane 2 has shift 40, "
                     "outside -31..31; fix the params image")
    error = assert_same(WS, [*program[:-2], _store(0, 4, 320, param_row=3, n=2), Halt()],
                        bad_shift)
    assert error is None  # lanes 0..1 only
    beyond = [*_ws_start(), _store(0, 8, 300), _store(0, 4, _MEMORY - 8), Halt()]
    error = assert_same(WS, beyond, _ws_image(6))
    assert error is not None and error.startswith("SimulationError: STORE accesses external")
    load_beyond = [*_ws_start(), _store(0, 8, 300),
                   Load(LoadTarget.SPAD_IN, 8, 4, 304, n0=1, row_stride1=4, length=4, run=4,
                        n_mid=1),
                   Load(LoadTarget.SPAD_IN, 12, 4, _MEMORY - 8, n0=1, row_stride1=4, length=4,
                        run=4, n_mid=1), Halt()]
    error = assert_same(WS, load_beyond, _ws_image(6))
    assert error is not None and error.startswith("SimulationError: LOAD accesses external")
    assert assert_same(WS, [*_ws_start(), _store(0, 8, 300)], _ws_image(6)) == (
        "SimulationError: the program ended without HALT")


def test_bias_outside_int32_is_refused_in_order() -> None:
    def setup(machine: Machine) -> None:
        machine.bias[5, 1] = 2**40

    program = [*_ws_start(), _store(0, 8, 300), _store(0, 2, 340, param_row=5),
               _store(0, 2, 360), Halt()]
    assert assert_same(WS, program, _ws_image(7)) is None  # (row 5 unloaded: all zero)
    error = assert_same(WS, program, _ws_image(7), setup=setup)
    assert error == "ValueError: bias must lie in [-2147483648, 2147483647]"


def test_huge_accumulators_take_the_exact_path() -> None:
    config = dataclasses.replace(WS, acc_width=64)

    def setup(machine: Machine) -> None:
        machine.acc[:8] = np.arange(8)[:, None] * 2**60 - 2**62 + np.arange(4)

    program = [Load.params(0, 4, _PARAMS_AT, 9 * WS.cols), _store(0, 4, 300),
               _store(4, 4, 320, n=3, flip_sign=True), Halt()]
    assert assert_same(config, program, _ws_image(8), setup=setup) is None
