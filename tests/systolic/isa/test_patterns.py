"""Address patterns against a brute-force, element-by-element enumeration."""

import itertools

import numpy as np
import pytest

from systolic.isa.patterns import (
    ElementPattern,
    RowPattern,
    Segment,
    beats,
    gather_segments,
    row_segments,
    total_beats,
)


def brute_force_addresses(rows: RowPattern, count: int, elements: ElementPattern, eb: int):
    """Per row, the address of every element, straight from the formulas of docs/isa.md."""
    result = []
    for r in range(count):
        r1, r0 = r // rows.n0, r % rows.n0
        base = rows.ext + r1 * rows.stride1 + r0 * rows.stride0
        row = []
        for e in range(elements.length):
            k = elements.k0 + e
            c = k % elements.run
            j = (k // elements.run) % elements.n_mid
            i = k // (elements.run * elements.n_mid)
            row.append(base + i * elements.stride_outer + j * elements.stride_mid + c * eb)
        result.append(row)
    return result


def random_patterns(rng: np.random.Generator):
    eb = int(rng.choice([1, 2]))
    run = int(rng.integers(1, 6))
    n_mid = int(rng.integers(1, 4))
    # Strides that sometimes make neighbouring runs contiguous, sometimes not.
    stride_mid = int(rng.choice([run * eb, run * eb + int(rng.integers(-20, 20))]))
    contiguous_outer = (n_mid - 1) * stride_mid + run * eb
    stride_outer = int(rng.choice([contiguous_outer, int(rng.integers(-100, 100))]))
    elements = ElementPattern(
        k0=int(rng.integers(0, 12)), length=int(rng.integers(1, 17)), run=run, n_mid=n_mid,
        stride_mid=stride_mid, stride_outer=stride_outer,
    )  # fmt: skip
    rows = RowPattern(
        ext=int(rng.integers(1000, 2000)), n0=int(rng.integers(1, 5)),
        stride0=int(rng.integers(-64, 64)), stride1=int(rng.integers(-300, 300)),
    )  # fmt: skip
    return rows, int(rng.integers(1, 10)), elements, eb


@pytest.mark.parametrize("seed", range(300))
def test_segments_cover_exactly_the_element_addresses(seed: int) -> None:
    rows, count, elements, eb = random_patterns(np.random.default_rng(seed))
    expected = brute_force_addresses(rows, count, elements, eb)
    segments = gather_segments(rows, count, elements, eb)
    per_row = len(segments) // count
    assert per_row * count == len(segments)
    for r in range(count):
        row_segments_ = segments[r * per_row : (r + 1) * per_row]
        expanded = [s.address + t for s in row_segments_ for t in range(0, s.length, eb)]
        assert expanded == expected[r]
        for before, after in itertools.pairwise(row_segments_):  # maximal runs
            assert after.address != before.address + before.length
    low, high = rows.extent(count)
    bases = [row[0] - (elements.offsets(eb)[0]) for row in expected]
    assert (low, high) == (min(bases), max(bases))


@pytest.mark.parametrize("bus", [1, 2, 4, 16, 64])
def test_beats_count_the_bus_words_touched(bus: int) -> None:
    rng = np.random.default_rng(bus)
    segments = [Segment(int(rng.integers(0, 500)), int(rng.integers(1, 100))) for _ in range(50)]
    for segment in segments:
        words = {byte // bus for byte in range(segment.address, segment.address + segment.length)}
        assert beats(segment, bus) == len(words)
    assert total_beats(segments, bus) == sum(beats(s, bus) for s in segments)


def test_row_segments_are_whole_rows_in_order() -> None:
    rows = RowPattern(ext=100, n0=3, stride0=10, stride1=-50)
    assert row_segments(rows, 5, 7) == [
        Segment(100, 7), Segment(110, 7), Segment(120, 7), Segment(50, 7), Segment(60, 7)
    ]  # fmt: skip


def test_conv_im2col_pattern_merges_kernel_width_runs() -> None:
    # 3x3 kernel over an NHWC row of width 10 with 4 channels: each kernel row is 12 bytes.
    c, width = 4, 10
    elements = ElementPattern(0, 36, run=c, n_mid=3, stride_mid=c, stride_outer=width * c)
    assert elements.runs(1) == [Segment(0, 12), Segment(40, 12), Segment(80, 12)]
    chunk = ElementPattern(8, 8, run=c, n_mid=3, stride_mid=c, stride_outer=width * c)
    assert chunk.runs(1) == [Segment(8, 4), Segment(40, 4)]
