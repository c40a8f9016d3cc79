"""`run_program` and its backend registry."""

import numpy as np
import pytest

from systolic.config import Dataflow
from systolic.errors import ConfigError
from systolic.isa.instructions import Halt
from systolic.isa.program import MemorySegment, Program
from systolic.sim.result import COUNTER_NAMES, InstructionTimes, RunResult
from systolic.sim.run import backends
from systolic.sim.run.backends import initial_memory, register_backend, run_program

from ...hdl.accelerator_programs import gemm_program, golden_image, operands, small_config


def test_rtl_backend_runs_a_program() -> None:
    config = small_config(2, 3, Dataflow.OS, mem_latency=0)
    rng = np.random.default_rng(2)
    a, b = operands(rng, 3, 5, 4)
    program = gemm_program(config, a, b, rng)
    image = initial_memory(program)
    result = run_program(program, image)
    assert bytes(result.memory) == golden_image(program, image)
    assert set(result.counters) == set(COUNTER_NAMES)
    assert result.total_cycles == result.times[-1].complete == result.counters["cycles"]
    assert len(result.times) == len(program.instructions)


def test_initial_memory_places_segments() -> None:
    config = small_config(2, 2, Dataflow.WS, bus_bytes=8)
    program = Program(config, (Halt(),), (MemorySegment(3, b"\x01\x02"),))
    assert initial_memory(program) == bytearray([0, 0, 0, 1, 2, 0, 0, 0])
    assert len(initial_memory(program, 20)) == 24


def test_unknown_backend_and_registration(monkeypatch) -> None:
    config = small_config(1, 1, Dataflow.WS)
    program = Program(config, (Halt(),))
    message = r"^unknown simulation backend 'spice': use one of (\w+, )*rtl"
    with pytest.raises(ConfigError, match=message):
        run_program(program, b"", backend="spice")

    def fake(program, memory, *, watchdog, vcd):
        return RunResult(bytearray(memory), 5, (InstructionTimes(5, 5, 5),), {"cycles": 5})

    monkeypatch.setattr(backends, "BACKENDS", dict(backends.BACKENDS))
    register_backend("fake", fake)
    assert run_program(program, b"\x07", backend="fake").memory == bytearray(b"\x07")


def test_halt_only_program_on_rtl() -> None:
    program = Program(small_config(1, 1, Dataflow.WS), (Halt(),))
    result = run_program(program, bytes(8))
    assert result.times == (InstructionTimes(1, 1, 1),)
    assert result.total_cycles == 1
    assert result.counters["instructions"] == 1
