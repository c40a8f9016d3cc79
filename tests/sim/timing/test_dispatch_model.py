"""The dispatcher model's unit timing and input checks (its equality with the RTL is tested in
tests/hdl/test_dispatcher.py)."""

import pytest

from systolic.isa.memories import Access, Memory
from systolic.sim.timing.dispatch_model import (
    DispatchModel,
    DispatchState,
    Job,
    UnitModel,
    UnitTiming,
    hazard_stall,
)


def test_unit_completes_in_order_one_per_cycle():
    unit = UnitModel()
    assert unit.ready(0)
    assert unit.issue(0, UnitTiming(busy=1, latency=9)) == 9
    assert not unit.ready(0) and unit.ready(1)
    assert unit.issue(1, UnitTiming(busy=2, latency=1)) == 10  # after the previous completion
    assert not unit.ready(2) and unit.ready(3)
    assert unit.issue(3, 4) == 11
    assert unit.free_from == 7


def test_timing_callback_sees_the_issue_cycle():
    seen: list[int] = []

    def timing(issue: int) -> int:
        seen.append(issue)
        return 2 + issue

    times = DispatchModel().run([Job(0, [], 5, arrival=3), Job(0, [], timing)])
    # Issue three cycles after acceptance at the earliest (the mask is compared and recorded
    # in between).
    assert seen == [11]
    assert [(t.dispatch, t.issue, t.complete) for t in times] == [(3, 6, 11), (4, 11, 24)]


def test_plain_tuples_are_jobs():
    access = Access(Memory.ACC, 0, 0, True)
    times = DispatchModel().run([(1, [access], 2), (2, [access], 1)])
    assert [(t.dispatch, t.issue, t.complete, t.tag) for t in times] == [
        (0, 3, 5, 0), (1, 6, 7, 1)
    ]


@pytest.mark.parametrize(("jobs", "message"), [
    ([Job(3, [], 1)], r"^instruction 0: unit 3 is not one of the 3 units$"),
    ([Job(0, [], 1), Job(0, [Access(Memory.ACC, 0, 0, True)] * 4, 1)],
     r"^instruction 1: 4 ranges exceed the 3 a footprint holds$"),
    ([Job(0, [], 0)], r"^busy must be an integer of at least 1, not 0$"),
    ([Job(0, [], UnitTiming(busy=1, latency=1)), Job(0, [], lambda issue: -issue)],
     r"^busy must be an integer of at least 1, not -4$"),
])
def test_bad_jobs_are_rejected(jobs, message):
    with pytest.raises(ValueError, match=message):
        DispatchModel().run(jobs)


def test_parameters_are_checked():
    with pytest.raises(ValueError, match=r"^queue_depth must be an integer of at least 1, not 0$"):
        DispatchModel(queue_depth=0)


def test_state_rules_one_instruction_at_a_time():
    # Two table entries, queues of one: LD 0 (completes 9), ST 1 (waits for LD 0, completes
    # 12), then LD 2, which finds the table full until LD 0 has completed: accepted in 10.
    completes = [9, 12, 0]
    state = DispatchState(completes, table_entries=2, queue_depth=1, first_accept=1)
    assert state.accept(0) == (1, [])
    assert state.head(0, 1) == 2
    state.record(0, 0, issue=2)
    assert state.accept(2) == (2, [])
    assert state.head(2, 2) == 3
    assert state.mask_clear(2, 2, 3, lambda owner: owner == 0) == (10, [0])
    assert state.mask_clear(2, 2, 3, lambda owner: False) == (5, [])  # compared in 3, kept in 4
    state.record(2, 1, issue=10, stalled=hazard_stall(3, 10, ready_from=5))
    assert state.hazard_stall == [0, 0, 5]
    checkpoint = state.copy()
    assert state.accept(0) == (10, [0, 1])  # the table was full: both decided it
    assert state.dispatch_stall == 7
    assert state.head(0, 10) == 11
    assert state.mask_clear(0, 10, 11, lambda owner: True) == (13, [1])  # (LD 0: same unit)
    assert state.in_flight(10) == [1] and checkpoint.in_flight(10) == [1]
    assert checkpoint.dispatch_stall == 0 and checkpoint.last_accept == 2


def test_hazard_stall_counts_only_cycles_the_unit_was_ready():
    assert hazard_stall(head=3, clear=3, ready_from=0) == 0  # no wait for the mask
    assert hazard_stall(head=3, clear=10, ready_from=0) == 7
    assert hazard_stall(head=3, clear=10, ready_from=6) == 4
    assert hazard_stall(head=3, clear=10, ready_from=12) == 0
