"""The counters of the cycle model's result."""

from systolic.sim.result import COUNTER_NAMES as RESULT_COUNTERS
from systolic.sim.timing.program_timing import COUNTER_NAMES, busy_cycles


def test_busy_cycles_are_the_union_of_each_units_intervals() -> None:
    # LD: [1, 5) and [3, 8) overlap (7 cycles), then [10, 12): 9; EX: [6, 7); ST: none.
    units = [0, 0, 1, 0]
    issues = [1, 3, 6, 10]
    completes = [5, 8, 7, 12]
    assert busy_cycles(units, issues, completes) == [9, 1, 0]


def test_an_interval_inside_the_previous_one_adds_nothing() -> None:
    assert busy_cycles([2, 2, 2], [0, 2, 3], [10, 4, 12]) == [0, 0, 12]


def test_counter_names_are_the_results() -> None:
    assert COUNTER_NAMES == RESULT_COUNTERS
