"""Random accelerator programs that use chosen STORE-unit features, and the comparisons every
test of them makes: the Amaranth accelerator against the golden memory and the cycle model,
and Verilator against the Amaranth accelerator."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import Add, Copy, Instruction, Softmax, Store, Table
from systolic.sim.run.backends import run_program

from ..support.random_programs import SyntheticProgram, random_program
from .accelerator_programs import golden_image
from .test_accelerator import check_times

__all__ = ["assert_rtl_matches", "assert_verilator_matches", "feature_case", "features"]


def features(instrs: tuple[Instruction, ...]) -> set[str]:
    """Return the features `instrs` use: TABLE, TABLE wide, lut and SOFTMAX (each "... before
    TABLE" when no TABLE of its table came first), STORE raw, ADD mul and b_broadcast."""
    used = set()
    for instr in instrs:
        if isinstance(instr, Table):
            used.add("TABLE wide" if instr.wide else "TABLE")
        if isinstance(instr, Store | Copy) and instr.lut:
            used.add("lut" if "TABLE" in used else "lut before TABLE")
        if isinstance(instr, Softmax):
            used.add("SOFTMAX" if "TABLE wide" in used else "SOFTMAX before TABLE")
        if isinstance(instr, Store) and instr.raw:
            used.add("raw")
        if isinstance(instr, Add):
            used.update(name for name in ("mul", "b_broadcast") if getattr(instr, name))
    return used


def feature_case(config: ArrayConfig, seed: int, wanted: frozenset[str], *, limit: int = 60,
                 softmax: bool = False) -> SyntheticProgram:
    """Return the first random program (seeds from `seed`; SOFTMAX, TABLE wide and STORE raw
    among them with `softmax`) of at most `limit` instructions that uses every feature in
    `wanted`."""
    for attempt in range(seed, seed + 500):
        case = random_program(config, np.random.default_rng(attempt), layers=3,
                              activation=True, softmax=softmax)
        instrs = case.program.instructions
        if len(instrs) <= limit and wanted <= features(instrs):
            return case
    raise AssertionError(f"no program with {sorted(wanted)} from seed {seed}")


def assert_rtl_matches(case: SyntheticProgram) -> None:
    """RTL memory == golden memory; RTL times, total, counters and energy events == the
    cycle model's."""
    rtl = run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    model = run_program(case.program, case.memory, backend="model")
    assert bytes(rtl.memory) == golden_image(case.program, case.memory)
    check_times(case.program, rtl)
    assert rtl.times == model.times
    assert rtl.total_cycles == model.total_cycles
    assert dict(rtl.counters) == dict(model.counters)
    assert dict(rtl.events) == dict(model.events)


def assert_verilator_matches(case: SyntheticProgram) -> None:
    """The emitted Verilog under Verilator: same memory, times, counters and energy events as
    the Amaranth simulator, and the golden memory."""
    rtl = run_program(case.program, case.memory, backend="rtl")
    fast = run_program(case.program, case.memory, backend="verilator")
    assert (fast.times, fast.total_cycles) == (rtl.times, rtl.total_cycles)
    assert dict(fast.counters) == dict(rtl.counters)
    assert dict(fast.events) == dict(rtl.events)
    assert bytes(fast.memory) == bytes(rtl.memory) == golden_image(case.program, case.memory)
