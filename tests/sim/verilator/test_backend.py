# amaranth: UnusedElaboratable=no

"""The `verilator` backend: the emitted Verilog under Verilator runs whole programs exactly as the
Amaranth simulator (`rtl`) does - same final memory, total cycles, per-instruction times and
counters - and its memory equals the golden machine's."""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SimulationError
from systolic.hdl.event_counters import RTL_EVENTS
from systolic.isa.instructions import Halt, Load, LoadTarget
from systolic.isa.program import Program
from systolic.sim.energy.events import program_events, sum_events
from systolic.sim.result import COUNTER_NAMES
from systolic.sim.run.backends import run_program

from ...hdl.accelerator_programs import (
    Y_ADDR,
    gemm_program,
    golden_image,
    mixed_gemm_program,
    operands,
    program_image,
    small_config,
    vector_program,
)
from ...support.random_programs import random_program
from .conftest import needs_verilator

# Both dataflows on 2x2 and 4x4, with bus widths that give scalar (32-bit) and wide (VlWide)
# memory ports in C++, and read latencies from 0 (answered in the request's cycle) to 8.
CONFIGS = {
    "2x2-ws-bus8-lat1": small_config(2, 2, Dataflow.WS, bus_bytes=8, mem_latency=1,
                                     spad_kib=8, acc_kib=8),
    "2x2-os-bus16-lat0": small_config(2, 2, Dataflow.OS, bus_bytes=16, mem_latency=0,
                                      spad_kib=8, acc_kib=8),
    "4x4-ws-bus16-lat8": small_config(4, 4, Dataflow.WS, bus_bytes=16, mem_latency=8,
                                      spad_kib=8, acc_kib=8),
    "4x4-os-bus4-lat3": small_config(4, 4, Dataflow.OS, bus_bytes=4, mem_latency=3,
                                     spad_kib=8, acc_kib=8),
    "2x3-both-bus8-lat2": small_config(2, 3, Dataflow.BOTH, bus_bytes=8, mem_latency=2,
                                       spad_kib=8, acc_kib=8),
}


def programs(config: ArrayConfig, seed: int) -> list[tuple[Program, bytearray]]:
    """Return a tiled GEMM, the vector ops (POOL/ADD/COPY) and two random multi-layer programs."""
    rng = np.random.default_rng(seed)
    a, b = operands(rng, 5, 2 * config.dim + 1, config.cols + 1)
    gemm = (mixed_gemm_program if config.dataflow is Dataflow.BOTH else gemm_program)(
        config, a, b, rng)
    vector = vector_program(config, rng, 3, 4, config.dim)
    out = [(gemm, program_image(gemm)), (vector, program_image(vector))]
    for _ in range(2):
        synthetic = random_program(config, rng)
        out.append((synthetic.program, synthetic.memory))
    return out


def assert_same_run(program: Program, image: bytearray) -> None:
    """Run on both backends; everything must agree, and the memory must equal the golden one."""
    rtl = run_program(program, image, backend="rtl")
    fast = run_program(program, image, backend="verilator")
    assert fast.total_cycles == rtl.total_cycles
    assert fast.times == rtl.times
    assert dict(fast.counters) == dict(rtl.counters)
    assert set(fast.counters) == set(COUNTER_NAMES)
    assert dict(fast.events) == dict(rtl.events)
    assert set(fast.events) == set(RTL_EVENTS)
    assert fast.memory == rtl.memory
    assert bytes(fast.memory) == golden_image(program, image)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow)
    if name in ("4x4-ws-bus16-lat8", "4x4-os-bus4-lat3", "2x3-both-bus8-lat2",
                "2x2-os-bus16-lat0") else name
    for name in CONFIGS
])  # one Verilator build each (~50 s idle): the 2x2 WS by default, the others slow
def test_programs_match_rtl_and_golden(name: str) -> None:
    needs_verilator()
    for program, image in programs(CONFIGS[name], seed=len(name)):
        assert_same_run(program, image)


def test_input_memory_is_not_modified() -> None:
    needs_verilator()
    config = CONFIGS["2x2-ws-bus8-lat1"]
    rng = np.random.default_rng(5)
    a, b = operands(rng, 2, 2, 2)
    program = gemm_program(config, a, b, rng)
    image = program_image(program)
    before = bytes(image)
    result = run_program(program, image, backend="verilator")
    assert bytes(image) == before
    assert result.memory != image


def test_halt_only_program() -> None:
    needs_verilator()
    program = Program(CONFIGS["2x2-os-bus16-lat0"], (Halt(),))
    assert_same_run(program, bytearray(32))


@pytest.mark.slow  # the Amaranth simulator's and the model's watchdog tests run by default
def test_watchdog_names_the_last_issued_instruction() -> None:
    needs_verilator()
    config = CONFIGS["2x2-ws-bus8-lat1"]
    rng = np.random.default_rng(9)
    a, b = operands(rng, 3, 3, 3)
    program = gemm_program(config, a, b, rng)
    image = program_image(program)
    total = run_program(program, image, backend="verilator").total_cycles
    assert run_program(program, image, backend="verilator", watchdog=total + 1).total_cycles == total
    messages = []
    for backend in ("rtl", "verilator"):
        with pytest.raises(SimulationError, match=r"^the program did not finish within \d+ "
                                                  r"cycles: the last instruction issued was "):
            run_program(program, image, backend=backend, watchdog=total)
        try:
            run_program(program, image, backend=backend, watchdog=total // 2)
        except SimulationError as error:
            messages.append(str(error))
    assert messages[0] == messages[1]


def test_write_beyond_the_image_is_an_error() -> None:
    needs_verilator()
    config = CONFIGS["2x2-ws-bus8-lat1"]
    rng = np.random.default_rng(3)
    a, b = operands(rng, 2, 2, 2)
    program = gemm_program(config, a, b, rng)
    image = program_image(program)[:Y_ADDR + 1]  # the outputs start at Y_ADDR
    with pytest.raises(SimulationError, match=r"^verilator backend: write to byte \d+ in cycle "
                                              r"\d+ lies beyond the \d+-byte memory image$"):
        run_program(program, image, backend="verilator")


@pytest.mark.slow
def test_16x16_build_and_run() -> None:
    needs_verilator()
    config = ArrayConfig(rows=16, cols=16, spad_kib=64, acc_kib=64)
    for dataflow in (Dataflow.WS, Dataflow.OS):
        config = dataclasses.replace(config, dataflow=dataflow)
        rng = np.random.default_rng(16)
        a, b = operands(rng, 20, 40, 20)
        program = gemm_program(config, a, b, rng)
        assert_same_run(program, program_image(program))
        load = Load.dense(LoadTarget.SPAD_IN, 0, 4, 0, 16, 16)
        assert_same_run(Program(config, (load, Halt())), bytearray(4096))


def test_without_watchdog_only_a_stall_stops_the_run(monkeypatch) -> None:
    needs_verilator()
    from systolic.sim.verilator import backend
    from systolic.sim.verilator.process import HarnessResult

    config = CONFIGS["2x2-ws-bus8-lat1"]
    rng = np.random.default_rng(9)
    a, b = operands(rng, 6, 5, 3)
    program = gemm_program(config, a, b, rng)
    image = program_image(program)
    monkeypatch.setattr(backend, "DEFAULT_WATCHDOG", 30)  # the stall limit without a watchdog
    result = run_program(program, image, backend="verilator")
    assert result.total_cycles > 30
    assert result == run_program(program, image, backend="verilator", watchdog=10_000)

    # A stalled run names the stall limit and the last instruction issued.
    stalled = HarnessResult(memory=bytearray(), status="stalled", cycle=75, last_issue=1,
                            last_issue_cycle=45, accepted=3, message="", ports={},
                            times=((1, 2, 3), (2, 45, -1), (3, -1, -1), (-1, -1, -1)))

    class Stalled:
        def run(self, *args, **kwargs) -> HarnessResult:
            assert kwargs["stall_limit"] == 30 and kwargs["watchdog"] == backend.UNLIMITED
            return stalled

    monkeypatch.setattr(backend, "accelerator_design", lambda config: Stalled())
    with pytest.raises(SimulationError, match=r"^the program made no progress for 30 cycles "
                                              r"\(no instruction accepted, issued or completed\) "
                                              r"by cycle 75: the last instruction issued was 1 "
                                              r"\(.*\) in cycle 45; 3 of 4 instructions "
                                              r"accepted, 3 not completed$"):
        run_program(Program(config, program.instructions[:3] + (Halt(),)), image,
                    backend="verilator")


@pytest.mark.slow
def test_event_counters_equal_the_model() -> None:
    """Verilator's energy event counters equal the cycle model's counts (activation programs)."""
    needs_verilator()
    config = CONFIGS["4x4-ws-bus16-lat8"]
    case = random_program(config, np.random.default_rng(7), layers=3, activation=True)
    result = run_program(case.program, case.memory, backend="verilator")
    events = sum_events(program_events(case.program.instructions, config))
    assert dict(result.events) == {name: events[name] for name in RTL_EVENTS}
    assert result.events["macs"] > 0
