"""array_cycles: busy and occupied array time of EXECUTE instructions."""

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Compute, ComputeOS, Load, LoadTarget, Preload, Store
from systolic.mapper.lowering.estimate import array_cycles, ideal_cycles


def test_weight_stationary_tiles_occupy_at_least_rows_cycles() -> None:
    config = ArrayConfig(rows=8, cols=8)
    program = [
        Load.dense(LoadTarget.SPAD_IN, 0, 4, 0, 8, 8),
        Preload(0, 8, 8),
        Compute(0, 3, 0),  # a tile of 3 + 2 rows: occupies max(5, 8) = 8 cycles
        Compute(0, 2, 3),
        Preload(8, 8, 8),
        Compute(0, 20, 0, accumulate=True),  # 20 cycles
        Store(0, 20, 8, 0, 0, -128, 127, 4096),
    ]
    cycles = array_cycles(program, config)
    assert (cycles.busy, cycles.occupied) == (25, 28)


def test_output_stationary_tiles_occupy_at_least_rows_cycles() -> None:
    config = ArrayConfig(rows=8, cols=4, dataflow=Dataflow.OS)
    program = [ComputeOS(0, 8, 4, 5, 0, 0), ComputeOS(0, 8, 4, 30, 0, 8, a_stride=8)]
    cycles = array_cycles(program, config)
    assert (cycles.busy, cycles.occupied) == (35, 38)


def test_ideal_cycles_divide_the_macs_by_the_array() -> None:
    assert ideal_cycles(1000, ArrayConfig(rows=4, cols=5)) == 50.0
