"""Ring: spans handed out in turn, remembered until overwritten, clear of spans in use."""

import numpy as np
import pytest

from systolic.mapper.lowering.schedule import Ring


def test_spans_follow_each_other_and_wrap() -> None:
    ring = Ring(10)
    assert [ring.take(4, "a"), ring.take(4, "b"), ring.take(4, "c")] == [0, 4, 0]
    assert ring.find("a") is None  # overwritten by "c"
    assert ring.find("b") == 4
    assert ring.find("c") == 0


def test_a_span_avoids_rows_still_in_use() -> None:
    ring = Ring(12)
    ring.take(4, "a")
    ring.take(4, "b")
    assert ring.take(4, "c", avoid=[(8, 4)]) == 0
    assert ring.take(3, "d", avoid=[(0, 4), (4, 4)]) == 8
    assert ring.fits(6, avoid=[(0, 4), (6, 4)]) is None
    with pytest.raises(AssertionError, match="no span of 6 rows free"):
        ring.take(6, "e", avoid=[(0, 4), (6, 4)])


def test_remembered_spans_are_exactly_those_never_overwritten() -> None:
    rng = np.random.default_rng(4)
    ring = Ring(50)
    rows: list[object] = [None] * 50  # what each row holds, tracked naively
    sizes: dict[int, int] = {}
    for step in range(400):
        size = int(rng.integers(1, 12))
        avoid = [(int(s), int(rng.integers(1, 8))) for s in rng.integers(0, 45, rng.integers(0, 3))]
        start = ring.fits(size, avoid)
        if start is None:
            continue
        assert ring.take(size, step, avoid) == start
        assert not any(s < start + size and start < s + n for s, n in avoid)
        rows[start : start + size] = [step] * size
        sizes[step] = size
        for key in range(max(0, step - 30), step + 1):
            held = [r for r, owner in enumerate(rows) if owner == key]
            expected = held[0] if held and len(held) == sizes.get(key) else None
            assert ring.find(key) == expected
