"""conv_transpose_geometry: where a transposed convolution's taps land, per axis."""

from systolic.mapper.passes.conv_transpose_geometry import (
    AxisPhase,
    ZeroInsertion,
    axis_phases,
    zero_insertion,
)


def test_kernel_equal_to_stride_is_one_tap_per_phase():
    # H 8, K 2, s 2, d 1, no pads: O 16; phase q takes tap q, reading x[j]
    assert axis_phases(8, 2, 2, 1, 0, 16) == [AxisPhase((0,), 1, (0, 0)),
                                              AxisPhase((1,), 1, (0, 0))]


def test_kernel_four_stride_two_pad_one():
    # o = 2i + k - 1: phase 0 takes k 3 (x[j-1]) and 1 (x[j]); phase 1 k 2 (x[j]), 0 (x[j+1])
    assert axis_phases(5, 4, 2, 1, 1, 10) == [AxisPhase((3, 1), 1, (1, 0)),
                                              AxisPhase((2, 0), 1, (0, 1))]


def test_polyphase_needs_even_phases_with_taps():
    assert axis_phases(5, 3, 2, 1, 0, 11) is None  # 11 outputs: phases of 6 and 5
    assert axis_phases(4, 1, 3, 1, 0, 12) is None  # kernel 1, stride 3: two phases empty


def test_zero_insertion_borders():
    # H 4, K 2, s 2, no pads: x[i] at 1 + 2i of 9 cells; one fill before each cell (phase 1)
    # covers the start, the Conv pads the end by 1
    assert zero_insertion((4,), (2,), (2,), (1,), (0, 0), (8,)) == ZeroInsertion(
        (2,), (1,), (0, 1), (0, 0))
    # pads 3 beyond the reach 2 of a 3-tap kernel: the first cell is cropped
    assert zero_insertion((4,), (3,), (2,), (1,), (3, 3), (3,)) == ZeroInsertion(
        (2,), (0,), (0, 0), (1, 2))
