"""The accelerator on random programs with issue 13's instructions (TABLE, STORE/COPY `lut`,
ADD `mul` and `b_broadcast`): memory bit-exact with the golden machine, every instruction's
accept/issue/complete cycle, the total and the counters equal to the cycle model's."""

import numpy as np
import pytest

from systolic.config import Dataflow
from systolic.isa.instructions import Copy, Halt, Load, LoadTarget, Table
from systolic.isa.program import MemorySegment, Program
from systolic.isa.table import table_rows
from systolic.sim.run.backends import run_program

from ..sim.verilator.conftest import needs_verilator
from ..support.random_programs import SyntheticProgram
from .accelerator_programs import A_ADDR, B_ADDR, Y_ADDR, program_image, small_config
from .feature_programs import assert_rtl_matches, assert_verilator_matches, feature_case

WS, OS = Dataflow.WS, Dataflow.OS


def test_table_hazards_and_queue_order() -> None:
    """TABLE goes to ST and waits for the LOAD of its rows; a LOAD that overwrites them waits
    for the TABLE; a COPY lut uses the table of the TABLE before it in the ST queue."""
    config = small_config(4, 4, WS, mem_latency=2, bus_bytes=4)
    rows, rng = table_rows(config), np.random.default_rng(3)
    tables = [rng.integers(0, 256, 4 * rows, np.uint8).tobytes() for _ in range(2)]
    data_ext = Y_ADDR - 0x100
    instrs = (
        Load.dense(LoadTarget.SPAD_IN, 0, rows, A_ADDR, 4, 4),
        Load.dense(LoadTarget.SPAD_IN, rows, 8, data_ext, 4, 4),
        Table(row=0),
        Load.dense(LoadTarget.SPAD_IN, 0, rows, B_ADDR, 4, 4),
        Copy(in_row=rows, m=8, lanes=4, ext=Y_ADDR, row_stride1=4, lut=True),
        Table(row=0),
        Copy(in_row=rows, m=8, lanes=3, ext=Y_ADDR + 64, row_stride1=5, lut=True, flip_sign=True),
        Halt(),
    )
    segments = (MemorySegment(A_ADDR, tables[0]), MemorySegment(B_ADDR, tables[1]),
                MemorySegment(data_ext, rng.integers(0, 256, 32, np.uint8).tobytes()))
    program = Program(config, instrs, segments)
    case = SyntheticProgram(program, program_image(program))
    assert_rtl_matches(case)
    times = run_program(program, case.memory, backend="model").times
    assert times[2].issue > times[0].complete  # TABLE after the LOAD of its rows
    assert times[3].issue > times[2].complete  # the overwriting LOAD after the TABLE
    assert times[5].issue > times[3].complete


@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("size", "wanted"), [
    (2, frozenset({"TABLE", "lut", "mul"})),
    (4, frozenset({"TABLE", "lut", "b_broadcast"})),
])
def test_random_activation_programs(size: int, wanted: frozenset[str], dataflow) -> None:
    config = small_config(size, size, dataflow, mem_latency=size - 1, bus_bytes=2 * size)
    assert_rtl_matches(feature_case(config, 100 * size + (dataflow is OS), wanted))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("rows", "cols", "bus"), [(2, 2, 1), (4, 4, 8), (3, 5, 4), (8, 8, 16)])
@pytest.mark.parametrize("seed", range(4))
def test_more_random_activation_programs(rows: int, cols: int, bus: int, seed: int,
                                         dataflow) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=seed * 3, bus_bytes=bus)
    assert_rtl_matches(feature_case(config, 1000 * seed + rows * cols,
                                    frozenset({"TABLE", "lut"}), limit=120))


@pytest.mark.slow
def test_verilator_runs_table_and_lut_like_the_rtl() -> None:
    """The emitted Verilog under Verilator: same memory, times and counters as the Amaranth
    simulator on a program with TABLE, STORE lut, ADD mul and b_broadcast."""
    needs_verilator()
    config = small_config(4, 4, WS, mem_latency=3, bus_bytes=8, spad_kib=8, acc_kib=8)
    assert_verilator_matches(
        feature_case(config, 7, frozenset({"TABLE", "lut", "mul", "b_broadcast"})))
