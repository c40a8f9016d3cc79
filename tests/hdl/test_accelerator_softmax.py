"""The accelerator on random programs with SOFTMAX, TABLE `wide` and STORE `raw` (issue 13):
memory bit-exact with the golden machine, every instruction's accept/issue/complete cycle, the
total and the counters equal to the cycle model's."""

import pytest

from systolic.config import Dataflow

from ..sim.verilator.conftest import needs_verilator
from .accelerator_programs import small_config
from .feature_programs import assert_rtl_matches, assert_verilator_matches, feature_case

WS, OS = Dataflow.WS, Dataflow.OS
WANTED = frozenset({"SOFTMAX", "TABLE wide", "raw"})


@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize("size", [2, 4])
def test_random_softmax_programs(size: int, dataflow) -> None:
    config = small_config(size, size, dataflow, mem_latency=size - 1, bus_bytes=2 * size)
    assert_rtl_matches(feature_case(config, 300 * size + (dataflow is OS), WANTED, limit=50,
                                    softmax=True))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("rows", "cols", "bus"), [(2, 2, 1), (4, 4, 8), (8, 8, 16)])
@pytest.mark.parametrize("seed", range(3))
def test_more_random_softmax_programs(rows: int, cols: int, bus: int, seed: int,
                                      dataflow) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=seed * 3, bus_bytes=bus)
    assert_rtl_matches(feature_case(config, 2000 * seed + rows * cols, frozenset({"SOFTMAX"}),
                                    limit=120, softmax=True))


@pytest.mark.slow
def test_verilator_runs_softmax_like_the_rtl() -> None:
    """The emitted Verilog under Verilator: same memory, times and counters as the Amaranth
    simulator on a program with TABLE wide, SOFTMAX and STORE raw."""
    needs_verilator()
    config = small_config(4, 4, WS, mem_latency=3, bus_bytes=8, spad_kib=8, acc_kib=8)
    assert_verilator_matches(feature_case(config, 11, WANTED, limit=50, softmax=True))
