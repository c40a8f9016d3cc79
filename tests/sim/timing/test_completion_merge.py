"""The completion merge window against hand-worked merges and against the exact merge."""

import random

import numpy as np

from systolic.sim.timing.completion_merge import CompletionMerge, earlier, exact_deliveries


def test_exact_deliveries_by_hand() -> None:
    # Strobes in program order: COMPUTE at 5, PRELOAD at 5, COMPUTE at 5, PRELOAD at 3.
    # Merge order: (3, P, 3), (5, C, 0), (5, C, 2), (5, P, 1): delivered 3, 5, 6, 7.
    cycles = np.array([5, 5, 5, 3], dtype=np.int64)
    keys = np.array([0, 1, 0, 1], dtype=np.int64)
    assert exact_deliveries(cycles, keys).tolist() == [5, 7, 6, 3]


def test_strobes_are_delivered_in_merge_order_one_per_cycle() -> None:
    completes = [0] * 4
    merge = CompletionMerge(completes)
    assert merge.deliver(0, 10, 0) == (10, None)  # a COMPUTE strobes in 10
    assert merge.deliver(2, 10, 0) == (11, None)  # a younger COMPUTE in 10: after it
    assert merge.deliver(3, 9, 1) == (9, None)  # a PRELOAD in 9: before both, nothing moves
    assert merge.deliver(1, 10, 1) == (12, None)  # a PRELOAD in 10: after the COMPUTEs


def test_a_moved_delivery_that_was_used_is_stale() -> None:
    completes = [0] * 3
    merge = CompletionMerge(completes)
    completes[0], _ = merge.deliver(0, 10, 1)  # a PRELOAD strobes in 10
    merge.use(0, reader=2)  # instruction 2 waited for it
    merge.use(1, reader=2)  # (not in the window: not recorded)
    assert merge.readers == {0: 2}
    delivered, stale = merge.deliver(1, 10, 0)  # a COMPUTE in 10 precedes it: it moves to 11
    assert delivered == 10
    assert stale == (2, 10) and completes[0] == 11


def test_announced_strobes_write_no_completion_until_timed() -> None:
    completes = [0] * 3
    merge = CompletionMerge(completes)
    assert merge.announce(1, 7, 0) is None
    assert completes == [0, 0, 0]
    checkpoint = merge.copy()
    delivered, stale = merge.deliver(0, 7, 1)  # the announced COMPUTE goes first
    assert (delivered, stale) == (8, None)
    assert merge.deliver(1, 7, 0) == (7, None)  # its strobe is as announced
    assert merge.deliver(2, 6, 0) == (6, None)
    assert [s.index for s in checkpoint.window] == [1]  # (the copy is independent)
    completes[:] = [0, 0, 0]
    merge.write_back()
    assert completes == [8, 7, 6]


def test_closed_strobes_leave_the_window() -> None:
    merge = CompletionMerge([0] * 3)
    merge.deliver(0, 4, 0)
    merge.use(0, reader=1)
    merge.close_before(5)
    assert merge.window == [] and merge.readers == {}
    assert merge.deliver(1, 4, 0) == (5, None)  # still after the dropped delivery


def test_the_window_equals_the_exact_merge_on_random_strobes() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 30)
        cycles = [rng.randint(0, 20) for _ in range(n)]
        keys = [rng.randint(0, 1) for _ in range(n)]
        completes = [0] * n
        merge = CompletionMerge(completes)
        for i in range(n):
            completes[i], _ = merge.deliver(i, cycles[i], keys[i])
        expected = exact_deliveries(np.array(cycles, dtype=np.int64),
                                    np.array(keys, dtype=np.int64))
        assert completes == expected.tolist()


def test_earlier_keeps_the_first_reader_on_a_tie() -> None:
    assert earlier(None, (3, 9)) == (3, 9)
    assert earlier((3, 9), None) == (3, 9)
    assert earlier((3, 9), (3, 5)) == (3, 9)
    assert earlier((3, 9), (2, 12)) == (2, 12)
