"""The accelerator on random programs with LAYERNORM (issue 13): memory bit-exact with the golden
machine, every instruction's accept/issue/complete cycle, the total, the counters and the
energy events equal to the cycle model's."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import LayerNorm, Softmax

from ..sim.verilator.conftest import needs_verilator
from ..support.random_programs import SyntheticProgram, random_program
from .accelerator_programs import small_config
from .feature_programs import assert_rtl_matches, assert_verilator_matches

WS, OS = Dataflow.WS, Dataflow.OS


def layernorm_case(config: ArrayConfig, seed: int, *, limit: int = 40,
                   softmax: bool = False) -> SyntheticProgram:
    """Return the first random program (seeds from `seed`) of at most `limit` instructions
    with a LAYERNORM (and a SOFTMAX too, with `softmax`)."""
    for attempt in range(seed, seed + 500):
        case = random_program(config, np.random.default_rng(attempt), layers=3,
                              softmax=softmax, layernorm=True)
        kinds = {type(instr) for instr in case.program.instructions}
        if len(case.program.instructions) <= limit and LayerNorm in kinds and (
                not softmax or Softmax in kinds):
            return case
    raise AssertionError(f"no program with LAYERNORM from seed {seed}")


@pytest.mark.parametrize("dataflow", [WS, OS])
def test_random_layernorm_program(dataflow) -> None:
    config = small_config(2, 2, dataflow, mem_latency=1, bus_bytes=4)
    assert_rtl_matches(layernorm_case(config, 700 + (dataflow is OS), limit=16))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("rows", "cols", "bus"), [(2, 2, 1), (4, 4, 8), (8, 8, 16)])
@pytest.mark.parametrize("seed", range(3))
def test_more_random_layernorm_programs(rows: int, cols: int, bus: int, seed: int,
                                        dataflow) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=seed * 3, bus_bytes=bus)
    assert_rtl_matches(layernorm_case(config, 3000 * seed + rows * cols, limit=100,
                                      softmax=seed == 1))


@pytest.mark.slow
def test_verilator_runs_layernorm_like_the_rtl() -> None:
    """The emitted Verilog under Verilator: same memory, times and counters as the Amaranth
    simulator on a program with LAYERNORM and SOFTMAX."""
    needs_verilator()
    config = small_config(4, 4, WS, mem_latency=3, bus_bytes=8, spad_kib=8, acc_kib=8)
    assert_verilator_matches(layernorm_case(config, 17, softmax=True))
