"""The dispatcher model's unit timing and input checks (its equality with the RTL is tested in
tests/hdl/test_dispatcher.py)."""

import pytest

from systolic.isa.memories import Access, Memory
from systolic.sim.timing.dispatch_model import DispatchModel, Job, UnitModel, UnitTiming


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
    assert seen == [9]
    assert [(t.dispatch, t.issue, t.complete) for t in times] == [(3, 4, 9), (4, 9, 20)]


def test_plain_tuples_are_jobs():
    access = Access(Memory.ACC, 0, 0, True)
    times = DispatchModel().run([(1, [access], 2), (2, [access], 1)])
    assert [(t.dispatch, t.issue, t.complete, t.tag) for t in times] == [
        (0, 1, 3, 0), (1, 4, 5, 1)
    ]


@pytest.mark.parametrize(("jobs", "message"), [
    ([Job(3, [], 1)], r"^instruction 0: unit 3 is not one of the 3 units$"),
    ([Job(0, [], 1), Job(0, [Access(Memory.ACC, 0, 0, True)] * 4, 1)],
     r"^instruction 1: 4 ranges exceed the 3 a footprint holds$"),
    ([Job(0, [], 0)], r"^busy must be an integer of at least 1, not 0$"),
    ([Job(0, [], UnitTiming(busy=1, latency=1)), Job(0, [], lambda issue: -issue)],
     r"^busy must be an integer of at least 1, not -2$"),
])
def test_bad_jobs_are_rejected(jobs, message):
    with pytest.raises(ValueError, match=message):
        DispatchModel().run(jobs)


def test_parameters_are_checked():
    with pytest.raises(ValueError, match=r"^queue_depth must be an integer of at least 1, not 0$"):
        DispatchModel(queue_depth=0)
