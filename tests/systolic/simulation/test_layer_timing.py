"""Per-layer cycles from per-instruction times: the end rule, busy unions and stalls."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instruction_base import Unit
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.sim.result import InstructionTimes, TimesTable
from systolic.simulation.layer_timing import RunTimes, ideal_array_cycles, layer_timings

CONFIG = ArrayConfig(rows=4, cols=4)
LD, EX, ST = Unit.LD, Unit.EX, Unit.ST


def test_layers_add_up_to_the_run_and_stalls_are_the_unit_idle_time() -> None:
    # layer a: LD, EX, ST (instructions 0..2); layer b: LD, EX, ST (3..5); HALT 6
    units = [LD, EX, ST, LD, EX, ST, Unit.DISPATCH]
    layers = [
        ProgramLayer("a", "QMatMul", LayerUnit.ARRAY, 0, 3, macs=100),
        ProgramLayer("b", "QMaxPool", LayerUnit.VECTOR, 3, 3),
    ]
    times = [
        InstructionTimes(1, 2, 10),  # LD a
        InstructionTimes(2, 10, 30),  # EX a: busy 20 of a's 40 cycles
        InstructionTimes(3, 30, 40),  # ST a
        InstructionTimes(4, 11, 20),  # LD b, overlapping a
        InstructionTimes(5, 40, 45),  # EX b (not b's unit: b is a vector layer)
        InstructionTimes(6, 45, 55),  # ST b: busy 10 of b's 18 cycles
        InstructionTimes(58, 58, 58),  # HALT
    ]
    (a, b) = layer_timings(layers, units, [RunTimes(0, times, 58)])
    assert (a.cycles, a.busy, a.stall_cycles) == (40, 20, 20)
    assert (b.cycles, b.busy, b.stall_cycles) == (18, 10, 8)  # ends at the HALT, cycle 58


def test_host_layers_split_runs_and_take_no_cycles() -> None:
    units = [EX, EX, Unit.DISPATCH]
    layers = [
        ProgramLayer("a", "QMatMul", LayerUnit.ARRAY, 0, 1, macs=16),
        ProgramLayer("h", "Softmax", LayerUnit.HOST, 1, 0),
        ProgramLayer("b", "QMatMul", LayerUnit.ARRAY, 1, 1, macs=16),
    ]
    first = RunTimes(0, [InstructionTimes(1, 2, 12), InstructionTimes(13, 13, 13)], 13)
    second = RunTimes(1, [InstructionTimes(1, 3, 9), InstructionTimes(10, 10, 10)], 10)
    (a, h, b) = layer_timings(layers, units, [first, second])
    assert (a.cycles, a.busy) == (13, 10)
    assert (h.cycles, h.busy) == (0, 0)
    assert (b.cycles, b.busy) == (10, 6)


def test_a_layer_finishing_before_its_predecessor_takes_no_cycles() -> None:
    units = [EX, ST, Unit.DISPATCH]
    layers = [
        ProgramLayer("a", "QMatMul", LayerUnit.ARRAY, 0, 1, macs=16),
        ProgramLayer("b", "Flatten", LayerUnit.LAYOUT, 1, 1),
    ]
    times = [InstructionTimes(1, 2, 30), InstructionTimes(2, 3, 8), InstructionTimes(31, 31, 31)]
    (a, b) = layer_timings(layers, units, [RunTimes(0, times, 31)])
    assert (a.cycles, b.cycles, b.busy) == (30, 1, 0)


def test_ideal_cycles_round_up() -> None:
    assert ideal_array_cycles(16, CONFIG) == 1
    assert ideal_array_cycles(17, CONFIG) == 2
    assert ideal_array_cycles(0, CONFIG) == 0


def test_active_is_the_unclipped_busy_time_of_the_layers_own_unit() -> None:
    # b's COMPUTE starts while a's STORE drains: b adds 6 cycles but its EXECUTE works 12
    units = [EX, ST, LD, EX, EX, ST, Unit.DISPATCH]
    layers = [
        ProgramLayer("a", "QMatMul", LayerUnit.ARRAY, 0, 2, macs=16 * 20),
        ProgramLayer("b", "QMatMul", LayerUnit.ARRAY, 2, 4, macs=16 * 12),
    ]
    times = [
        InstructionTimes(1, 2, 22),  # EX a
        InstructionTimes(3, 22, 30),  # ST a: a ends at 30
        InstructionTimes(4, 4, 20),  # LD b
        InstructionTimes(5, 22, 28),  # EX b (preload), before a's end
        InstructionTimes(6, 27, 34),  # EX b (compute), overlapping its preload
        InstructionTimes(7, 34, 36),  # ST b: b ends at 36
        InstructionTimes(36, 36, 36),  # HALT
    ]
    (a, b) = layer_timings(layers, units, [RunTimes(0, times, 36)])
    assert (a.cycles, a.busy, a.active) == (30, 20, 20)
    assert (b.cycles, b.busy, b.active) == (6, 4, 12)  # [22, 34) unclipped, [30, 34) clipped
    assert b.stall_cycles == 2


def _union_by_cycles(intervals: list[tuple[int, int]]) -> int:
    return len({cycle for start, end in intervals for cycle in range(start, end)})


def test_busy_and_active_are_interval_unions_for_random_runs() -> None:
    # Random overlapping intervals (also empty and nested ones), times as a tuple and as a
    # TimesTable, against unions counted cycle by cycle.
    rng = np.random.default_rng(7)
    units_cycle = [LD, EX, ST]
    count = 60
    units = [units_cycle[int(u)] for u in rng.integers(0, 3, count)] + [Unit.DISPATCH]
    issues = np.sort(rng.integers(0, 200, count))
    completes = issues + rng.integers(0, 40, count)
    total = int(completes.max()) + 5
    times = [InstructionTimes(int(i), int(i), int(c)) for i, c in zip(issues, completes,
                                                                      strict=True)]
    times.append(InstructionTimes(total, total, total))
    layers = [ProgramLayer("a", "QConv", LayerUnit.ARRAY, 0, 25, macs=10),
              ProgramLayer("b", "QAdd", LayerUnit.VECTOR, 25, 35)]
    table = TimesTable([t.accept for t in times], [t.issue for t in times],
                       [t.complete for t in times])
    assert table == tuple(times) and tuple(times) == table
    expected = layer_timings(layers, units, [RunTimes(0, tuple(times), total)])
    assert layer_timings(layers, units, [RunTimes(0, table, total)]) == expected
    start = 0
    for layer, timing in zip(layers, expected, strict=True):
        work = EX if layer.unit is LayerUnit.ARRAY else ST
        own = [(times[i].issue, times[i].complete) for i in range(layer.first, layer.end)
               if units[i] is work]
        end = start + timing.cycles
        assert timing.active == _union_by_cycles(own)
        assert timing.busy == _union_by_cycles([(max(a, start), min(b, end)) for a, b in own])
        start = end
    assert start == total
