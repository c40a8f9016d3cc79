"""The memory plan: layout rules, halos filled with the consumer's zero point, constants."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.errors import ResourceError, UnsupportedError
from systolic.ir import DataType
from systolic.isa.program import TensorRole
from systolic.mapper.lowering.memory_plan import MemoryPlan, canonical_strides, is_channel_last


def test_activations_of_rank_three_and_four_are_channel_last():
    assert is_channel_last(DataType.UINT8, (1, 3, 8, 8))
    assert is_channel_last(DataType.INT8, (1, 3, 8))
    assert not is_channel_last(DataType.INT8, (1, 3, 8), spatial=False)  # a [B, S, K] operand
    assert not is_channel_last(DataType.INT8, (4, 8))
    assert not is_channel_last(DataType.FLOAT, (1, 3, 8, 8))
    assert canonical_strides(DataType.UINT8, (2, 3, 4, 5)) == ((60, 1, 15, 3), 120, 0)
    assert canonical_strides(DataType.INT8, (2, 3, 7)) == ((21, 1, 3), 42, 0)
    assert canonical_strides(DataType.FLOAT, (2, 3, 4)) == ((48, 16, 4), 96, 0)
    assert canonical_strides(DataType.INT32, ()) == ((), 4, 0)


def test_a_halo_pads_every_spatial_side_and_element_zero_points_inside():
    strides, size, offset = canonical_strides(DataType.INT8, (2, 3, 4, 5), halo=2)
    assert strides == ((4 + 4) * (5 + 4) * 3, 1, (5 + 4) * 3, 3)
    assert size == 2 * strides[0]
    assert offset == 2 * strides[2] + 2 * strides[3]


@pytest.mark.parametrize(("dtype", "fill", "byte"), [(DataType.UINT8, 131, 131),
                                                     (DataType.INT8, -3, 253)])  # fmt: skip
def test_the_halo_is_filled_with_the_zero_point_byte(dtype, fill, byte):  # type: ignore[no-untyped-def]
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4))
    placement = plan.place("x", dtype, (1, 2, 3, 3), TensorRole.ACTIVATION, halo=1, fill=fill)
    (segment,) = plan.segments
    assert segment.data == bytes([byte]) * (5 * 5 * 2)
    assert placement.address == segment.address + 5 * 2 + 2
    assert placement.end <= segment.end


def test_buffers_are_aligned_to_the_bus_and_never_overlap():
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4, bus_bytes=32))
    first = plan.place("a", DataType.INT8, (3, 5), TensorRole.ACTIVATION)
    second = plan.place("b", DataType.FLOAT, (2,), TensorRole.OUTPUT)
    assert (first.address, second.address) == (0, 32)
    assert plan.size == second.end == 40


def test_constants_are_laid_out_by_the_rules_in_the_image():
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4))
    data = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    placement = plan.place_constant("c", DataType.INT8, data)
    assert placement.role is TensorRole.CONSTANT and placement.dtype is DataType.INT8
    memory = np.zeros(plan.size, np.uint8)
    for segment in plan.segments:
        memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
    view = np.ndarray(data.shape, np.int8, memory, placement.address, placement.strides)
    np.testing.assert_array_equal(view, data)


def test_values_that_cannot_be_placed_are_refused():
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4))
    with pytest.raises(UnsupportedError, match=r"^value 's' of type STRING cannot be placed$"):
        plan.place("s", DataType.STRING, (2,), TensorRole.ACTIVATION)
    with pytest.raises(UnsupportedError, match="only channel-last activations can have a halo"):
        plan.place("f", DataType.FLOAT, (1, 2, 3, 3), TensorRole.ACTIVATION, halo=1)


def test_running_out_of_address_space_is_a_resource_error():
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4))
    with pytest.raises(ResourceError, match="32-bit external address space"):
        plan.allocate(1 << 33)


@pytest.mark.parametrize(
    "dtype",
    [DataType.DOUBLE, DataType.FLOAT16, DataType.BOOL, DataType.INT64, DataType.UINT16,
     DataType.UINT32, DataType.UINT64, DataType.INT32],
)  # fmt: skip
def test_host_only_types_are_placed_row_major(dtype):
    plan = MemoryPlan(ArrayConfig(rows=4, cols=4))
    placement = plan.place("v", dtype, (2, 3), TensorRole.INPUT)
    size = dtype.numpy.itemsize
    assert placement.dtype.numpy == dtype.numpy
    assert placement.strides == (3 * size, size)
    assert plan.size >= placement.address + 6 * size
