"""The pysim driver: watchdog, VCD output, the input image left untouched, reuse."""

import numpy as np
import pytest

from systolic.config import Dataflow
from systolic.errors import SimulationError
from systolic.sim.rtl.pysim_driver import run_pysim

from ...hdl.accelerator_programs import (
    gemm_program,
    golden_image,
    operands,
    program_image,
    small_config,
)


def small_program():
    config = small_config(2, 2, Dataflow.WS, mem_latency=2)
    rng = np.random.default_rng(1)
    a, b = operands(rng, 3, 3, 2)
    return gemm_program(config, a, b, rng)


def test_watchdog_names_the_last_issued_instruction() -> None:
    program = small_program()
    image = program_image(program)
    finished = run_pysim(program, image)
    total = finished.total_cycles
    assert run_pysim(program, image, watchdog=total + 1).total_cycles == total
    limit = total - 12
    last_issue = max((t.issue, i) for i, t in enumerate(finished.times[:-1]) if t.issue < limit)
    index = last_issue[1]
    mnemonic = program.instructions[index].MNEMONIC
    with pytest.raises(SimulationError, match=(
            rf"^the program did not finish within {limit} cycles: the last instruction issued "
            rf"was {index} \({mnemonic} .*\) in cycle {last_issue[0]}; ")):
        run_pysim(program, image, watchdog=limit)
    with pytest.raises(SimulationError, match=r"within 1 cycles: no instruction was issued"):
        run_pysim(program, image, watchdog=1)


def test_vcd_and_untouched_input(tmp_path) -> None:
    program = small_program()
    image = bytes(program_image(program))
    path = tmp_path / "run.vcd"
    result = run_pysim(program, image, vcd=path)
    assert bytes(result.memory) == golden_image(program, image)
    assert bytes(result.memory) != image
    text = path.read_text()
    assert "$enddefinitions" in text and "trace" in text
    assert text.count("#") > result.total_cycles  # a timestamp per clock edge at least


def test_a_reused_simulator_runs_as_a_fresh_one() -> None:
    """Runs of one configuration share a compiled simulator (reset between runs): a program
    run after another one of different data and length gives the same memory, times, counters
    and events as its first run, and the golden machine's memory."""
    config = small_config(2, 2, Dataflow.WS, mem_latency=2)
    rng = np.random.default_rng(7)
    short = gemm_program(config, *operands(rng, 3, 3, 2), rng)
    long = gemm_program(config, *operands(rng, 7, 9, 5), rng)
    image = program_image(short)
    first = run_pysim(short, image)
    other = run_pysim(long, program_image(long))
    again = run_pysim(short, image)
    assert other.total_cycles > first.total_cycles
    assert bytes(again.memory) == bytes(first.memory) == golden_image(short, image)
    assert again.times == first.times
    assert again.counters == first.counters and again.events == first.events
